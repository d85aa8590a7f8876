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

from trainlint.core.diagnostics import Diagnostic
from trainlint.core.input_codes import input_diagnostic

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
        from trainlint.core.positions import Span

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


class ReadRefused(OSError):
    """:func:`read_bounded` would not read the file: ``reason`` says why (never a partial read)."""

    def __init__(self, reason: Unreadable, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        return self.message


def read_bounded(path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``: the one way trainlint reads a file.

    The file is opened without blocking (a named pipe with no writer would hang ``open`` itself) and
    checked on the open descriptor, so a symlink swapped for ``/dev/zero`` between a check and the
    read is still refused: a pipe, socket, device or directory is never read, and at most
    ``max_bytes + 1`` bytes are (a file that grows while being read is refused too). Raises
    :class:`ReadRefused` (an OSError) for a file it will not read, OSError when the system cannot."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadRefused(Unreadable.NOT_A_FILE, f"not a regular file ({_file_kind(info.st_mode)}): not read")
        if info.st_size > max_bytes:
            raise ReadRefused(Unreadable.TOO_LARGE,
                              f"file is {info.st_size / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB limit")
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1024 * 1024, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:  # grew while being read
            raise ReadRefused(Unreadable.TOO_LARGE, f"file is over the {max_bytes / 1e6:.0f} MB limit")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_bounded_text(path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES, errors: str = "strict") -> str:
    """:func:`read_bounded` decoded as UTF-8 (a BOM dropped). Raises ReadRefused, OSError, UnicodeDecodeError."""
    return read_bounded(path, max_bytes).decode("utf-8-sig", errors=errors)


def read_source(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> SourceText:
    """Read a file as text or raise UnreadableSource with a TL001 diagnostic."""
    name = str(path)
    try:
        data = read_bounded(path, max_bytes)
    except ReadRefused as refused:
        message = refused.message + (" for a config" if refused.reason is Unreadable.TOO_LARGE else "")
        raise UnreadableSource(input_diagnostic("TL001", message, path=name), refused.reason) from None
    except (OSError, ValueError) as exc:
        raise UnreadableSource(input_diagnostic("TL001", f"cannot read file: {getattr(exc, 'strerror', None) or exc}",
                                                path=name), Unreadable.CANNOT_OPEN) from None
    return SourceText(name, decode(data, name))


def read_text_lenient(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str | None:
    """A file's text for a side look-up (suppression comments, SARIF line hashes, baselines): through
    the same size limit and regular-file check as :func:`read_source`, undecodable bytes replaced,
    newlines kept as written. ``None`` when it cannot or should not be read (a 2 GB sparse file is
    never read whole)."""
    try:
        data = read_bounded(path, max_bytes)
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", errors="replace")
