"""Finding the framework a config targets, in order:

1. what the user states: ``--framework-source PATH``, ``framework-source = "PATH"`` in the project
   config (relative to the project root), or ``framework = {megatron = "...", ...}`` naming a shipped
   release (``core_v0.8.0``, ``v2.0``, ``0.14.0``) or a path to a checkout;
2. the framework's source *inside the project*: the nearest folder at or above the config, up to the
   project root (:func:`project_root`: the git work tree, else the folder of the project config, else
   the current directory when it holds the config, else the config's own folder), that holds the
   family's argument module (``megatron/training/arguments.py``, ``megatron/arguments.py``,
   ``megatron/neox_arguments/neox_args.py``, ``deepspeed/runtime/config.py``), or such a checkout as
   a git submodule or a vendored folder of one of those folders. Never a sibling or a parent outside
   the root: a checkout of a fork next to the project is not the project's framework (issue 28);
3. the package installed in the active Python environment (located, never imported);
4. else upstream as trainlint's built-in table has it (:attr:`TargetOrigin.ASSUMED`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping

from trainlint.frameworks.families import families
from trainlint.frameworks.markers import MARKERS, marker
from trainlint.frameworks.stat_paths import path_exists, path_is_file
from trainlint.frameworks.target import FrameworkTarget, TargetOrigin

# frameworks.catalog (catalogs, the shipped index, the disk cache) is imported where a checkout or a
# configured release is read: a config with neither (the usual case) never needs it.
if TYPE_CHECKING:
    from trainlint.core.diagnostics import Diagnostic
    from trainlint.frameworks.catalog import ArgCatalog
    from trainlint.core.positions import Span

MAX_LEVELS = 40


def _variant(family: str) -> str:
    """The upstream variant's name of ``family`` (its framework's ``title``)."""
    from trainlint.frameworks.families import family as framework_of_family

    found = framework_of_family(family)
    return found.title if found is not None else family


_GENERIC_VENDOR_HINTS = ("third_party", "third-party", "3rdparty", "external", "vendor")


def _vendor_hints() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(folder-name prefixes, substrings) of a folder that may hold a vendored framework: the
    families' names (also inside a name) and the usual vendoring folders."""
    names = families()
    return names + _GENERIC_VENDOR_HINTS, names


class FrameworkSettingError(ValueError):
    """A ``framework`` entry of the project config that names nothing trainlint can read."""


@dataclass(frozen=True)
class FrameworkSettings:
    """A project config's ``framework`` table, checked (:func:`configure`): per family, a shipped
    release (``("version", "core_v0.8.0")``) or a checkout (``("path", "/abs/Megatron-LM")``). Each
    session has its own, passed down to the adapters in their ``LoadContext``: two projects
    served by one process (the language server) each resolve against their own."""

    entries: tuple[tuple[str, str, str], ...] = ()
    """(family, "path" | "source" | "version", value): "source" is a checkout given by
    ``--framework-source`` / ``framework-source``, "path" one given in the ``framework`` table."""

    def get(self, family: str) -> tuple[str, str] | None:
        return next(((kind, value) for f, kind, value in self.entries if f == family), None)


NO_SETTINGS = FrameworkSettings()

MEMO_FOLDERS = 1024
"""Folders each memo below remembers before it starts again: a check walks its folders in order, so
the folders a config shares answers with are the recent ones, and a check of 10,000 files in 5,000
folders holds no more than one of 1,000 (issue 33: memory flat in the number of files)."""

_memo: dict[tuple[FrameworkSettings, str, str, str], FrameworkTarget] = {}
"""(settings, family, folder) -> the target: keyed by the settings, so sessions never share a wrong one."""
_reported: set[str] = set()
_beside: dict[tuple[str, str, str], Path | None] = {}
"""(family, folder, project root) -> the nearest checkout at or above it inside the root: a fork's
configs sit in many folders."""
_checkouts: dict[tuple[str, str], tuple[tuple[int, int], ArgCatalog | None]] = {}
"""(family, root) -> (the argument module's (mtime, size), its catalog): a checkout is read (or
taken from the disk cache, which hashes every file) once per process, not once per config folder;
the stamp lets a long-running language server see an edited source."""


