"""Positions between trainlint and LSP.

trainlint spans are 1-based lines and columns counted in code points, end exclusive; LSP
positions are 0-based lines and characters counted in UTF-16 code units. The two differ on
any line holding an astral character (an emoji counts 1 code point but 2 UTF-16 units), so
columns are converted through the text of their line.
"""

from __future__ import annotations

from trainlint.positions import Span


def _line(lines: list[str], index: int) -> str:
    return lines[index] if 0 <= index < len(lines) else ""


def utf16_len(text: str) -> int:
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in text)


def column_to_utf16(line_text: str, column: int) -> int:
    """1-based code-point column -> 0-based UTF-16 character offset."""
    return utf16_len(line_text[: max(column - 1, 0)])


def utf16_to_column(line_text: str, character: int) -> int:
    """0-based UTF-16 offset -> 1-based code-point column (a half of a pair counts as the char)."""
    units = 0
    for index, ch in enumerate(line_text):
        if units >= character:
            return index + 1
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text) + 1 + max(character - units, 0)


def split_lines(text: str) -> list[str]:
    # Only \n, \r\n and \r end a line for LSP (str.splitlines also splits on \x0b, \u2028, ...).
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def span_to_range(span: Span, lines: list[str]) -> tuple[tuple[int, int], tuple[int, int]]:
    """((line, char), (line, char)) in LSP terms."""
    start_line, end_line = max(span.line - 1, 0), max(span.end_line - 1, 0)
    start = (start_line, column_to_utf16(_line(lines, start_line), span.column))
    end = (end_line, column_to_utf16(_line(lines, end_line), span.end_column))
    if end < start:
        end = start
    return start, end


def position_to_point(line: int, character: int, lines: list[str]) -> tuple[int, int]:
    """LSP position -> trainlint (1-based line, 1-based code-point column)."""
    return line + 1, utf16_to_column(_line(lines, line), character)


def span_contains(span: Span, line: int, column: int) -> bool:
    """Is the 1-based point inside the span (end inclusive, so a cursor just after a value counts)?"""
    if (line, column) < (span.line, span.column):
        return False
    return (line, column) <= (span.end_line, span.end_column)
