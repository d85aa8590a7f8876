"""Which files a config may pull in: ``source`` in a launch script, a ``--deepspeed_config`` JSON.

A script that says ``source /home/alice/.secrets/env.sh`` or ``--deepspeed_config
/etc/cluster/ds.json`` would have trainlint read a file outside what is being linted, and quote
its values in findings (so in CI logs and SARIF). Such files are followed only inside the
script's project: the git checkout that holds it (the nearest parent with ``.git``), else the
directory of its project config (``.trainlint.toml``, ``trainlint.toml``, a ``pyproject.toml``
with ``[tool.trainlint]``), else the script's own directory; plus the directories the project
config lists in ``source-roots = [...]`` (relative to the config). A file outside is not read: the
values it would set stay unknown, and one TL012 says where it is and how to allow it.

The project config is the one the command uses: ``--config FILE`` names it (its ``source-roots``
apply, relative to it), ``--isolated`` means none (no ``source-roots``; the project is the git
checkout, else the script's directory); without either, the one found above the script.
:func:`configure` records the command line's choice (the CLI calls it before every command; the
language server, which has neither option, leaves it at "found above the script").
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


_FOUND_ABOVE = ("found", None)
_scope: tuple[str, str | None] = _FOUND_ABOVE


def configure(explicit: str | None, isolated: bool) -> None:
    """Which project config gives ``source-roots``: ``isolated`` none, ``explicit`` that file,
    else the one found above each script."""
    global _scope
    forget()  # a config may have changed since the last command in this process
    if isolated:
        _scope = ("isolated", None)
    elif explicit:
        try:
            _scope = ("explicit", str(Path(explicit).resolve()))
        except (OSError, RuntimeError, ValueError):
            _scope = ("explicit", explicit)
    else:
        _scope = _FOUND_ABOVE


def forget() -> None:
    """Drop the cached roots (a project config changed on disk)."""
    _roots_for.cache_clear()


def roots_for(script: str) -> tuple[str, ...]:
    """The directories files pulled in by ``script`` must lie in (resolved)."""
    return _roots_for(script, _scope)


@lru_cache(maxsize=256)
def _roots_for(script: str, scope: tuple[str, str | None]) -> tuple[str, ...]:
    try:
        start = Path(script).resolve().parent
    except (OSError, RuntimeError, ValueError):
        return ()
    roots: list[Path] = []
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            roots.append(folder)
            break
    mode, explicit = scope
    config = None if mode == "isolated" else Path(explicit) if mode == "explicit" and explicit else _project_config(start)
    if config is not None:
        if not roots:
            roots.append(config.parent)
        roots.extend(_extra_roots(config))
    if not roots:
        roots.append(start)
    return tuple(dict.fromkeys(str(r) for r in roots))


def _project_config(start: Path) -> Path | None:
    try:
        from trainlint.config import find_config

        return find_config(start)
    except Exception:  # noqa: BLE001 - an unreadable config: no extra roots
        return None


def _extra_roots(config: Path) -> list[Path]:
    try:
        from trainlint.config import load_config

        project = load_config(config)
    except Exception:  # noqa: BLE001 - the config's own errors are reported by the command
        return []
    out = []
    for entry in getattr(project, "source_roots", []) or []:
        try:
            out.append((config.parent / os.path.expanduser(entry)).resolve())
        except (OSError, RuntimeError, ValueError):
            continue
    return out


def contained(path: str, roots: tuple[str, ...]) -> bool:
    """Whether ``path`` (symlinks resolved) lies in one of ``roots``."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def outside_message(what: str, path: str, roots: tuple[str, ...]) -> str:
    where = ", ".join(roots) or "the project"
    return (f"{what} `{path}` is outside the project ({where}); it is not read, so the values it would set "
            "are unknown (list its directory in `source-roots` in the project config to read it)")