def clear_caches() -> None:
    """Forget the targets and checkouts found so far (a project config was read again: a long-running
    language server then sees a checkout added or moved since)."""
    _memo.clear()
    _beside.clear()
    _checkouts.clear()
    _roots.clear()
    _git_roots.clear()
    _config_roots.clear()
    _real.clear()
    _installed.clear()


def configure(settings: Mapping[str, str] | None, base: str | None = None) -> FrameworkSettings:
    """The project config's ``framework`` table (paths relative to ``base``), checked. Raises
    :class:`FrameworkSettingError` for an entry that names no checkout and no shipped release."""
    entries: list[tuple[str, str, str]] = []
    for family, value in (settings or {}).items():
        if family not in families():
            raise FrameworkSettingError(f"`framework.{family}`: unknown framework; expected one of {', '.join(families())}")
        if not isinstance(value, str) or not value.strip():
            raise FrameworkSettingError(f"`framework.{family}` must be a string: a release or a path to a checkout")
        candidate = Path(os.path.expanduser(value))
        if not candidate.is_absolute() and base:
            candidate = Path(base) / candidate
        looks_like_path = any(c in value for c in "/\\") or value.startswith((".", "~")) or candidate.is_dir()
        if looks_like_path:
            if not candidate.is_dir() or marker(candidate, family) is None:
                wanted = " or ".join(MARKERS[family])
                raise FrameworkSettingError(f"`framework.{family}` = \"{value}\": no {wanted} under {candidate}")
            entries.append((family, "path", str(candidate.resolve())))
        else:
            from trainlint.frameworks.catalog import find_shipped, shipped_index

            if find_shipped(family, value) is None:
                known = ", ".join(e.version if e.variant == _variant(family) else f"{e.variant} ({e.version})"
                                  for e in shipped_index() if e.family == family)
                raise FrameworkSettingError(f"`framework.{family}` = \"{value}\": trainlint ships no catalog of that "
                                            f"release (it has: {known}); give a path to a checkout instead")
            entries.append((family, "version", value))
    return FrameworkSettings(tuple(entries)) if entries else NO_SETTINGS


def with_source(settings: FrameworkSettings | None, value: str, base: str | None) -> FrameworkSettings:
    """``settings`` with the checkout ``value`` (``--framework-source PATH`` or the project config's
    ``framework-source``, relative to ``base``) as the target of every family whose argument module
    it holds, over what ``settings`` says for that family. Raises :class:`FrameworkSettingError`
    when it holds none."""
    candidate = Path(os.path.expanduser(value))
    if not candidate.is_absolute() and base:
        candidate = Path(base) / candidate
    found = [f for f in families() if candidate.is_dir() and marker(candidate, f) is not None]
    if not found:
        wanted = ", ".join(m for f in families() for m in MARKERS[f])
        raise FrameworkSettingError(f"framework source \"{value}\": no {wanted} under {candidate}")
    kept = [e for e in (settings or NO_SETTINGS).entries if e[0] not in found]
    resolved = str(candidate.resolve())
    return FrameworkSettings(tuple(kept + [(f, "source", resolved) for f in found]))


def resolve(family: str, config_path: str | None, settings: FrameworkSettings | None = None) -> FrameworkTarget:
    """The target of a config file of ``family`` at ``config_path`` under the session's project
    ``settings`` (None: no project config says; memoised per settings and folder)."""
    settings = settings or NO_SETTINGS
    folder = _folder(config_path)
    key = (settings, family, folder, os.getcwd())
    hit = _memo.get(key)
    if hit is not None:
        return replace(hit, read_seconds=None) if hit.read_seconds is not None else hit
    target = _resolve(family, folder, settings)
    if len(_memo) >= MEMO_FOLDERS:
        _memo.clear()
    _memo[key] = target
    return target


