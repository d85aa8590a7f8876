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

One containment rule covers every path a repository's own config names (``source-roots``,
``runs``, ``model``, ``baseline``, a ``framework`` checkout): it must lie inside the config's
project root (:func:`project_root`: the git checkout holding the config, else its folder),
symlinks resolved, unless the user trusts that config: it is the one named with ``--config``
(the user's own choice), or :mod:`trainlint.files.trust` allows it (``--allow-plugins``,
``TRAINLINT_ALLOW_PLUGINS=1``, the trusted-projects list; in the editor, inside the workspace
folder and with the editor's workspace trust). Otherwise a ``source-roots`` entry outside is left
out (the files there get the TL012 above) and any other such path is a config error (exit 2),
never read. Paths the user gives on the command line (``--model``, ``--baseline``, ``--run``) may
point anywhere; every file is still read through :func:`trainlint.files.sources.read_bounded`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any


_FOUND_ABOVE = ("found", None)
_scope: tuple[str, str | None] = _FOUND_ABOVE


@dataclass(frozen=True)
class TrustGiven:
    """What the user said about trusting a project config (see :mod:`trainlint.files.trust`)."""

    allow_flag: bool = False
    roots: tuple[str, ...] | None = None
    """The folders a trusted config must be at or below (None: the current directory)."""
    editor_trusted: bool | None = None


_trust = TrustGiven()


def configure(explicit: str | None, isolated: bool, trust_given: TrustGiven | None = None) -> None:
    """Which project config gives ``source-roots``: ``isolated`` none, ``explicit`` that file,
    else the one found above each script; and what the user trusts."""
    global _scope, _trust
    _trust = trust_given or TrustGiven()
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


def configure_trust(trust_given: TrustGiven) -> None:
    """What the user trusts (the language server: its workspace folder and the editor's trust)."""
    global _trust
    if trust_given != _trust:
        _trust = trust_given
        forget()


def roots_for(script: str) -> tuple[str, ...]:
    """The directories files pulled in by ``script`` must lie in (resolved)."""
    return _roots_for(script, _scope, _trust)


@lru_cache(maxsize=256)
def _roots_for(script: str, scope: tuple[str, str | None], trust_given: TrustGiven) -> tuple[str, ...]:
    from trainlint.frameworks.locate import git_root, real_path

    try:
        # resolved, and the git work tree found, through locate's remembered folders (the scripts of
        # one folder share them)
        start = Path(os.path.dirname(real_path(script)))
    except (OSError, RuntimeError, ValueError):
        return ()
    roots: list[Path] = []
    found = git_root(start)
    if found is not None:
        roots.append(found)
    mode, explicit = scope
    config = None if mode == "isolated" else Path(explicit) if mode == "explicit" and explicit else _project_config(start)
    if config is not None:
        if not roots:
            roots.append(config.parent)
        roots.extend(_extra_roots(config, trusted(config, explicit=mode == "explicit", trust_given=trust_given)))
    if not roots:
        roots.append(start)
    return tuple(dict.fromkeys(str(r) for r in roots))


def _project_config(start: Path) -> Path | None:
    """``find_config(start)``: the folder found through locate's remembered walk, then its config."""
    try:
        from trainlint.files.config_files import config_in
        from trainlint.frameworks.locate import config_root

        folder = config_root(start)
        return config_in(folder) if folder is not None else None
    except Exception:  # noqa: BLE001 - an unreadable config: no extra roots
        return None


def _extra_roots(config: Path, config_trusted: bool) -> list[Path]:
    """The config's ``source-roots``: those outside its project root only when it is trusted."""
    try:
        from trainlint.files.config_files import read_section, string_list

        # only the key this needs, read as trainlint.project.config reads it (the same functions): the rest
        # of the config is the session's to interpret, a layer above the adapters that ask this
        entries = string_list(read_section(config), "source-roots", config)
    except Exception:  # noqa: BLE001 - the config's own errors are reported by the command
        return []
    root = str(project_root(config))
    out = []
    for entry in entries:
        try:
            folder = (config.parent / os.path.expanduser(entry)).resolve()
        except (OSError, RuntimeError, ValueError):
            continue
        if config_trusted or contained(str(folder), (root,)):
            out.append(folder)
    return out


# ------------------------------------------------------------------ the paths a project config names


def checkout_of(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` (resolved) holding ``.git``, or None."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_root(config: str | os.PathLike[str]) -> Path:
    """Where the paths a project config names must lie: the git checkout that holds the config,
    else the config's own folder (resolved)."""
    folder = Path(config).resolve().parent
    return checkout_of(folder) or folder


def trusted(config: str | os.PathLike[str], *, explicit: bool = False, trust_given: TrustGiven | None = None) -> bool:
    """Whether the user trusts ``config`` to name paths outside its project: it is the ``--config``
    the user named, or :func:`trainlint.files.trust.decide` allows it."""
    return _why_not_trusted(config, explicit, trust_given) is None


def _why_not_trusted(config: str | os.PathLike[str], explicit: bool, trust_given: TrustGiven | None) -> str | None:
    if explicit:
        return None
    given = trust_given if trust_given is not None else _trust
    from trainlint.files import trust

    decision = trust.decide(config, allow_flag=given.allow_flag, roots=given.roots, editor_trusted=given.editor_trusted)
    return None if decision.allowed else decision.reason


def confine_project(project: Any, *, explicit: bool = False, trust_given: TrustGiven | None = None) -> None:
    """Refuse a project config that names a path outside its project root (``runs``, ``model``,
    ``baseline``, a ``framework`` checkout) unless the user trusts it. Raises ConfigError (exit 2),
    before anything there is read. ``source-roots`` entries outside are left out instead
    (:func:`roots_for`): the files they would open get TL012."""
    config = getattr(project, "path", None)
    if not config:
        return
    root = str(project_root(config))
    base = Path(config).parent
    named: list[tuple[str, str]] = [("runs", member) for run in project.runs for member in run]
    if isinstance(project.baseline, str) and project.baseline:
        named.append(("baseline", str(base / project.baseline)))
    model = project.estimation.model
    if isinstance(model, str) and model:
        candidate = base / os.path.expanduser(model)
        if candidate.suffix == ".json" or os.path.lexists(candidate):
            named.append(("model", str(candidate)))
    for family, kind, where in getattr(project.framework_settings, "entries", ()) or ():
        if kind in ("path", "source"):  # a repository's framework-source too (--framework-source is applied after this)
            named.append((f"framework.{family}" if kind == "path" else "framework-source", where))
    outside = [(key, path) for key, path in named if not contained(path, (root,))]
    if not outside:
        return
    reason = _why_not_trusted(config, explicit, trust_given)
    if reason is None:
        return
    from trainlint.files.config_files import ConfigError

    key, path = outside[0]
    raise ConfigError(f"{config}: `{key}` names {path}, outside the project ({root}, symlinks resolved); a "
                      f"repository's config may only name files inside it, unless you trust it ({reason}): pass "
                      "--allow-plugins, set TRAINLINT_ALLOW_PLUGINS=1, or list the project in the trusted-projects "
                      "file, with the config at or below the current directory (docs/security.md)")


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
            "are unknown (list its directory in `source-roots` in the project config to read it; an entry "
            "outside the checkout counts only for a config you trust, see docs/security.md)")
