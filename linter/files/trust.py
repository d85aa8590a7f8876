"""When code named by a project config may run: the trust model for local plugins.

A project config (``.trainlint.toml``, ``trainlint.toml``, ``[tool.trainlint]`` in
``pyproject.toml``) can name local plugins (``plugins = ["tools/rules.py"]``): Python that trainlint
would import, i.e. run. A config comes with whatever is being linted (a pull request from a fork,
a cloned repository, a file planted in a world-writable parent such as /tmp), so its plugins load
only when all three hold:

1. the config lies at or below the current directory (for the language server: inside a
   workspace folder), so a config found by walking up from the linted files into a parent the
   user did not choose is never used for code;
2. the config file belongs to the user running trainlint (not planted by someone else);
3. the user trusts it explicitly: ``--allow-plugins``, ``TRAINLINT_ALLOW_PLUGINS=1``, or the
   project's directory (or a parent) listed in ``$XDG_CONFIG_HOME/trainlint/trusted-projects``
   (``~/.config/...``; one absolute directory a line, ``#`` comments; other lines are ignored), the
   user's own file. The language
   server also needs the editor's workspace trust (``workspaceTrusted: false`` in its
   initialization options refuses plugins whatever else says yes).

Otherwise the plugins are not imported and one TL015 warning, at the config, says so and how to
allow them. Installed plugins (entry points of pip-installed distributions) are the user's own
choice and always load; so do trainlint's built-ins.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

ENV_VAR = "TRAINLINT_ALLOW_PLUGINS"
TRUST_FILE = "trusted-projects"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    """Why not (for the TL015 message)."""


def trust_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "trainlint" / TRUST_FILE


def _listed(root: Path) -> bool:
    path = trust_file()
    from trainlint.files.sources import read_bounded

    try:
        lines = read_bounded(path, 1024 * 1024).decode("utf-8", errors="replace").splitlines()
    except (OSError, ValueError):
        return False
    for line in lines:
        trusted = _entry(line)
        if trusted is not None and (root == trusted or trusted in root.parents):
            return True
    return False


def _entry(line: str) -> Path | None:
    """The directory a line of the trust list names: an absolute path (``~`` expanded), never the
    filesystem root. Anything else is no entry: a relative line would be resolved against whatever
    directory trainlint runs in, and ``..`` in a stray line (one a tool wrote there by mistake) could
    climb to ``/`` and trust every repository."""
    entry = line.split("#", 1)[0].strip()
    if not entry:
        return None
    expanded = os.path.expanduser(entry)
    if not os.path.isabs(expanded) or any(part == ".." for part in Path(expanded).parts):
        return None
    try:
        trusted = Path(expanded).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if trusted == Path(trusted.anchor):
        return None
    return trusted


def _env_allows() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def decide(config: str | os.PathLike[str], *, allow_flag: bool = False, roots: Iterable[str | os.PathLike[str]] | None = None,
           editor_trusted: bool | None = None) -> Decision:
    """May the local plugins named by ``config`` be imported? ``roots``: the directories a config
    must be at or below (default: the current directory)."""
    try:
        path = Path(config).resolve()
        info = path.stat()
    except (OSError, RuntimeError, ValueError) as exc:
        return Decision(False, f"the config cannot be checked ({exc})")
    if editor_trusted is False:
        return Decision(False, "the editor has not trusted this workspace")
    bases = []
    for root in (roots if roots is not None else [os.getcwd()]):
        try:
            bases.append(Path(root).resolve())
        except (OSError, RuntimeError, ValueError):
            continue
    if not bases:
        return Decision(False, "no workspace folder is open (only a config inside one may be trusted)")
    if not any(path.parent == base or base in path.parents for base in bases):
        where = ", ".join(str(b) for b in bases)
        return Decision(False, f"the config is not at or below {where}")
    geteuid = getattr(os, "geteuid", None)
    if geteuid is not None and info.st_uid != geteuid():
        return Decision(False, "the config belongs to another user")
    if allow_flag or _env_allows() or _listed(path.parent):
        return Decision(True)
    return Decision(False, "trust was not given")


def how_to_allow(config: str | os.PathLike[str]) -> str:
    root = Path(config).resolve().parent
    return (f"to run them, pass --allow-plugins, set {ENV_VAR}=1, or add {root} to {trust_file()} "
            "(the config must be yours and at or below the current directory)")
