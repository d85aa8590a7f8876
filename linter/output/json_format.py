"""``--format json``: one object, ``{"files": [{"path", "format", "diagnostics": [...]}]}``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterator, Sequence

from trainlint.core.results import FileResult
from trainlint.output.report import as_report

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.output.report import Report


def render(results: Sequence[FileResult] | Report, *, baseline: tuple | None = None) -> str:
    """``baseline``: (path, Outcome) when a baseline left findings out: a ``"baseline"`` object
    says how many (``suppressed``) and how many recorded ones no longer occur (``stale``)."""
    return "".join(render_pieces(results, baseline=baseline))


def render_pieces(results: Sequence[FileResult] | Report, *, baseline: tuple | None = None) -> Iterator[str]:
    """:func:`render`'s text in pieces, one file's entry at a time: the same bytes as
    ``json.dumps(document, indent=2)``, without the whole document (every finding as a dict, then
    as one string) in memory at once: on 10,000 files that was most of a check's peak memory."""
    index = -1
    for index, e in enumerate(as_report(results).entries()):
        entry = {"path": e.path, "format": e.format, "diagnostics": [d.to_dict() for d in e.diagnostics],
                 **({"target": e.target} if e.target is not None else {})}
        # an entry at depth 2 of the document: json.dumps indents its every line by 4 more spaces
        # (a JSON string holds no raw line break, so the lines are the structure's)
        text = json.dumps(entry, indent=2).replace("\n", "\n    ")
        yield ('{\n  "files": [\n    ' if index == 0 else ",\n    ") + text
    yield '{\n  "files": []' if index < 0 else "\n  ]"
    if baseline is not None:
        path, outcome = baseline
        tail = json.dumps({"path": path, "suppressed": outcome.suppressed, "stale": outcome.stale}, indent=2)
        yield ',\n  "baseline": ' + tail.replace("\n", "\n  ")
    yield "\n}\n"
