"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

``::error file=F,line=L,col=C,endLine=..,endColumn=..,title=CODE name::message``, escaped as the
runner's command parser expects (data: ``%`` ``\\r`` ``\\n``; properties also ``:`` and ``,``),
info findings as ``notice``; then the summary line as plain text."""

from __future__ import annotations

from typing import Sequence

from trainlint.checker import FileResult
from trainlint.diagnostics import Severity
from trainlint.output import file_entries, summary_line

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(results: Sequence[FileResult]) -> str:
    lines = []
    for entry in file_entries(results):
        for d in entry.diagnostics:
            span = d.span
            props = [f"file={escape_property(d.path or entry.path)}", f"line={span.line}", f"col={span.column}"]
            if (span.end_line, span.end_column) > (span.line, span.column):
                props += [f"endLine={span.end_line}", f"endColumn={span.end_column}"]
            props.append(f"title={escape_property(f'{d.code} {d.name}')}")
            message = d.message + (f"\nfix: {d.fix}" if d.fix else "")
            lines.append(f"::{COMMANDS[d.severity]} {','.join(props)}::{escape_data(message)}")
    lines.append(summary_line(results))
    return "\n".join(lines) + "\n"