def _folder(config_path: str | None) -> str:
    if not config_path or config_path.startswith("<"):
        return os.getcwd()
    try:
        return os.path.dirname(real_path(config_path))
    except OSError:
        return os.getcwd()


def real_path(path: str) -> str:
    """``str(Path(path).resolve())``, one component at a time, each resolved prefix remembered: a
    config's folder is resolved with one ``lstat`` (its own name) once its parent is known, instead of
    one per component of the whole path (``os.path.realpath``), so the configs of sibling folders walk
    the shared part once. A link is resolved the long way (its target may lie anywhere). ``..`` takes
    the parent of what precedes it, resolved, as realpath does. As :data:`_roots`, this assumes the
    folders do not change while trainlint runs; :func:`clear_caches` forgets them."""
    if os.name != "posix" or "\0" in path:
        return str(Path(path).resolve())
    if not path.startswith("/"):
        path = os.getcwd() + "/" + path
    real = "/"
    key = ""
    memo = _real
    for name in path.split("/"):
        if not name or name == ".":
            continue
        key += "/" + name
        hit = memo.get(key)
        if hit is not None:
            real = hit
            continue
        if name == "..":
            real = os.path.dirname(real)
        else:
            candidate = real + name if real == "/" else real + "/" + name
            real = str(Path(candidate).resolve()) if os.path.islink(candidate) else candidate
        if len(memo) >= 4 * MEMO_FOLDERS:
            memo.clear()
        memo[key] = real
    return real


_real: dict[str, str] = {}
"""Absolute path as written (``.`` and empty components left out) -> the path it resolves to."""


def _resolve(family: str, folder: str, settings: FrameworkSettings) -> FrameworkTarget:
    setting = settings.get(family)
    if setting is not None:
        kind, value = setting
        if kind == "version":
            from trainlint.frameworks.catalog import find_shipped, load_shipped

            entry = find_shipped(family, value)
            assert entry is not None  # checked by configure()
            return FrameworkTarget(family, entry.variant, entry.version, TargetOrigin.PROJECT_CONFIG,
                                   commit=entry.commit, catalog=load_shipped(entry.file),
                                   note=f"framework.{family} = \"{value}\" in the project config")
        how = "--framework-source or framework-source" if kind == "source" else f"framework.{family} in the project config"
        return _from_checkout(family, Path(value), TargetOrigin.PROJECT_CONFIG, how)
    root = find_source_beside(family, Path(folder))
    if root is not None:
        return _from_checkout(family, root, TargetOrigin.SOURCE_BESIDE,
                              f"{marker(root, family)} found in the project")
    pin = _pinned_target(family, Path(folder))
    if pin is not None:
        return pin
    installed = find_installed(family)
    if installed is not None:
        return _from_checkout(family, installed, TargetOrigin.INSTALLED, "the installed package")
    return assumed(family)


def _pin_names(family: str) -> tuple[str, ...]:
    from trainlint.frameworks.families import family as framework_of_family

    found = framework_of_family(family)
    return found.pin_names if found is not None else (family,)


def _pinned_target(family: str, folder: Path) -> FrameworkTarget | None:
    """The release a project's framework submodule is pinned at when its source is not checked out
    (:mod:`.submodule`): that release's shipped catalog when trainlint ships the commit; else the
    assumed upstream, its note naming the pinned commit (the file's statement then says it)."""
    root = project_root(folder)
    if not path_is_file(os.path.join(str(root), ".gitmodules")):
        return None
    from trainlint.frameworks.submodule import pinned

    pin = pinned(root, _pin_names(family))
    if pin is None:
        return None
    path, commit = pin
    from trainlint.frameworks.catalog import load_shipped, shipped_index

    entry = next((e for e in shipped_index() if e.family == family and e.commit == commit), None)
    where = f"{path} pinned at {commit[:10]} (a git submodule, not checked out)"
    if entry is None:
        base = assumed(family)
        return replace(base, note=f"{where}, a commit trainlint ships no catalog of")
    return FrameworkTarget(family, entry.variant, entry.version, TargetOrigin.SOURCE_BESIDE, commit=entry.commit,
                           catalog=load_shipped(entry.file), note=where)


