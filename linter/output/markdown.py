"""``--format markdown``: a summary for a CI job page (``>> $GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from trainlint.checker import FileResult
from trainlint.diagnostics import Severity
from trainlint.output import file_entries, severity_counts, summary_line

ICONS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "info"}


def cell(text: str) -> str:
    """Table-safe: no pipes or newlines may break the row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", "<br>")


def render(results: Sequence[FileResult]) -> str:
    entries = file_entries(results)
    counts = severity_counts(results)
    out = ["## trainlint", "", summary_line(results), ""]
    if not sum(counts.values()):
        out.append("No problems found.")
        return "\n".join(out) + "\n"
    out += ["| severity | count |", "|---|---:|"]
    out += [f"| {s.value} | {counts[s]} |" for s in (Severity.ERROR, Severity.WARNING, Severity.INFO) if counts[s]]
    out += ["", "| location | code | severity | message |", "|---|---|---|---|"]
    by_rule: Counter = Counter()
    for entry in entries:
        for d in entry.diagnostics:
            by_rule[(d.code, d.name)] += 1
            message = d.message + (f" (fix: {d.fix})" if d.fix else "")
            out.append(f"| `{cell(d.path or entry.path)}:{d.line}:{d.column}` | {d.code} {d.name} | "
                       f"{ICONS[d.severity]} | {cell(message)} |")
    out += ["", "| code | rule | count |", "|---|---|---:|"]
    out += [f"| {code} | {name} | {n} |" for (code, name), n in sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(out) + "\n"
