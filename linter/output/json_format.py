"""``--format json``: one object, ``{"files": [{"path", "format", "diagnostics": [...]}]}``."""

from __future__ import annotations

import json
from typing import Sequence

from trainlint.checker import FileResult
from trainlint.output import file_entries


def render(results: Sequence[FileResult]) -> str:
    files = [
        {"path": e.path, "format": e.format, "diagnostics": [d.to_dict() for d in e.diagnostics]}
        for e in file_entries(results)
    ]
    return json.dumps({"files": files}, indent=2) + "\n"