def fork_beside(family: str, config_path: str | None) -> FrameworkTarget | None:
    """The framework source beside the config, read: asked when the project config names another
    target (a fork's configs checked against an upstream release), so that findings on the fork's
    own names say which fork defines them. None when no source is beside the config."""
    root = find_source_beside(family, Path(_folder(config_path)))
    if root is None:
        return None
    target = _from_checkout(family, root, TargetOrigin.SOURCE_BESIDE, f"{marker(root, family)} found in the project")
    return target if target.catalog is not None else None


def assumed(family: str) -> FrameworkTarget:
    """Nothing says which version: trainlint's built-in table (upstream at its commit)."""
    from trainlint.frameworks.families import family as framework_of_family

    commit = None
    try:
        owner = framework_of_family(family)
        schema = owner.key_catalog().schema() if owner is not None else None  # the framework's one key catalog
        sources = (schema or {}).get("x-source") or []
        first = sources[0] if isinstance(sources, list) and sources else sources
        commit = first.get("commit") if isinstance(first, dict) else None
    except Exception:  # noqa: BLE001 - a missing provenance only shortens the message
        commit = None
    return FrameworkTarget(family, _variant(family), None, TargetOrigin.ASSUMED, commit=commit,
                           note="no framework source found in the project and none stated")


def _from_checkout(family: str, root: Path, origin: TargetOrigin, note: str) -> FrameworkTarget:
    catalog = _read_checkout_once(root, family)
    if catalog is None:
        return assumed(family)
    return FrameworkTarget(family, catalog.variant, catalog.version, origin, path=str(root), catalog=catalog,
                           read_seconds=catalog.read_seconds, note=note)


def _read_checkout_once(root: Path, family: str) -> ArgCatalog | None:
    rel = marker(root, family)
    try:
        st = (root / rel).stat() if rel else None
    except OSError:
        st = None
    stamp = (st.st_mtime_ns, st.st_size) if st is not None else (0, 0)
    key = (family, str(root))
    hit = _checkouts.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    from trainlint.frameworks.catalog import read_checkout

    catalog: ArgCatalog | None = read_checkout(root, family)
    _checkouts[key] = (stamp, catalog)
    return catalog


def find_source_beside(family: str, start: Path) -> Path | None:
    """The nearest folder at or above ``start``, up to its project root (:func:`project_root`),
    holding the family's argument module, or a submodule / vendored checkout of one (a direct child
    folder named like a framework) inside the root. Remembered per folder and root, so the configs
    of sibling folders walk the shared part once."""
    root = project_root(start)
    walked: list[Path] = []
    folder = start
    found: Path | None = None
    ended = False  # the walk reached an answer (not just MAX_LEVELS): every folder on it shares it
    for _ in range(MAX_LEVELS):
        key = (family, str(folder), str(root))
        if key in _beside:
            found, ended = _beside[key], True
            break
        walked.append(folder)
        if marker(folder, family) is not None:
            found, ended = folder, True
            break
        child = next((c for c in _vendored(folder) if marker(c, family) is not None), None)
        if child is not None:
            found, ended = child, True
            break
        if folder == root or folder.parent == folder or not inside(folder.parent, root):
            ended = True
            break
        folder = folder.parent
    if ended:
        if len(_beside) + len(walked) > MEMO_FOLDERS:
            _beside.clear()
        for f in walked:
            _beside[(family, str(f), str(root))] = found
    return found


