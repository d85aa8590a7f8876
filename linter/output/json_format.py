"""``--format json``: one object, ``{"files": [{"path", "format", "diagnostics": [...]}]}``."""

from __future__ import annotations

import json
from typing import Sequence

from trainlint.checker import FileResult
from trainlint.output import file_entries


def render(results: Sequence[FileResult], *, baseline: tuple | None = None) -> str:
    """``baseline``: (path, Outcome) when a baseline left findings out: a ``"baseline"`` object
    says how many (``suppressed``) and how many recorded ones no longer occur (``stale``)."""
    files = [
        {"path": e.path, "format": e.format, "diagnostics": [d.to_dict() for d in e.diagnostics],
         **({"target": e.target} if e.target is not None else {})}
        for e in file_entries(results)
    ]
    data: dict = {"files": files}
    if baseline is not None:
        path, outcome = baseline
        data["baseline"] = {"path": path, "suppressed": outcome.suppressed, "stale": outcome.stale}
    return json.dumps(data, indent=2) + "\n"
