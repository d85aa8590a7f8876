"""``--statistics`` (as ruff): how often each code was reported, most frequent first."""

from __future__ import annotations

import json
from collections import Counter
from typing import Sequence

from trainlint.checker import FileResult


def counts(results: Sequence[FileResult]) -> list[dict]:
    seen: Counter = Counter()
    info: dict[str, tuple[str, str]] = {}
    for result in results:
        for d in result.diagnostics:
            seen[d.code] += 1
            info.setdefault(d.code, (d.name, d.severity.value))
    return [{"code": code, "name": info[code][0], "severity": info[code][1], "count": n}
            for code, n in sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))]


def render(results: Sequence[FileResult], fmt: str = "text") -> str:
    rows = counts(results)
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    if not rows:
        return ""
    width = max(len(str(r["count"])) for r in rows)
    name_width = max(len(r["name"]) for r in rows)
    return "".join(f"{r['count']:>{width}}  {r['code']}  {r['name']:<{name_width}}  {r['severity']}\n" for r in rows)
