"""``--format markdown``: a summary for a CI job page (``>> "$GITHUB_STEP_SUMMARY"``).

A heading and the summary line, then (when there is anything to show) counts by severity, the
findings (errors first), and counts per rule. GitHub keeps at most 1 MiB of summary per step,
so the findings table stops after :data:`MAX_ROWS` rows and says how many it left out.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

from trainlint.core.results import FileResult
from trainlint.core.diagnostics import Diagnostic, Severity
from trainlint.core.escape import printable
from trainlint.output.report import as_report
from trainlint.output.statistics import code_counts

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.output.report import Report

MAX_ROWS = 500
ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.*?[^`])\1(?!`)", re.S)
"""A code span as CommonMark reads it: a run of N backticks, text, and the next run of exactly N
(a value holding backticks is quoted with a longer fence: :func:`trainlint.core.diagnostics.code`)."""


def _spans(text: str) -> list[str]:
    """``text`` cut into text and code spans, alternating (text first, as ``re.split`` gives)."""
    out, pos = [], 0
    for match in CODE_SPAN.finditer(text):
        out += [text[pos:match.start()], match.group()]
        pos = match.end()
    return out + [text[pos:]]


def cell(text: str) -> str:
    """Message text that can neither break its table row nor turn into HTML.

    Messages quote keys and values as `code`: those spans are kept, with their pipes escaped
    (GitHub splits cells first) and line breaks shown as ``\\r`` ``\\n`` (a ``<br>`` would show
    literally inside code; a key can hold a newline). Elsewhere backslashes are doubled (none may
    escape the ``\\|`` that stands for a pipe), ``& < >`` become entities, a stray backtick is
    escaped and line breaks become ``<br>``."""
    parts = []
    # line breaks are handled below; every other control, bidi or surrogate character is escaped
    text = printable(text, keep="\r\n")
    for i, part in enumerate(_spans(text)):
        if i % 2:
            parts.append(part.replace("\r", "\\r").replace("\n", "\\n").replace("|", "\\|"))
            continue
        part = part.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        part = inert(part.replace("`", "\\`").replace("|", "\\|").replace("[", "\\[").replace("]", "\\]"))
        parts.append(part.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>"))
    return "".join(parts)


_AUTOLINK = re.compile(r"(?i)(:)(?=//)|(?<=www)(\.)|(@)")


def inert(text: str) -> str:
    """Markdown text outside code spans with GitHub's autolinks defused: the ``:`` of ``://``, the
    ``.`` of ``www.`` and every ``@`` backslash-escaped (each renders as itself). A value that closes
    a code span early (it holds a backtick) leaves the rest of it as text: that text must open no
    link or image either (``[`` ``]`` are escaped by the callers)."""
    return _AUTOLINK.sub(lambda m: "\\" + m.group(), text) if (":" in text or "@" in text or "ww" in text.lower()) else text


def literal(text: str) -> str:
    """A path shown as it is: the characters that would format or break a cell escaped."""
    text = printable(text)
    out = inert("".join(f"\\{c}" if c in "\\`*_[]|~" else c for c in text))
    return out.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def rule_link(code: str, name: str, registry: Any) -> str:
    """``[TL201](docs/rules.md#tl201-oom-risk) oom-risk`` for trainlint's own codes."""
    from trainlint.core.input_codes import INPUT_CODES
    from trainlint.rules.docs import help_uri

    rule = registry.rules.get(code) if registry is not None else None
    builtin = code in INPUT_CODES or (rule is not None and getattr(rule, "plugin", "").startswith("trainlint"))
    return (f"[{code}]({help_uri(code, name)})" if builtin and name else code) + (f" {name}" if name else "")


def _findings(report: Report, max_rows: int) -> tuple[list[tuple[str, Diagnostic]], int]:
    """The first ``max_rows`` findings, errors first (in file order within a severity), each with
    its path relative to the repository root as in the annotations; and how many there are. Only
    the rows shown are kept: at most ``max_rows`` of each severity."""
    from trainlint.output.github import display_path
    from trainlint.output.sarif import source_root

    root = source_root()
    kept: dict[Severity, list[tuple[str, Diagnostic]]] = {s: [] for s in ORDER}
    total = 0
    for entry in report.entries():
        for d in entry.diagnostics:
            total += 1
            rows = kept[d.severity]
            if len(rows) < max_rows:
                rows.append((display_path(d.path or entry.path, root), d))
    return [row for s in ORDER for row in kept[s]][:max_rows], total


def render(results: Sequence[FileResult] | Report, *, registry: Any = None, max_rows: int | None = None) -> str:
    max_rows = MAX_ROWS if max_rows is None else max_rows
    report = as_report(results)
    counts = report.severity_counts()
    out = ["## trainlint", "", report.summary_line(), ""]
    if not sum(counts.values()):
        out.append("No problems found.")
        return "\n".join(out) + "\n"
    out += ["| severity | count |", "|---|---:|"]
    out += [f"| {s.value} | {counts[s]} |" for s in ORDER if counts[s]]
    findings, total = _findings(report, max_rows)
    out += ["", "### Findings", "", "| location | code | severity | message |", "|---|---|---|---|"]
    for path, d in findings:
        message = d.message + (f"\nfix: {d.fix}" if d.fix else "")
        out.append(f"| {literal(f'{path}:{d.line}:{d.column}')} | {rule_link(d.code, d.name, registry)} | "
                   f"{d.severity.value} | {cell(message)} |")
    if total > max_rows:
        out += ["", f"{total - max_rows} more findings not shown (the job log and the SARIF list all)."]
    out += ["", "### By rule", "", "| code | rule | severity | count |", "|---|---|---|---:|"]
    out += [f"| {row.code} | {row.name} | {row.severity.value} | {row.count} |" for row in code_counts(report)]
    return "\n".join(out) + "\n"
