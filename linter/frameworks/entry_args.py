"""The arguments a Megatron entry point adds to the framework's parser, read from its file.

Megatron's ``parse_args(extra_args_provider=...)`` lets an entry point (``tasks/main.py``,
``tasks/eval_harness/evaluate.py``, a fork's own script) add flags of its own:
``group.add_argument('--qa_data_test', ...)`` in the entry point's file. When the script names an
entry point that is a file in the same tree (the framework checkout the config is checked against,
or the script's own folder), its ``add_argument`` calls are read with :mod:`ast` like the
framework's argument module: never imported or run, one file, bounded in size, memoised per file
(path, modification time and size) within a process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


MAX_LEVELS = 8
"""Folders above the script tried as the directory the script is run from."""



@dataclass(frozen=True)
class EntryArgs:
    scan: Any
    """The :class:`~trainlint.frameworks.argscan.ScanResult` of the file's ``add_argument`` calls."""
    complete: bool
    """Every ``extra_args_provider=`` the file passes is a function of the file itself (not one it
    imports), so the flags read are all the entry point adds: a name neither it nor the framework
    defines makes argparse exit."""
    path: str


_memo: dict[tuple[str, int, int], EntryArgs | None] = {}
"""(real path, mtime_ns, size) -> what that file adds (None: unreadable)."""


def entry_file(entry: str | None, script: str | None, root: str | None) -> Path | None:
    """The entry point's file: ``entry`` as written, relative to the script's folder or a folder
    above it (the directory it is usually run from), up to the framework checkout ``root``;
    only a file inside ``root`` (or, without one, inside the script's folder and its parent)."""
    if not entry or not script or not entry.endswith(".py") or "$" in entry or "\0" in entry:
        return None
    from trainlint.frameworks.locate import real_path

    folder = os.path.dirname(real_path(script))  # Path(script).resolve().parent, its folders remembered
    if os.name == "posix":
        # the same walk on strings (every Megatron command asks, most for a file that is not there)
        text_limits, text_bases = _reach_text(folder, root)
        return _find_text(entry.replace("\\", "/"), text_bases, text_limits)
    limits, bases = _reach(Path(folder), root)
    return _find(entry.replace("\\", "/"), bases, limits)


def _reach_text(here: str, root: str | None) -> tuple[list[str], list[str]]:
    """:func:`_reach` of a real absolute POSIX folder, on its spelling (tests/test_megatron_fast_paths.py
    compares the two): such a path is its own normal form, so its parent is its dirname and a folder
    lies inside another when it is that folder or starts with it and a separator."""
    from trainlint.frameworks.locate import project_root, real_path

    limits = [real_path(root) if root else os.path.dirname(here), str(project_root(Path(here)))]
    above = [lim for lim in limits if _inside_text(here, lim)]
    stop = min(above, key=len) if above else None  # the farthest limit above the script: the shortest
    bases: list[str] = []
    folder = here
    for _ in range(MAX_LEVELS):
        bases.append(folder)
        parent = os.path.dirname(folder)
        if folder == stop or parent == folder:
            break
        folder = parent
    bases.extend(lim for lim in limits if lim not in bases)
    return limits, bases


def _inside_text(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith("/") else root + "/")


def _find_text(rel: str, bases: list[str], limits: list[str]) -> Path | None:
    """:func:`_find` over the folders of :func:`_reach_text`."""
    from trainlint.frameworks.locate import real_path

    absolute = os.path.isabs(rel)
    for base in bases:
        candidate = rel if absolute else (base + rel if base.endswith("/") else base + "/" + rel)
        if not os.path.exists(candidate):
            continue  # nothing there (the usual case): one stat
        try:
            real = real_path(candidate)
        except (OSError, RuntimeError):
            continue
        if os.path.isfile(real) and any(_inside_text(real, lim) for lim in limits):
            return Path(real)
    return None


def _reach(here: Path, root: str | None) -> tuple[list[Path], list[Path]]:
    """(folders a file read must lie in, folders a relative path is tried from): the framework
    checkout ``root`` (else the script's folder's parent) and the script's project (a patch project
    such as Pai-Megatron-Patch keeps its entry points and argument extensions beside a Megatron
    submodule); the script's folder and those above it, up to the farthest of them."""
    from trainlint.frameworks.locate import inside, project_root, real_path

    limits = [Path(real_path(root)) if root else here.parent, project_root(here)]
    above = [lim for lim in limits if inside(here, lim)]
    stop = min(above, key=lambda p: len(p.parts)) if above else None  # the farthest limit above the script
    bases: list[Path] = []
    folder = here
    for _ in range(MAX_LEVELS):
        bases.append(folder)
        if folder == stop or folder.parent == folder:
            break
        folder = folder.parent
    bases.extend(lim for lim in limits if lim not in bases)
    return limits, bases


