"""``Path.exists()`` and ``Path.is_file()`` of a path given as a string, with pathlib's answers
(False for a missing path, a file in the way, a link loop; any other error raised): the folder
walks that look for a checkout or a project root beside every config ask these of paths they
build as strings, without making a Path of each."""

from __future__ import annotations

import errno
import os
import stat

_IGNORED = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)
"""The errors ``Path.exists`` and ``Path.is_file`` answer False for (pathlib's ``_ignore_error``); any
other raises, as from them."""


def _stat(path: str) -> os.stat_result | None:
    """``os.stat(path)``, or None where pathlib's ``exists`` / ``is_file`` would answer False."""
    try:
        return os.stat(path)
    except OSError as e:
        if e.errno in _IGNORED or getattr(e, "winerror", None) in (21, 123, 1921):
            return None
        raise
    except ValueError:
        return None


def path_exists(path: str) -> bool:
    """``Path(path).exists()`` without making a Path."""
    return _stat(path) is not None


def path_is_file(path: str) -> bool:
    """``Path(path).is_file()`` without making a Path."""
    found = _stat(path)
    return found is not None and stat.S_ISREG(found.st_mode)
