"""``--statistics`` (as ruff's): how often each code was reported, most frequent first.

Replaces the findings. Text: ``count  CODE  [*] name  severity`` rows, ``[*]`` marking codes
some of whose findings ``check --fix`` fixes (with ``--unsafe-fixes`` given, its fixes too), then
the summary line and the fixable footer of the text output. ``--format json``: a list of
``{code, name, count, severity, fixable}``; ``--format markdown``: the same as a table. A code reported at
several severities (a rule that errs or warns by degree, a project severity override) has one row
per severity, each counting its own findings (TL004: 897 warnings and 2 errors, not 899 "errors").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from trainlint.core.results import FileResult
from trainlint.core.diagnostics import Severity
from trainlint.output import fixable_line
from trainlint.output.report import as_report

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.output.report import Report


@dataclass
class CodeCount:
    code: str
    name: str
    severity: Severity
    count: int = 0
    fixes: int = 0
    """How many of the findings ``check --fix`` fixes."""

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name, "count": self.count, "severity": self.severity.value,
                "fixable": self.fixes > 0}


def code_counts(results: Sequence[FileResult] | Report, fix_marks: bool = False, unsafe: bool = False) -> list[CodeCount]:
    """One row per code over the same findings the other formats list; by count, then code.
    ``fix_marks``: count what ``--fix`` fixes (``unsafe``: with ``--unsafe-fixes``)."""
    rows: dict[tuple[str, Severity], CodeCount] = {}
    for entry in as_report(results).entries():
        for d in entry.diagnostics:
            row = rows.setdefault((d.code, d.severity), CodeCount(d.code, d.name, d.severity))
            row.count += 1
            row.fixes += fix_marks and d.applies(unsafe)
    return sorted(rows.values(), key=lambda r: (-r.count, r.code, -r.severity.rank))


def counts(results: Sequence[FileResult] | Report) -> list[dict[str, Any]]:
    return [row.to_dict() for row in code_counts(results)]


def render_text(rows: list[CodeCount]) -> list[str]:
    if not rows:
        return []
    width = max(len(str(r.count)) for r in rows)
    code_width = max(len(r.code) for r in rows)
    name_width = max(len(r.name) for r in rows)
    return [f"{r.count:>{width}}  {r.code:<{code_width}}  {'[*]' if r.fixes else '   '} {r.name:<{name_width}}  "
            f"{r.severity.value}".rstrip() for r in rows]


def render_markdown(rows: list[CodeCount], results: Sequence[FileResult] | Report) -> list[str]:
    out = ["## trainlint statistics", "", as_report(results).summary_line(), ""]
    if not rows:
        return out + ["No problems found."]
    out += ["| count | code | rule | severity |", "|---:|---|---|---|"]
    return out + [f"| {r.count} | {r.code} | {r.name} | {r.severity.value} |" for r in rows]


def render(results: Sequence[FileResult] | Report, fmt: str = "text", *, show_summary: bool = True,
           fix_marks: bool = False, unsafe: bool = False) -> str:
    results = as_report(results)
    rows = code_counts(results, fix_marks, unsafe)
    if fmt == "json":
        return json.dumps([r.to_dict() for r in rows], indent=2) + "\n"
    if fmt == "markdown":
        return "\n".join(render_markdown(rows, results)) + "\n"
    lines = render_text(rows)
    if show_summary:
        lines.append(results.summary_line())
        footer = fixable_line(results.fixable_count(unsafe), unsafe) if fix_marks else None
        if footer:
            lines.append(footer)
    return "\n".join(lines) + ("\n" if lines else "")
