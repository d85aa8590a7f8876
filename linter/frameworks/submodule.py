"""The commit a project pins a framework submodule at, read without running git.

A project that vendors Megatron-LM as a git submodule (``.gitmodules``) but has not checked it out
still says which commit it builds against: the submodule's gitlink (mode 160000) in the project's
git index. :func:`pinned` reads it from ``.git/index`` (format versions 2 and 3; bounded), so the
target can be that commit's shipped release when trainlint ships one, and is named in the file's
statement otherwise.
"""

from __future__ import annotations

import struct
from pathlib import Path

MAX_INDEX_BYTES = 32 * 1024 * 1024
GITLINK = 0o160000


def submodule_paths(root: Path) -> list[str]:
    """The ``path = ...`` entries of the project's ``.gitmodules``."""
    try:
        text = (root / ".gitmodules").read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        key, _, value = line.strip().partition("=")
        if key.strip() == "path" and value.strip():
            out.append(value.strip().strip("/"))
    return out


def gitlinks(root: Path) -> dict[str, str]:
    """Path -> commit of every gitlink in ``root/.git/index`` (empty when unreadable or another format)."""
    index = root / ".git" / "index"
    try:
        if not index.is_file() or index.stat().st_size > MAX_INDEX_BYTES:
            return {}
        data = index.read_bytes()
    except OSError:
        return {}
    if len(data) < 12 or data[:4] != b"DIRC":
        return {}
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        return {}
    out: dict[str, str] = {}
    pos = 12
    for _ in range(count):
        if pos + 62 > len(data):
            break
        mode = struct.unpack(">I", data[pos + 24:pos + 28])[0]
        sha = data[pos + 40:pos + 60].hex()
        flags = struct.unpack(">H", data[pos + 60:pos + 62])[0]
        head = 62 + (2 if version == 3 and flags & 0x4000 else 0)
        end = data.find(b"\0", pos + head)
        if end < 0:
            break
        path = data[pos + head:end].decode("utf-8", errors="replace")
        if mode == GITLINK:
            out[path] = sha
        length = end - pos + 1
        pos += (length + 7) // 8 * 8  # NUL-padded to a multiple of 8 bytes
    return out


def pinned(root: Path, names: tuple[str, ...]) -> tuple[str, str] | None:
    """(submodule path, commit) of the first submodule of ``root`` whose folder name holds one of
    ``names`` (``megatron``) and that is pinned in the index; None otherwise."""
    paths = [p for p in submodule_paths(root) if any(n in p.rsplit("/", 1)[-1].lower() for n in names)]
    if not paths:
        return None
    links = gitlinks(root)
    for p in paths:
        if p in links:
            return p, links[p]
    return None
