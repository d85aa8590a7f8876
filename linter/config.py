"""The project config: ``[tool.trainlint]`` in pyproject.toml, or a ``.trainlint.toml``.

Found by walking up from the first checked path (or the working directory). CLI flags win
over the file. Paths in the file are relative to the file's directory.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


class ConfigError(Exception):
    """A project config trainlint cannot use; the CLI exits 2 with this message."""


@dataclass
class ProjectConfig:
    path: str | None = None
    runs: list[list[str]] = field(default_factory=list)
    """Multi-file runs: each a list of files merged in order (NeoX takes several YAMLs)."""
    environment: dict[str, str] = field(default_factory=dict)
    """Values for shell variables of launch scripts (``TP = "4"``), for static resolution."""
    raw: dict[str, Any] = field(default_factory=dict)


def find_config(start: Path) -> Path | None:
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for folder in (directory, *directory.parents):
        dotfile = folder / ".trainlint.toml"
        if dotfile.is_file():
            return dotfile
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if "trainlint" in data.get("tool", {}):
                return pyproject
    return None


def load_config(path: Path) -> ProjectConfig:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    section = data.get("tool", {}).get("trainlint", {}) if path.name == "pyproject.toml" else data
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.trainlint] must be a table")
    base = path.parent
    runs = section.get("runs", [])
    if not isinstance(runs, list) or not all(isinstance(r, list) and r and all(isinstance(p, str) for p in r) for r in runs):
        raise ConfigError(f"{path}: `runs` must be a list of lists of file paths, e.g. runs = [[\"configs/125M.yml\", \"configs/local_setup.yml\"]]")
    environment = section.get("env", {})
    if not isinstance(environment, dict) or not all(isinstance(v, (str, int)) for v in environment.values()):
        raise ConfigError(f"{path}: `env` must be a table of strings, e.g. env = {{ TP = \"4\" }}")
    return ProjectConfig(
        path=str(path),
        runs=[[str(base / p) for p in run] for run in runs],
        environment={str(k): str(v) for k, v in environment.items()},
        raw=section,
    )


def discover(start: Path, explicit: str | None = None, isolated: bool = False) -> ProjectConfig:
    if isolated:
        return ProjectConfig()
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        return load_config(p)
    found = find_config(start)
    return load_config(found) if found else ProjectConfig()
