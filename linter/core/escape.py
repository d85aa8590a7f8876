"""Text from a config or a file name, made safe to print.

A key, value or path can hold any character: a newline that starts a line of its own (a forged
``::error file=...::`` workflow command, a fake ``path:1:1: TL000`` finding), an escape sequence
that recolours or rewrites the terminal, a right-to-left override that reorders what a reviewer
reads, a lone surrogate (from a non-UTF-8 file name or a ``\\udc80`` JSON escape) that cannot be
encoded at all. :func:`printable` shows each of them as a visible escape instead, so one finding is
always one line whose text is what the file holds.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Iterable

# C0 controls but tab, DEL and the C1 controls (some terminals obey 0x9b as CSI), the bidirectional
# formatting characters, the line and paragraph separators, and lone surrogates.
_UNSAFE_CHARACTERS = "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"


@cache
def _unsafe() -> re.Pattern[str]:
    # compiled for the first text that is not plain printable ASCII: ~0.4 ms, which most runs never need
    return re.compile(_UNSAFE_CHARACTERS)


_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\e"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, keep: str = "") -> str:
    """``text`` with every control, bidi and surrogate character shown as an escape (``\\n``, ``\\e``,
    ``\\x07``, ``\\u202e``), except those in ``keep`` (a format that encodes line breaks itself, as
    GitHub's ``%0A`` and markdown's ``<br>``, keeps ``\\r\\n``); the fast path returns it unchanged."""
    if text.isascii() and text.isprintable():
        return text  # no character _UNSAFE_CHARACTERS names (all are controls or beyond ASCII)
    unsafe = _unsafe()
    if not unsafe.search(text):
        return text
    if keep:
        return unsafe.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)
    return unsafe.sub(_escape, text)


def printable_lines(lines: Iterable[str]) -> str:
    """``lines`` joined by newlines, each made :func:`printable` first: a renderer builds its text as a list of
    lines, so a line break inside one of them can only come from a config value or a path, and is shown escaped."""
    return "\n".join(printable(line) for line in lines)
