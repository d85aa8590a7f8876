"""``path:line:col: CODE message``, one line per diagnostic, then a summary."""

from __future__ import annotations

from typing import Sequence

from trainlint.checker import FileResult
from trainlint.output import file_entries, summary_line
from trainlint.output.escape import printable


def render(results: Sequence[FileResult], *, show_summary: bool = True) -> str:
    lines = []
    for entry in file_entries(results):
        if entry.target is not None and entry.diagnostics:
            # which framework the findings below are about: once per file, not a tail on each
            lines.append(printable(f"{entry.path}: {entry.target['statement']}"))
        for d in entry.diagnostics:
            # one finding, one line: config text and file names cannot start lines of their own
            lines.append(printable(f"{entry.path}:{d.line}:{d.column}: {d.code} {d.message}"))
            if d.fix:
                lines.append(f"    fix: {printable(d.fix)}")
    if show_summary:
        lines.append(summary_line(results))
    return "\n".join(lines) + ("\n" if lines else "")
