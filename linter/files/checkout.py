"""Where a file trainlint rewrites may lie: inside the checkout of the path as it was named.

``check --fix .`` walks a repository; a symlink in it (``configs/ds.json -> ../../shared/ds.json``)
names a file elsewhere, perhaps one no one meant this repository's fixes to touch. A write follows
a symlink only when the file it reaches lies in the same checkout as the link: the git work tree
that holds the path as named (the nearest parent with ``.git``, walking the path as written, not
as resolved), else the current directory when the path is below it, else the path's own
directory. Symlinks inside the checkout (a directory linked to a sibling) are followed as before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Outside:
    """A path whose real file lies outside its checkout."""

    real: str
    checkout: str


def checkout_of(path: str) -> str:
    """The directory a write to ``path`` (as named, symlinks not followed) must stay in."""
    named = os.path.abspath(path)
    folder = os.path.dirname(named)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    try:
        cwd = os.path.abspath(os.getcwd())
    except OSError:  # the current directory was removed
        cwd = ""
    if cwd and named.startswith(cwd.rstrip(os.sep) + os.sep):
        return cwd
    return os.path.dirname(named)


def outside_checkout(path: str) -> Outside | None:
    """Where ``path`` really leads when that is outside its checkout (a symlink out of it); None
    when the path is inside (or names no symlink at all)."""
    named = os.path.abspath(path)
    real = os.path.realpath(named)
    if real == named:
        return None  # no symlink on the way: the file is where it was named
    checkout = checkout_of(named)
    root = os.path.realpath(checkout)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        return None
    return Outside(real, checkout)
