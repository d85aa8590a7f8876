"""Where a project config is and what its file holds, before it is interpreted.

The lookup (:func:`find_config`: the nearest ``.trainlint.toml``, ``trainlint.toml`` or pyproject.toml
with ``[tool.trainlint]`` above a folder), the bounded read of its TOML (:func:`read_section`) and
:class:`ConfigError`. :mod:`trainlint.project.config` interprets the settings for a session; the lower layers
that need only where a project's config lies or one of its path lists (path confinement's
``source-roots``, a framework checkout's project root) ask this module, so they never import the
engine's config reader.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


class _LazyTomllib:
    """``tomllib`` (``tomli`` before 3.11), imported on first use: ``--isolated`` runs and
    folders without a config file never need it, and it costs a few ms of start-up."""

    def __getattr__(self, name: str) -> Any:
        if sys.version_info >= (3, 11):
            import tomllib as module
        else:  # pragma: no cover - exercised on 3.10 only
            import tomli as module
        return getattr(module, name)


tomllib = _LazyTomllib()


class ConfigError(Exception):
    """A project config trainlint cannot use; the CLI exits 2 with this message.

    The message quotes keys and values of a file someone else may have written: every control,
    bidi and line-break character in it is shown as an escape (a key holding ``\n::error ...``
    must not forge a line of its own in a CI log, an escape sequence must not reach a terminal,
    and the language server shows the same text)."""

    def __init__(self, message: str) -> None:
        from trainlint.core.escape import printable

        super().__init__(printable(str(message)))


CONFIG_FILE_NAMES = (".trainlint.toml", "trainlint.toml")
"""The dedicated config files, in the order they win within one folder (then pyproject.toml)."""


def find_config(start: Path) -> Path | None:
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for folder in (directory, *directory.parents):
        found = config_in(folder)
        if found is not None:
            return found
    return None


def config_in(folder: Path) -> Path | None:
    """The project config in ``folder`` itself (not above it), or None."""
    for name in CONFIG_FILE_NAMES:
        dedicated = folder / name
        if dedicated.is_file():
            return dedicated
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(read_config_text(pyproject))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ConfigError):
            return None
        if tool_table(data) is not None:
            return pyproject
    return None


def tool_table(data: Any) -> Any:
    """``[tool.trainlint]`` of a pyproject.toml, or None: any other project's pyproject.toml (``tool
    = 1``, no ``tool``) on the way up is not trainlint's and is passed by."""
    tool = data.get("tool") if isinstance(data, dict) else None
    return tool.get("trainlint") if isinstance(tool, dict) else None


MAX_CONFIG_BYTES = 1024 * 1024


def read_config_text(path: Path) -> str:
    """A project config's text, within a size limit (a sparse 2 GB pyproject.toml is not read)."""
    from trainlint.files.sources import ReadRefused, read_bounded

    try:
        return read_bounded(path, MAX_CONFIG_BYTES).decode("utf-8")
    except ReadRefused as refused:
        raise ConfigError(f"{path}: {refused}; not read") from None


def read_section(path: Path) -> dict[str, Any]:
    """The settings of the project config ``path``: its ``[tool.trainlint]`` table (a pyproject.toml),
    else the whole file. Raises ConfigError when it cannot be read or is not a table."""
    try:
        data = tomllib.loads(read_config_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = tool_table(data) if path.name == "pyproject.toml" else data
    section = {} if table is None else table
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.trainlint] must be a table")
    return section


def string_list(section: dict, key: str, path: Path) -> list[str]:
    """``key`` of a config section: a list of strings (empty when absent)."""
    value = section.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: `{key}` must be a list of strings")
    return value
