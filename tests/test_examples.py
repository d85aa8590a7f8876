"""examples/: every key's reported position points at that key.

For each key of each example, a copy with that key misspelt is checked: the unknown-key
diagnostic must sit exactly at the key's line and column. Keys inside sections the framework
passes through without checking (where a typo is not reported) are checked against the text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_source
from trainlint.core.document import pointer_parts
from trainlint.files.sources import SourceText, read_source

from conftest import EXAMPLES

EXAMPLE_FILES = sorted(p for p in EXAMPLES.iterdir() if p.suffix in {".json", ".yml", ".yaml", ".sh"})


def _offset(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(l) + 1 for l in lines[: line - 1]) + column - 1


def _key_text(text: str, span) -> str:
    start, end = _offset(text, span.line, span.column), _offset(text, span.end_line, span.end_column)
    return text[start:end]


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_every_key_is_reported_at_its_position(path: Path) -> None:
    adapters = builtin_adapters()
    source = read_source(path)
    result = check_source(source, adapters)
    assert result.format is not None, f"{path.name} is not claimed by any adapter"
    doc = result.documents[0]
    checked_by_typo = 0
    assert doc.key_spans, "no key positions recorded"
    for ptr, span in doc.key_spans.items():
        written = _key_text(source.text, span)
        name = pointer_parts(ptr)[-1]
        assert name.replace("-", "_") in written.strip("\"'").lstrip("-").replace("-", "_"), (ptr, written)
        if span.line != span.end_line:
            continue
        # Misspell the key in place: its start column does not move.
        end = _offset(source.text, span.end_line, span.end_column)
        if written[-1:] in "\"'":
            end -= 1
        mutated = source.text[:end] + "zq" + source.text[end:]
        found = check_source(SourceText(str(path), mutated), adapters)
        unknown = [(d.line, d.column) for d in found.diagnostics if d.code == "TL004"]
        if unknown:
            assert (span.line, span.column) in unknown, (ptr, span, unknown)
            checked_by_typo += 1
    assert checked_by_typo >= len(doc.key_spans) // 2, "too few keys reported as unknown when misspelt"
