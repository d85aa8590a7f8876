"""Source positions: 1-based line and column, end exclusive, in code points.

Every adapter turns its parser's positions into a :class:`Span`; everything downstream
(rules, reporters, the language server) works with spans only.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from operator import add
from dataclasses import dataclass


@dataclass(frozen=True, init=False)
class Span:
    """A region of a file.

    ``line``/``column`` are 1-based and point at the first character; ``end_line``/
    ``end_column`` point one past the last character (so a 3-character token at column 5
    has ``end_column`` 8). Columns count Unicode code points, not bytes.
    """

    line: int
    column: int
    end_line: int
    end_column: int

    def __init__(self, line: int, column: int, end_line: int, end_column: int) -> None:
        # the fields written into the instance dict: the frozen dataclass's generated __init__
        # calls object.__setattr__ per field, three times slower, for every key and value read
        d = self.__dict__
        d["line"] = line
        d["column"] = column
        d["end_line"] = end_line
        d["end_column"] = end_column

    # The ordering ``order=True`` would generate, written out: the decorator builds and compiles (or
    # looks up) four more methods at every start for it. Same semantics: the fields as a tuple,
    # NotImplemented for another class (a subclass included).
    def __lt__(self, other: Span) -> bool:
        if other.__class__ is self.__class__:
            return ((self.line, self.column, self.end_line, self.end_column)
                    < (other.line, other.column, other.end_line, other.end_column))
        return NotImplemented

    def __le__(self, other: Span) -> bool:
        if other.__class__ is self.__class__:
            return ((self.line, self.column, self.end_line, self.end_column)
                    <= (other.line, other.column, other.end_line, other.end_column))
        return NotImplemented

    def __gt__(self, other: Span) -> bool:
        if other.__class__ is self.__class__:
            return ((self.line, self.column, self.end_line, self.end_column)
                    > (other.line, other.column, other.end_line, other.end_column))
        return NotImplemented

    def __ge__(self, other: Span) -> bool:
        if other.__class__ is self.__class__:
            return ((self.line, self.column, self.end_line, self.end_column)
                    >= (other.line, other.column, other.end_line, other.end_column))
        return NotImplemented

    @classmethod
    def point(cls, line: int, column: int) -> Span:
        return cls(line, column, line, column + 1)

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


FILE_START = Span(1, 1, 1, 1)


_SPLIT_BELOW = 1 << 20
"""Texts up to this many characters are split into lines to index them (see LineIndex)."""


class LineIndex:
    """Turns character offsets of a text into 1-based (line, column) pairs."""

    def __init__(self, text: str) -> None:
        if len(text) <= _SPLIT_BELOW:
            # line k + 1 starts after the k + 1 first lines and their line feeds: the running sum of
            # the lengths plus k + 1, summed in C (the loop below costs ~2x, for every file read)
            lines = text.split("\n")
            self._starts = [0, *map(add, accumulate(map(len, lines[:-1])), range(1, len(lines)))]
        else:  # a large text: no list of its lines at once (a string per line is ~50 bytes more than an int)
            self._starts = [0]
            find = text.find
            pos = find("\n")
            while pos != -1:
                self._starts.append(pos + 1)
                pos = find("\n", pos + 1)
        self._length = len(text)

    def position(self, offset: int) -> tuple[int, int]:
        # clamp to the text (written out: this runs for every key and value of every file)
        if offset < 0:
            offset = 0
        elif offset > self._length:
            offset = self._length
        row = bisect_right(self._starts, offset) - 1
        return row + 1, offset - self._starts[row] + 1

    def span(self, start: int, end: int) -> Span:
        # position(start) and position(end) written out (every key and value of every file): one
        # search when the end is on the start's line (nearly every span)
        length = self._length
        if start < 0:
            start = 0
        elif start > length:
            start = length
        if end < 0:
            end = 0
        elif end > length:
            end = length
        starts = self._starts
        row = bisect_right(starts, start) - 1
        first = starts[row]
        if start <= end and (row + 1 == len(starts) or end < starts[row + 1]):
            return Span(row + 1, start - first + 1, row + 1, end - first + 1)
        end_row = bisect_right(starts, end) - 1
        return Span(row + 1, start - first + 1, end_row + 1, end - starts[end_row] + 1)

    @property
    def line_count(self) -> int:
        return len(self._starts)
