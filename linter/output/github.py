"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

``::error file=F,line=L,col=C,endLine=..,endColumn=..,title=CODE name::F:L:C: CODE message``,
escaped as the runner's command parser expects (data: ``%`` ``\\r`` ``\\n``; properties also
``:`` and ``,``); info findings are ``notice``. Files are relative to the repository root (see
:func:`trainlint.output.sarif.source_root`), which is where GitHub looks for them. The message
repeats ``path:line:col: CODE`` because the log shows only the message: a step keeps at most 10
annotations of each kind, the log keeps every line. Then the summary line as plain text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

from trainlint.core.results import FileResult
from trainlint.core.diagnostics import Diagnostic, Severity
from trainlint.output.report import as_report
from trainlint.core.escape import printable
from trainlint.output.sarif import is_pseudo_path, relative_path, source_root
from trainlint.core.positions import Span

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.output.report import Report

BREAKS = "\r\n"
"""Left to escape_data, which encodes them as %0D %0A (shown as line breaks inside one annotation)."""
COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """The message after ``::`` (@actions/core ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A ``key=value`` property (@actions/core ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic, path: str) -> str:
    """One workflow command. ``col``/``endColumn`` only on a one-line span: GitHub rejects
    them when ``line`` and ``endLine`` differ."""
    span = d.span
    props = [] if is_pseudo_path(path) else _position(path, span)  # "<command line>": no file
    props.append(f"title={escape_property(printable(f'{d.code} {d.name}', keep=BREAKS))}")
    # control characters from the config are shown escaped (an ESC would reach the log viewer);
    # line breaks are encoded by escape_data (%0A), so they cannot start a command of their own
    message = printable(f"{path}:{span.line}:{span.column}: {d.code} {d.message}" + (
        f"\nfix: {d.fix}" if d.fix else ""), keep=BREAKS)
    return f"::{COMMANDS[d.severity]} {','.join(props)}::{escape_data(message)}"


def _position(path: str, span: Span) -> list[str]:
    props = [f"file={escape_property(printable(path, keep=BREAKS))}", f"line={span.line}"]
    one_line = span.end_line == span.line
    if one_line:
        props.append(f"col={span.column}")
    if (span.end_line, span.end_column) > (span.line, span.column):
        props.append(f"endLine={span.end_line}")
        if one_line:
            props.append(f"endColumn={span.end_column}")
    return props


def display_path(path: str, root: Path) -> str:
    """Relative to the repository root when the file is in it, else as given."""
    if is_pseudo_path(path):
        return path
    return relative_path(path, root) or path


def render(results: Sequence[FileResult] | Report, *, root: str | None = None) -> str:
    return "".join(render_lines(results, root=root))


def render_lines(results: Sequence[FileResult] | Report, *, root: str | None = None) -> Iterator[str]:
    """:func:`render`'s text a line at a time, one file after another."""
    report = as_report(results)
    base = Path(root).resolve() if root is not None else source_root()
    for entry in report.entries():
        for d in entry.diagnostics:
            yield annotation(d, display_path(d.path or entry.path, base)) + "\n"
    yield report.summary_line() + "\n"