def project_root(start: Path) -> Path:
    """The folder a config's framework source (and every file read to judge it) is looked for in:
    the git work tree holding ``start`` (a folder with ``.git``, a directory or a worktree's file),
    else the folder of the project config found above it, else the current directory when it holds
    ``start``, else ``start`` itself. Remembered per folder."""
    key = (str(start), os.getcwd())
    hit = _roots.get(key)
    if hit is not None:
        return hit
    root = git_root(start)
    if root is None:
        root = config_root(start)
    if root is None:
        cwd = Path(os.getcwd())
        root = cwd if inside(start, cwd) else start
    if len(_roots) >= MEMO_FOLDERS:
        _roots.clear()
    _roots[key] = root
    return root


_roots: dict[tuple[str, str], Path] = {}
"""(folder, current directory) -> its project root."""


_git_roots: dict[str, Path | None] = {}
"""folder -> the git work tree holding it (None: none): every folder of a walk shares its answer,
so the configs of sibling and nested folders walk the shared part once (as :data:`_roots`, this
assumes the folders above do not change while trainlint runs)."""
_config_roots: dict[str, Path | None] = {}
"""folder -> the folder of the project config above it (None: none), shared the same way."""


def git_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.git`` (None: none, or a folder that cannot
    be searched), remembered per folder."""
    walked: list[str] = []
    found: Path | None = None
    # the folders above as strings, one at a time (Path.parents makes a Path of each, all of them,
    # though the walk usually stops at the first, remembered): an absolute path's parents are its
    # dirname chain; a relative one keeps the Path walk
    chain: Iterable[str] = _parents(str(start)) if start.is_absolute() else map(str, (start, *start.parents))
    for key in chain:
        if key in _git_roots:
            found = _git_roots[key]
            break
        walked.append(key)
        try:
            if path_exists(os.path.join(key, ".git")):
                found = Path(key)
                break
        except OSError:
            return None  # not remembered: the same error next time
    _remember(_git_roots, walked, found)
    return found


def _parents(folder: str) -> Iterator[str]:
    """``folder`` (absolute) and the folders above it, as ``str(p) for p in (Path(folder), *Path(folder).parents)``."""
    folder = str(Path(folder))  # Path's spelling (no trailing or doubled separator)
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def config_root(start: Path) -> Path | None:
    """The folder of the project config found above ``start`` (``find_config(start).parent``; None:
    none, or one that cannot be read), walked once per folder."""
    try:
        from trainlint.files.config_files import config_in

        start = Path(real_path(str(start)))
        directory = start if start.is_dir() else start.parent
        walked: list[str] = []
        root: Path | None = None
        for folder in (directory, *directory.parents):
            key = str(folder)
            if key in _config_roots:
                root = _config_roots[key]
                break
            walked.append(key)
            found = config_in(folder)
            if found is not None:
                root = found.parent
                break
    except Exception:  # noqa: BLE001 - an unreadable config leaves the fallback
        return None
    _remember(_config_roots, walked, root)
    return root


def _remember(memo: dict[str, Path | None], folders: list[str], found: Path | None) -> None:
    if len(memo) + len(folders) > MEMO_FOLDERS:
        memo.clear()
    for folder in folders:
        memo[folder] = found


def inside(path: Path, root: Path) -> bool:
    """``path == root or root in path.parents``: for two absolute paths, a comparison of their
    spellings (Path.parents makes a Path of each folder above)."""
    if os.name == "posix" and path.is_absolute() and root.is_absolute():
        p, r = str(path), str(root)
        return p == r or p.startswith(r if r.endswith("/") else r + "/")
    return path == root or root in path.parents


def _vendored(folder: Path) -> list[Path]:
    """Submodule paths of ``.gitmodules`` and child folders named like a framework checkout."""
    out: list[Path] = []
    modules = folder / ".gitmodules"
    if path_is_file(os.path.join(str(folder), ".gitmodules")):
        try:
            from trainlint.files.sources import read_bounded

            for line in read_bounded(modules, 1024 * 1024).decode("utf-8", errors="replace").splitlines()[:2000]:
                key, _, value = line.strip().partition("=")
                if key.strip() == "path" and value.strip():
                    out.append(folder / value.strip())
        except OSError:
            pass
    prefixes, within = _vendor_hints()
    try:
        with os.scandir(folder) as entries:
            for i, entry in enumerate(entries):
                if i > 2000:
                    break
                if (entry.name.lower().startswith(prefixes) or any(h in entry.name.lower() for h in within)) \
                        and entry.is_dir(follow_symlinks=False):
                    out.append(Path(entry.path))
    except OSError:
        pass
    return out


def find_installed(family: str) -> Path | None:
    """The root above the installed top-level package, located by ``importlib.util.find_spec``
    (which, for a top-level name, imports nothing). Remembered per family and import path: each
    config folder without a checkout beside it asks (a search of every ``sys.path`` entry)."""
    import sys

    key = (family, tuple(sys.path))
    if key in _installed:
        return _installed[key]
    found = _find_installed(family)
    if len(_installed) > 64:
        _installed.clear()
    _installed[key] = found
    return found


_installed: dict[tuple[str, tuple[str, ...]], Path | None] = {}
"""(family, sys.path) -> :func:`find_installed`'s answer; :func:`clear_caches` forgets them."""


