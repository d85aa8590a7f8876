"""``path:line:col: CODE message``, one line per diagnostic, then a summary.

With ``fix_marks`` (``check``, which can apply fixes), a finding ``--fix`` fixes is marked ``[*]``
after its code, and a footer after the summary says how many are fixable with ``--fix`` and how
many more with ``--unsafe-fixes`` (as ruff's). A ``fix:`` line under a finding is the hint a
person reads, whether or not anything can apply it: the ``[*]`` says which ``--fix`` applies.
"""

from __future__ import annotations

from typing import Sequence

from trainlint.checker import FileResult
from trainlint.output import file_entries, fixable_count, fixable_line, summary_line
from trainlint.output.escape import printable


def render(results: Sequence[FileResult], *, show_summary: bool = True, fix_marks: bool = False,
           unsafe: bool = False) -> str:
    """``fix_marks``: mark what ``--fix`` fixes and add the footer; ``unsafe``: ``--unsafe-fixes``
    was given, so unsafe fixes count as fixable."""
    lines = []
    for entry in file_entries(results):
        if entry.target is not None and entry.diagnostics:
            # which framework the findings below are about: once per file, not a tail on each
            lines.append(printable(f"{entry.path}: {entry.target['statement']}"))
        for d in entry.diagnostics:
            mark = " [*]" if fix_marks and d.applies(unsafe) else ""
            # one finding, one line: config text and file names cannot start lines of their own
            lines.append(printable(f"{entry.path}:{d.line}:{d.column}: {d.code}{mark} {d.message}"))
            if d.fix:
                lines.append(f"    fix: {printable(d.fix)}")
    if show_summary:
        lines.append(summary_line(results))
        footer = fixable_line(fixable_count(results, unsafe), unsafe) if fix_marks else None
        if footer:
            lines.append(footer)
    return "\n".join(lines) + ("\n" if lines else "")
