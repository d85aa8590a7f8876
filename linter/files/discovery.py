"""Which files to look at: the paths given, and directories walked recursively."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

SKIPPED_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache",
                ".pytest_cache", ".ruff_cache", "site-packages"}


def iter_files(paths: Iterable[str], suffixes: set[str]) -> Iterator[tuple[str, bool]]:
    """Yield (path, explicit). Explicit paths are always yielded; files found by walking a
    directory only when their suffix is one an adapter reads. Symlinked directories are
    followed once: a loop ends at the first directory seen twice. A symlink (to a file or a
    directory) is followed only when its target lies inside the walk's checkout (the git
    checkout holding the directory, else the directory itself): a repository that ships
    ``leak -> /home/alice/.ssh`` gets nothing outside itself read and quoted."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from ((p, False) for p in _walk(path, suffixes))
        else:
            yield raw, True


def _walk(root: Path, suffixes: set[str]) -> Iterator[str]:
    from trainlint.files.containment import checkout_of, contained

    try:
        real = root.resolve()
    except (OSError, RuntimeError, ValueError):
        return
    bounds = (str(checkout_of(real) or real),)
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            st = directory.stat()
        except OSError:
            continue
        ident = (st.st_dev, st.st_ino)
        if ident in seen:
            continue
        seen.add(ident)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            try:
                if entry.is_symlink() and not contained(entry.path, bounds):
                    continue  # a link out of the checkout
                if entry.is_dir():
                    if entry.name not in SKIPPED_DIRS:
                        subdirs.append(Path(entry.path))
                elif entry.is_file() and Path(entry.name).suffix.lower() in suffixes:
                    yield entry.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))
