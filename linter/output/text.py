"""The text output for people, in three layouts (as ruff's ``--output-format``), then a summary.

- ``full`` (the default; ``text`` is the same): ``path:line:col: severity CODE message``, one line
  per finding, with the ``fix:`` hint under a finding that has one.
- ``concise``: the same line per finding, nothing under it.

In ``full`` a file's findings follow one ``path: note: judged against ...`` line that says which
framework release or checkout they were judged against (in ``grouped`` under the file's name;
``concise`` leaves it out).
- ``grouped``: the file's path on a line of its own, then its findings indented as
  ``line:col severity CODE message``, a blank line between files.

Paths are normalised and relative to the current directory where the file lies under it
(:func:`trainlint.output.display_path`). With ``fix_marks`` (``check``, which can apply fixes), a
finding ``--fix`` fixes is marked ``[*]`` after its code, and a footer after the summary says how
many are fixable with ``--fix`` and how many more with ``--unsafe-fixes`` (as ruff's). A ``fix:``
line under a finding is the hint a person reads, whether or not anything can apply it: the ``[*]``
says which ``--fix`` applies.

Every piece taken from a config or a file name goes through :func:`printable` before any colour
is added (:mod:`trainlint.output.style`), so one finding is one line and only trainlint's own
escape sequences reach a terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Sequence

from trainlint.core.results import FileResult
from trainlint.core.diagnostics import Diagnostic
from trainlint.output import display_path, fixable_line
from trainlint.output.report import as_report
from trainlint.core.escape import printable
from trainlint.output.style import PLAIN, Style

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.output.report import Report

LAYOUTS = ("full", "concise", "grouped")
"""The text layouts; ``text`` is another name of ``full`` (the spelling before the layouts)."""


def _finding(d: Diagnostic, *, fix_marks: bool, unsafe: bool, style: Style) -> str:
    """``severity CODE [*] message``: the part of a finding's line after its place."""
    mark = " [*]" if fix_marks and d.applies(unsafe) else ""
    return f"{style.severity(d.severity)} {style.code(d.code)}{mark} {printable(d.message)}"


def render(results: Sequence[FileResult] | Report, *, show_summary: bool = True, fix_marks: bool = False,
           unsafe: bool = False, layout: str = "full", style: Style = PLAIN) -> str:
    """``fix_marks``: mark what ``--fix`` fixes and add the footer; ``unsafe``: ``--unsafe-fixes``
    was given, so unsafe fixes count as fixable. ``layout``: one of :data:`LAYOUTS` (or ``text``)."""
    return "".join(render_lines(results, show_summary=show_summary, fix_marks=fix_marks, unsafe=unsafe,
                                layout=layout, style=style))


def render_lines(results: Sequence[FileResult] | Report, *, show_summary: bool = True, fix_marks: bool = False,
                 unsafe: bool = False, layout: str = "full", style: Style = PLAIN) -> Iterator[str]:
    """:func:`render`'s text a line at a time (each with its line break), one file after another."""
    report = as_report(results)
    grouped = layout == "grouped"
    any_line = False
    for entry in report.entries():
        if not entry.diagnostics:
            continue
        path = style.path(printable(display_path(entry.path)))
        if grouped:
            if any_line:
                yield "\n"
            yield f"{path}:\n"
        any_line = True
        if entry.target is not None and layout != "concise":
            # which framework the findings below are about: once per file, not a tail on each
            # finding (issue 28); a ``note`` line, so that every finding line keeps its severity
            note = f"{style.dim('note:')} {printable(entry.target['statement'])}"
            yield f"  {note}\n" if grouped else f"{path}: {note}\n"
        for d in entry.diagnostics:
            finding = _finding(d, fix_marks=fix_marks, unsafe=unsafe, style=style)
            if grouped:
                yield f"  {d.line}:{d.column} {finding}\n"
            else:
                # one finding, one line: config text and file names cannot start lines of their own
                yield f"{path}:{d.line}:{d.column}: {finding}\n"
            if d.fix and layout not in ("concise",):
                indent = "      " if grouped else "    "
                yield f"{indent}{style.dim('fix:')} {printable(d.fix)}\n"
    if show_summary:
        if grouped and any_line:
            yield "\n"
        yield report.summary_line() + "\n"
        footer = fixable_line(report.fixable_count(unsafe), unsafe) if fix_marks else None
        if footer:
            yield footer + "\n"
