"""Positions between trainlint and LSP.

trainlint spans are 1-based lines and columns counted in code points, end exclusive, over the
text as :func:`trainlint.files.sources.decode` leaves it (no BOM, every line break turned into
``\\n``). LSP positions are 0-based lines and characters counted in UTF-16 code units over the
text as the editor holds it, where ``\\n``, ``\\r\\n`` and ``\\r`` each end a line (and nothing
else does: not ``\\x0b``, ``\\x85`` or ``\\u2028``, which :meth:`str.splitlines` would split on).

Normalising line breaks keeps line numbers and the columns inside a line, so only two things
need converting: astral characters (an emoji is 1 code point but 2 UTF-16 units) and a leading
BOM, which trainlint strips and the editor may keep as the first character of line 0.
"""

from __future__ import annotations

import os

from trainlint.core.positions import Span

BOM = "\ufeff"


def normalize(text: str) -> tuple[str, bool]:
    """The text trainlint lints (as ``trainlint check`` reads a file) and whether a BOM was stripped."""
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n"), bom


def split_lines(text: str) -> list[str]:
    """The lines of a text as LSP counts them (only \\n, \\r\\n and \\r end a line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _line(lines: list[str], index: int) -> str:
    return lines[index] if 0 <= index < len(lines) else ""


def column_to_utf16(line_text: str, column: int) -> int:
    """1-based code-point column -> 0-based UTF-16 character offset (clamped to the line)."""
    return utf16_len(line_text[: max(column - 1, 0)])


def utf16_to_column(line_text: str, character: int) -> int:
    """0-based UTF-16 offset -> 1-based code-point column. An offset inside a surrogate pair
    belongs to that character; an offset past the end of the line is clamped to its end."""
    if line_text.isascii():
        return min(max(character, 0), len(line_text)) + 1
    units = 0
    for index, ch in enumerate(line_text):
        width = 2 if ord(ch) > 0xFFFF else 1
        if units + width > character:
            return index + 1
        units += width
    return len(line_text) + 1


def point_to_position(line: int, column: int, lines: list[str], bom: bool = False) -> tuple[int, int]:
    """A trainlint (line, column) point -> LSP (line, character).

    A column one past the line's end (a span that includes the line break) becomes the start of
    the next line, as LSP expresses it; lines or columns beyond the text are clamped to its end.
    """
    if not lines:
        return 0, 0
    row = line - 1
    if row < 0:
        return 0, 0
    if row >= len(lines):
        last = len(lines) - 1
        return last, utf16_len(lines[last]) + (1 if bom and last == 0 else 0)
    text = lines[row]
    shift = 1 if bom and row == 0 else 0
    if column - 1 > len(text) and row + 1 < len(lines):
        return row + 1, 0
    return row, column_to_utf16(text, column) + shift


def span_to_range(span: Span, lines: list[str], bom: bool = False) -> tuple[tuple[int, int], tuple[int, int]]:
    """((line, character), (line, character)) of a span, in LSP terms."""
    start = point_to_position(span.line, span.column, lines, bom)
    end = point_to_position(span.end_line, span.end_column, lines, bom)
    if end < start:
        end = start
    return start, end


def position_to_point(line: int, character: int, lines: list[str], bom: bool = False) -> tuple[int, int]:
    """LSP (line, character) -> trainlint (1-based line, 1-based code-point column)."""
    if bom and line == 0:
        character = max(character - 1, 0)
    return line + 1, utf16_to_column(_line(lines, line), character)


def span_contains(span: Span, line: int, column: int) -> bool:
    """Is the 1-based point inside the span? The end is exclusive, except that an empty span
    contains its own position (a boolean flag written without a value)."""
    point = (line, column)
    start, end = (span.line, span.column), (span.end_line, span.end_column)
    if start == end:
        return point == start
    return start <= point < end


def same_file(a: str | None, b: str | None) -> bool:
    """Whether two paths name one file (normalised, case-folded where the system folds case)."""
    if a is None or b is None:
        return a == b
    if a == b:
        return True
    try:
        return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))
    except (OSError, ValueError):
        return False
