"""core.positions.LineIndex indexes a small text by splitting it and a large one by walking it: the same answer."""

from __future__ import annotations

from trainlint.core import positions


def test_line_index_both_ways_agree(monkeypatch) -> None:
    """LineIndex splits a small text into lines and walks a large one: the same line starts."""
    texts = ["", "\n", "a", "a\n", "\n\n", "ab\ncd\n\nx", "\r\n\x0b\x0c\u2028 x\n", "é\nü\n\n" * 50]
    small = [positions.LineIndex(t)._starts for t in texts]
    monkeypatch.setattr(positions, "_SPLIT_BELOW", -1)
    assert small == [positions.LineIndex(t)._starts for t in texts]


def test_span_is_both_positions() -> None:
    """LineIndex.span (one search when both ends are on one line) is the two positions it joins,
    for ends before, at, after line breaks, out of range and reversed."""
    text = "ab\ncd\n\nxyz\n" * 3 + "tail"
    index = positions.LineIndex(text)
    offsets = range(-2, len(text) + 3)
    for start in offsets:
        for end in offsets:
            span = index.span(start, end)
            assert (span.line, span.column) == index.position(start), (start, end)
            assert (span.end_line, span.end_column) == index.position(end), (start, end)
