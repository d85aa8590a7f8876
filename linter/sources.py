"""Reading a file as text, safely: size limit, binary detection, encodings.

A config is data. It is read, never executed; a file that cannot be read as text gets one
TL001 diagnostic and nothing else.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from trainlint.diagnostics import Diagnostic
from trainlint.input_codes import input_diagnostic

MAX_FILE_BYTES = 8 * 1024 * 1024
"""Larger files are not configs anyone writes by hand; they are skipped with TL001."""


@dataclass(frozen=True)
class SourceText:
    """A file's path and its text, read within trainlint's limits."""

    path: str
    text: str


class Unreadable(Enum):
    """Why a source could not be read as text (callers decide on this, never on the message)."""

    BINARY = "binary"            # NUL bytes: not a text file
    NOT_TEXT = "not-text"        # bytes that do not decode in the file's encoding
    NOT_A_FILE = "not-a-file"    # a pipe, socket, device or directory
    TOO_LARGE = "too-large"      # over the size limit for a config
    CANNOT_OPEN = "cannot-open"  # the OS could not open or read it (missing, no permission, ...)


class UnreadableSource(Exception):
    def __init__(self, diagnostic: Diagnostic, reason: Unreadable) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic
        self.reason = reason


def decode(data: bytes, path: str) -> str:
    """Bytes to text: UTF-8 (with or without BOM), or UTF-16/32 with a BOM. Raises UnreadableSource."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        encoding = "utf-32"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
        if b"\x00" in data[:8192] and not _text_with_stray_nuls(data):
            raise UnreadableSource(input_diagnostic("TL001", "binary file (NUL bytes): not a config", path=path),
                                    Unreadable.BINARY)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        # the column counts the characters before the bad byte that do decode
        column = len(data[line_start:exc.start].decode(encoding, errors="replace")) + 1 if encoding == "utf-8-sig" else 1
        from trainlint.positions import Span

        raise UnreadableSource(
            input_diagnostic(
                "TL001",
                f"not valid {encoding.replace('-sig', '').upper()} text: byte 0x{data[exc.start]:02x} at offset {exc.start}",
                Span.point(line, column),
                path=path,
            ),
            Unreadable.NOT_TEXT,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    # Normalise newlines so that every adapter counts lines the same way.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _text_with_stray_nuls(data: bytes) -> bool:
    """A text file with a few NUL bytes in it: bash skips them and runs a script anyway, so such a
    file is read (each adapter then reports the NUL as its framework would read it), not passed by as
    binary. Binary data has many NULs (UTF-16 without a BOM: every other byte) or is not UTF-8."""
    nuls = data.count(b"\x00")
    if nuls * 100 > len(data):
        return False
    try:
        data.replace(b"\x00", b"").decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a file"


def read_source(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> SourceText:
    """Read a file as text or raise UnreadableSource with a TL001 diagnostic."""
    name = str(path)
    try:
        p = Path(path)
        info = p.stat()
        if not stat.S_ISREG(info.st_mode):
            # a named pipe would block the read forever, a device never ends
            raise UnreadableSource(input_diagnostic("TL001", f"not a regular file ({_file_kind(info.st_mode)}): not read",
                                                    path=name), Unreadable.NOT_A_FILE)
        size = info.st_size
        if size > max_bytes:
            raise UnreadableSource(
                input_diagnostic("TL001", f"file is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB limit for a config",
                                 path=name),
                Unreadable.TOO_LARGE,
            )
        with open(p, "rb") as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:  # grew while being read
            raise UnreadableSource(input_diagnostic(
                "TL001", f"file is over the {max_bytes / 1e6:.0f} MB limit for a config", path=name), Unreadable.TOO_LARGE)
    except UnreadableSource:
        raise
    except OSError as exc:
        raise UnreadableSource(input_diagnostic("TL001", f"cannot read file: {exc.strerror or exc}", path=name),
                                Unreadable.CANNOT_OPEN) from None
    return SourceText(name, decode(data, name))


def read_text_lenient(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str | None:
    """A file's text for a side look-up (suppression comments, SARIF line hashes, baselines): through
    the same size limit and regular-file check as :func:`read_source`, undecodable bytes replaced,
    newlines kept as written. ``None`` when it cannot or should not be read (a 2 GB sparse file is
    never read whole)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except (OSError, ValueError):
        return None
    if len(data) > max_bytes:
        return None
    return data.decode("utf-8", errors="replace")
