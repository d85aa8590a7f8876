"""TL020 unused-suppression: suppressions that suppress nothing (as ruff's RUF100).

An inline ``# trainlint: disable...`` comment names codes; when no finding of one of them was
suppressed by it, the comment is stale and would hide a future finding: reported (on by
default). A ``per-file-ignores`` entry that turned no finding off is reported only with
``report-unused-per-file-ignores = true`` (ignores are often set ahead for files to come).

Usage is gathered from every result of the run (the rule engine records it in
``FileResult.used_suppressions``), so that a comment used by one run of a shared file is used.
A selector for a code that is not selected at all is not reported: it could not have been used.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache
from typing import Sequence

from trainlint.core.results import FileResult
from trainlint.core.diagnostics import Diagnostic
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.positions import Span
from trainlint.project.suppressions import ALL_CODES, Directive, Suppressions

CODE = "TL020"


@cache
def _full_code() -> re.Pattern[str]:
    # compiled when a run has a suppression comment, not at every start
    return re.compile(r"[A-Z]+[0-9]+\Z")


def _could_fire(selector: str, selection, path: str) -> bool:
    """False for a code the selection turns off everywhere (nothing of it is ever checked)."""
    if selection is None or selector == ALL_CODES or not _full_code().match(selector.upper()):
        return True
    return selection.enabled(selector.upper(), "", None)


def _inline_findings(path: str, suppressions: Suppressions, used: set, selection) -> list[Diagnostic]:
    out = []
    for directive in suppressions.directives:
        unused = [s for s in directive.selectors if ("inline", path, directive.line, s) not in used
                  and _could_fire(s, selection, path)]
        if not unused:
            continue
        out.append(input_diagnostic(CODE, _message(directive, unused), _span(directive), path=path,
                                    fix=_fix_hint(directive, unused)))
    return out


def _message(directive: Directive, unused: list[str]) -> str:
    if unused == [ALL_CODES]:
        return f"`# trainlint: {directive.kind}` suppresses nothing here: no finding to suppress"
    names = ", ".join(f"`{s}`" for s in unused)
    return (f"unused suppression: {names} in `# trainlint: {directive.kind}` "
            f"suppress{'es' if len(unused) == 1 else ''} no finding")


def _fix_hint(directive: Directive, unused: list[str]) -> str:
    if unused == [ALL_CODES] or set(unused) == set(directive.codes):
        return "remove the comment"
    keep = [c for c in directive.codes if c not in unused]
    return f"keep only {', '.join(keep)}"


def _span(directive: Directive) -> Span:
    return Span(directive.line, directive.column, directive.line, directive.end_column)


def report_unused(results: Sequence[FileResult], selection=None, project=None,
                  per_file_ignores: bool = False) -> list[FileResult]:
    """``results`` with a TL020 added for every suppression nothing used, in the file that has it
    (per-file-ignores entries: in the project config). TL020 itself obeys the selection."""
    unused = UnusedSuppressions(selection, project, per_file_ignores)
    if not unused.enabled:
        return list(results)
    for index, result in enumerate(results):
        unused.add(result, index)
    out = list(results)
    for index, _, found in unused.inline_findings():
        out[index] = replace(out[index], diagnostics=[*out[index].diagnostics, *found])
    stale = unused.per_file_result()
    if stale is not None:
        out.append(stale)
    return out


class UnusedSuppressions:
    """:func:`report_unused` fed one result at a time (``check`` keeps no results): what each
    result used is gathered as it comes, the suppression comments of each file read on its own are
    kept only when it has some, and they are judged at the end of the run (a comment in a file that
    a later script sources can still be used by that script)."""

    def __init__(self, selection=None, project=None, per_file_ignores: bool = False) -> None:
        self.selection = selection
        self.project = project
        self.per_file_ignores = per_file_ignores
        self.enabled = selection is None or selection.enabled(CODE, "unused-suppression", None)
        self.used: set = set()
        self._seen: set[str] = set()
        """The files with a suppression comment, each kept once (a file without one is not remembered:
        reading it again, when a later run includes it, finds none again)."""
        self._files: list[tuple[int, str, Suppressions]] = []

    def add(self, result: FileResult, index: int) -> None:
        """``result``, the ``index``-th of the run (its TL020 findings are given with that index)."""
        from trainlint.project.engine import suppressions_of

        if not self.enabled:
            return
        self.used |= result.used_suppressions
        if result.format is None:
            return
        for path in result.run or [result.path]:
            if path in self._seen:
                continue
            if self.selection is not None and not self.selection.enabled(CODE, "unused-suppression", path):
                continue
            if result.comments is not None:  # a reduced result: its comments were parsed with its text
                suppressions = next((found for where, found in result.comments if where == path), None)
                if suppressions is None:
                    continue
            else:
                suppressions = suppressions_of(path, result, {})
            if suppressions.directives:
                self._seen.add(path)
                self._files.append((index, path, suppressions))

    def has_comments(self, index: int) -> bool:
        """Whether the ``index``-th result read a file with a suppression comment (its TL020 findings,
        if any, are given with that index at the end of the run)."""
        return bool(self._files) and self._files[-1][0] == index

    def inline_findings(self) -> list[tuple[int, str, list[Diagnostic]]]:
        """(index of the result, file, its TL020 findings) for every file with an unused comment, in run order."""
        out = []
        for index, path, suppressions in self._files:
            found = _inline_findings(path, suppressions, self.used, self.selection)
            if found:
                out.append((index, path, found))
        return out

    def per_file_result(self) -> FileResult | None:
        """The unused ``per-file-ignores`` entries, as a result of the project config (None when none)."""
        project = self.project
        if not (self.enabled and self.per_file_ignores and project is not None and project.path
                and project.per_file_ignores):
            return None
        stale = _per_file_findings(project, self.used, self.selection)
        return FileResult(project.path, None, stale) if stale else None


def _per_file_findings(project, used: set, selection) -> list[Diagnostic]:
    try:
        from trainlint.files.sources import read_bounded_text

        lines = read_bounded_text(project.path).split("\n")
    except (OSError, UnicodeDecodeError):
        lines = []
    out = []
    for pattern, selectors in project.per_file_ignores.items():
        unused = [s for s in selectors if ("per-file", pattern, s) not in used and _could_fire(s, selection, pattern)]
        if not unused:
            continue
        span = _where(lines, pattern)
        names = ", ".join(f"`{s}`" for s in unused)
        out.append(input_diagnostic(
            CODE, f"unused per-file-ignores entry: {names} for \"{pattern}\" turned off no finding",
            span, path=project.path, fix="remove the entry" if len(unused) == len(selectors) else f"remove {names}"))
    return out


def _where(lines: list[str], pattern: str) -> Span:
    """The line of the config that names ``pattern`` (its quoted key), else the file's start."""
    for quoted in (f'"{pattern}"', f"'{pattern}'"):
        for number, line in enumerate(lines, start=1):
            column = line.find(quoted)
            if column >= 0:
                return Span(number, column + 1, number, column + 1 + len(quoted))
    return Span(1, 1, 1, 1)