def _find(rel: str, bases: list[Path], limits: list[Path]) -> Path | None:
    from trainlint.frameworks.locate import inside, real_path

    for base in bases:
        candidate = Path(rel) if os.path.isabs(rel) else base / rel
        if not os.path.exists(candidate):
            # nothing there (the usual case): one stat, not a resolve (an lstat per component); a path
            # that does not exist resolves to no file either
            continue
        try:
            real = Path(real_path(str(candidate)))
        except (OSError, RuntimeError):
            continue
        if real.is_file() and any(inside(real, lim) for lim in limits):
            return real
    return None


def entry_arguments(entry: str | None, script: str | None, root: str | None) -> EntryArgs | None:
    """What the entry point's own file adds (its ``add_argument`` calls), or None when its file
    is not found or cannot be read."""
    path = entry_file(entry, script, root)
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key in _memo:
        return _memo[key]
    from trainlint.frameworks.catalog import MAX_SOURCE_BYTES  # here: most scripts name no entry point file in reach

    result = None
    if st.st_size <= MAX_SOURCE_BYTES:
        try:
            from trainlint.files.sources import read_bounded

            text = read_bounded(path, MAX_SOURCE_BYTES).decode("utf-8", errors="replace")
        except OSError:
            text = None
        if text is not None:
            from trainlint.frameworks.argscan import scan_megatron

            scan = scan_megatron({path.name: text})
            if scan.files:  # a file that does not parse: not read
                imported, all_found = _imported_providers(text, path, root)
                if imported:
                    from trainlint.frameworks.argscan import merge

                    scan = merge([scan, *imported])
                local = _providers_local(text, imported_ok=all_found)
                result = EntryArgs(scan, not scan.partial and local, str(path))
    if len(_memo) > 256:
        _memo.clear()
    _memo[key] = result
    return result


def _imported_providers(text: str, path: Path, root: str | None) -> tuple[list[Any], bool]:
    """The scans of the modules the entry point imports its ``extra_args_provider`` functions from
    (``from megatron_patch.arguments import get_patch_args``: a patch project's ``add_*_args``
    extension of Megatron's parser), found as files inside the project or the framework checkout;
    and whether every imported provider's module was found and read."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return [], False
    given = {k.value.id for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords
             if k.arg == "extra_args_provider" and isinstance(k.value, ast.Name)}
    sources: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        for alias in node.names:
            if (alias.asname or alias.name) in given:
                given.discard(alias.asname or alias.name)
                module = _module_file(node.module, path, root)
                if module is None:
                    return [], False
                sources.setdefault(str(module), module.read_text(encoding="utf-8", errors="replace"))
    if not sources:
        return [], False
    from trainlint.frameworks.argscan import scan_megatron

    scans = [scan_megatron({Path(p).name: t}) for p, t in sources.items()]
    return scans, all(sc.files and not sc.partial for sc in scans)


def _module_file(module: str, path: Path, root: str | None) -> Path | None:
    """``a.b`` as ``a/b.py`` (or ``a/b/__init__.py``) in reach of the entry point (see :func:`_reach`),
    bounded in size."""
    from trainlint.frameworks.catalog import MAX_SOURCE_BYTES

    if not all(part.isidentifier() for part in module.split(".")):
        return None
    limits, bases = _reach(path.parent, root)
    rel = module.replace(".", "/")
    for candidate in (f"{rel}.py", f"{rel}/__init__.py"):
        found = _find(candidate, bases, limits)
        try:
            if found is not None and found.stat().st_size <= MAX_SOURCE_BYTES:
                return found
        except OSError:
            continue
    return None


def _providers_local(text: str, imported_ok: bool = False) -> bool:
    """Whether the file hands Megatron's parser only argument providers it defines itself
    (``initialize_megatron(extra_args_provider=get_tasks_args)`` with ``def get_tasks_args`` in the
    file, or a parameter passing one along), and at least one."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    params = {a.arg for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              for a in (*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs)}
    given = [k.value for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords
             if k.arg == "extra_args_provider"]
    names = [v.id for v in given if isinstance(v, ast.Name)]
    if not given or len(names) != len(given):
        return False
    if imported_ok:  # the imported providers were read (_imported_providers): as good as defined here
        return True
    return any(n in defined for n in names) and all(n in defined or n in params for n in names)