def _find_installed(family: str) -> Path | None:
    import importlib.util

    from trainlint.frameworks.families import family as framework_of_family

    framework = framework_of_family(family)
    top = framework.import_name if framework is not None else ""
    if not top:
        return None
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        root = Path(loc).parent
        if marker(root, family) is not None:
            return root
    return None


def read_note(target: FrameworkTarget, span: Span, path: str | None) -> Diagnostic | None:
    """The TL014 note of :func:`first_read_note` at ``span`` of the config, its related location
    the argument module that was read (what :func:`once_per_run` tells sources apart by)."""
    from trainlint.core.diagnostics import Related
    from trainlint.core.input_codes import input_diagnostic
    from trainlint.core.positions import FILE_START

    note = first_read_note(target)
    if note is None:
        return None
    module = target.catalog.files[0] if target.catalog and target.catalog.files else ""
    source = str(Path(target.path or "", module)) if module else (target.path or "")
    related = (Related("the argument definitions read", FILE_START, source),)
    return input_diagnostic("TL014", note, span, path=path, related=related)


def once_per_run(results: list) -> list:
    """Keep the first TL014 note per framework source over a whole run. A process says it once
    (:func:`first_read_note`), but under ``-j N`` each worker is a process of its own that may
    read the same fork's source before the cache has it, and would say it again."""
    seen: set[str] = set()
    out = []
    for result in results:
        keep = []
        for d in result.diagnostics:
            if d.code == "TL014" and d.related:
                key = d.related[0].path or d.message
                if key in seen:
                    continue
                seen.add(key)
            keep.append(d)
        out.append(result if len(keep) == len(result.diagnostics) else replace(result, diagnostics=keep))
    return out


def first_read_note(target: FrameworkTarget) -> str | None:
    """"read 412 arguments of X from megatron/training/arguments.py in 0.21 s", once per source and process."""
    if target.read_seconds is None or target.catalog is None or target.path is None:
        return None
    if target.path in _reported:
        return None
    _reported.add(target.path)
    files = ", ".join(target.catalog.files[:3]) + (" ..." if len(target.catalog.files) > 3 else "")
    partial = ""
    if target.catalog.partial:
        partial = f"; not everything could be read statically ({target.catalog.partial[0]}), so names it lacks are warnings"
    return (f"checked against {target.describe()}: read {len(target.catalog.args)} argument definitions from {files} "
            f"in {target.read_seconds:.2f} s (cached for the next checks){partial}")
