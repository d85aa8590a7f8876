"""What ``check`` reports, made one file at a time as each file's result comes back.

:class:`CheckReport` takes each linted result in check order (:meth:`CheckReport.add`) and does at
once everything that needs the result alone: the framework-source note once per run (TL014),
the baseline (each recorded finding matches its first occurrences in run order), the exit code,
``--min-severity``; then it hands what is left to the :class:`~trainlint.output.report.Report`,
which keeps a small record per file. What needs the whole run waits for :meth:`CheckReport.finish`:
the unused suppressions (a comment can be used by a script read later), the plugin failures
(reported first), the unused ``per-file-ignores`` entries (last), the baselines' counts. Then the
report is rendered in pieces straight to the output. The report is the one a list of every result
gave (the list form, :func:`trainlint.commands.check.report`, is this class fed from the list).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from trainlint.core.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.core.results import FileResult
    from trainlint.project.session import Session


@dataclass
class _Owner:
    """One project config's part of the report: its unused suppressions and its baseline."""

    session: Session
    unused: Any
    baseline: Any = None
    """A baseline.Matcher for the config's own ``baseline`` (None without one, or with --baseline)."""
    baseline_path: str | None = None
    has_files: bool = False


@dataclass
class CheckReport:
    """``check``'s report, made one result at a time (see the module's docstring)."""

    args: argparse.Namespace
    session: Session
    """The session that renders (the first project config's)."""
    sessions: Sequence[Session]
    """Every session whose files are reported, the rendering one first."""
    keep: bool = False
    """Keep the results (as the list form returns them); a check keeps none."""
    once_per_run: bool = False
    """Say the framework-source note (TL014) once over the run (``check``: each worker says it once)."""
    files: int | None = None
    """How many files the check reads (its plan's count), when known: a report of a few keeps their findings
    in memory (``output.report.spooled``)."""
    report: Any = None
    _owners: list[_Owner] = field(default_factory=list)
    _command_line: Any = None
    _command_line_path: str | None = None
    _failed = False
    _error = False
    _count = 0
    _seen_notes: set = field(default_factory=set)
    _kept: list = field(default_factory=list)
    _for_baseline: list = field(default_factory=list)
    """--write-baseline: (index, owner, result) of each result with findings (or suppression comments)."""

    def __post_init__(self) -> None:
        from trainlint.project.unused_suppressions import UnusedSuppressions

        if self.report is None:
            from trainlint.output.report import Report, spooled

            self.report = Report() if self.keep else spooled(self.files)
        args = self.args
        command_line = bool(getattr(args, "baseline", None) or getattr(args, "write_baseline", None))
        for one in _distinct([self.session, *self.sessions]):
            owner = _Owner(one, UnusedSuppressions(one.settings.selection, one.project,
                                                   one.project.report_unused_per_file_ignores))
            if hasattr(args, "baseline") and not command_line:
                owner.baseline_path = baseline_file(args, one)
                owner.baseline = _matcher(owner.baseline_path)
            self._owners.append(owner)
        if hasattr(args, "baseline") and getattr(args, "baseline", None) and not getattr(args, "write_baseline", None):
            self._command_line_path = baseline_file(args, self.session)
            self._command_line = _matcher(self._command_line_path)
        self._owners[0].has_files = True  # the rendering session reports its plugin failures and baseline always

    @property
    def writes_baseline(self) -> bool:
        return bool(getattr(self.args, "write_baseline", None))

    # ------------------------------------------------------------------ one file at a time

    def add(self, result: FileResult, owner: Session | None = None) -> None:
        """The next result of the run (linted), from ``owner``'s files (default: the rendering session's)."""
        index = self._count
        self._count += 1
        mine = self._owner(owner or self.session)
        mine.has_files = True
        if self.once_per_run:
            result = self._once_per_run(result)
        mine.unused.add(result, index)
        if self.writes_baseline and (result.diagnostics or mine.unused.has_comments(index)):
            # the baseline is written from every finding first (a file whose suppression comments may be
            # unused may get TL020 findings at the end); a result with neither is reported now, as it
            # would be after: the baseline leaves nothing out of it
            self._for_baseline.append((index, mine, result))
            return
        self._report(self._baselined(result, mine), (1, index, 0))

    def _owner(self, session: Session) -> _Owner:
        return next(o for o in self._owners if o.session is session)

    def _once_per_run(self, result: FileResult) -> FileResult:
        """The first TL014 note per framework source of the whole run (see ``locate.once_per_run``)."""
        keep = []
        for d in result.diagnostics:
            if d.code == "TL014" and d.related:
                key = d.related[0].path or d.message
                if key in self._seen_notes:
                    continue
                self._seen_notes.add(key)
            keep.append(d)
        return result if len(keep) == len(result.diagnostics) else replace(result, diagnostics=keep)

    def _baselined(self, result: FileResult, owner: _Owner | None) -> FileResult:
        if self._command_line is not None:
            return self._command_line.filter(result)
        if owner is not None and owner.baseline is not None:
            return owner.baseline.filter(result)
        return result

    def _report(self, result: FileResult, seq: tuple[int, int, int]) -> None:
        self._exit(result.diagnostics)
        if self.keep:
            self._kept.append((seq, result))
        self.report.add(self._shown(result), seq)

    def _exit(self, diagnostics: Sequence[Any]) -> None:
        for d in diagnostics:
            if d.code in ("TL998", "TL999"):
                self._failed = True
            elif d.severity.value == "error":
                self._error = True

    def _shown(self, result: FileResult) -> FileResult:
        """Only the findings at --min-severity or above (the exit code is counted before)."""
        return at_least([result], getattr(self.args, "min_severity", "info"))[0]

    # ------------------------------------------------------------------ the end of the run

    def finish(self, out: Any = None, render: Any = None) -> tuple[list, int]:
        """Add what needs the whole run, render the report to ``out`` (stdout), return the results
        (when kept) and the exit code. Raises BaselineError."""
        if self.writes_baseline:
            self._write_baseline()
        self._end_of_run()
        stream = out or sys.stdout
        for piece in render(self.report, self.args, self.session, self.baseline(), stream=stream):
            stream.write(piece)
        self.report.close()
        code = EXIT_ERROR if self._failed else EXIT_CLEAN if getattr(self.args, "exit_zero", False) else (
            EXIT_FINDINGS if self._error else EXIT_CLEAN)
        return self._results(), code

    def _end_of_run(self) -> None:
        extra = 0
        for owner in self._owners:
            if not owner.has_files:
                continue
            for index, path, found in owner.unused.inline_findings():
                # added to the result that read the file, whose entry has its format already
                kept = self._baselined_findings(path, found, owner)
                self._exit(kept)
                if self.keep:
                    self._kept.append(((1, index, 1), (path, kept)))
                self.report.add_findings(path, self._shown_findings(kept), (1, index, 1))
        for position, owner in enumerate(self._owners):
            if not owner.has_files:
                continue
            failures = owner.session.plugin_failures()
            for k, failure in enumerate(failures):
                if self._command_line is not None:
                    failure = self._command_line.filter(failure)
                self._report(failure, (0, position, k))
        for owner in self._owners:
            if not owner.has_files:
                continue
            stale = owner.unused.per_file_result()
            if stale is not None:
                self._report(self._baselined(stale, owner), (2, extra, 0))
                extra += 1
        # said on stderr as each baseline was applied: each config's own, in order, or the one named
        for owner in self._owners:
            if owner.has_files and owner.baseline is not None:
                from trainlint.project import baseline as baselines  # only with a baseline: hashlib's import is ~3% of a cold check

                print(baselines.describe(owner.baseline.outcome(), str(owner.baseline_path)), file=sys.stderr)
        if self._command_line is not None:
            from trainlint.project import baseline as baselines

            print(baselines.describe(self._command_line.outcome(), str(self._command_line_path)), file=sys.stderr)

    def baseline(self) -> tuple | None:
        """(path, Outcome) of the baseline the json and sarif outputs describe: the one named, else
        the first config's that has one."""
        if self._command_line is not None:
            return (self._command_line_path, self._command_line.outcome())
        for owner in self._owners:
            if owner.has_files and owner.baseline is not None:
                return (owner.baseline_path, owner.baseline.outcome())
        return None

    def _baselined_findings(self, path: str, found: list, owner: _Owner) -> list:
        from trainlint.core.results import FileResult

        return self._baselined(FileResult(path, None, list(found)), owner).diagnostics

    def _shown_findings(self, found: list) -> list:
        from trainlint.core.results import FileResult

        return self._shown(FileResult("", None, list(found))).diagnostics

    def _write_baseline(self) -> None:
        """--write-baseline: every finding recorded (the unused suppressions with them), then the
        baseline just written applied as any other (it leaves out everything it recorded)."""
        from trainlint.project import baseline as baselines

        results: list = [result for _, _, result in self._for_baseline]
        indexes = [index for index, _, _ in self._for_baseline]
        self._for_baseline = []
        by_index = {index: i for i, index in enumerate(indexes)}
        extra: list = []
        failures: list = []
        for owner in self._owners:
            if not owner.has_files:
                continue
            for index, _, found in owner.unused.inline_findings():
                i = by_index[index]
                results[i] = replace(results[i], diagnostics=[*results[i].diagnostics, *found])
            failures += owner.session.plugin_failures()
            stale = owner.unused.per_file_result()
            if stale is not None:
                extra.append(stale)
        path = self.args.write_baseline
        everything = failures + results + extra
        count = baselines.write(everything, path)
        print(f"Wrote {count} finding{'s' if count != 1 else ''} to the baseline {path}.", file=sys.stderr)
        self._command_line_path = path
        self._command_line = _matcher(path)
        for owner in self._owners:
            owner.unused = _Nothing()  # reported with the results above
        for k, result in enumerate(failures):
            self._report(self._command_line.filter(result), (0, 0, k))
        for index, result in zip(indexes, results, strict=True):
            self._report(self._command_line.filter(result), (1, index, 0))
        for k, result in enumerate(extra):
            self._report(self._command_line.filter(result), (2, k, 0))
        for owner in self._owners:
            owner.has_files = False  # their failures and extras are reported above

    def _results(self) -> list:
        """The results as the list form returns them: plugin failures, each file's (with its unused
        suppressions), the run-level ones; after the baseline, before --min-severity."""
        if not self.keep:
            return []
        files: dict[tuple, Any] = {}
        added: dict[int, list] = {}
        for seq, item in self._kept:
            if seq[2] == 1:
                added.setdefault(seq[1], []).extend(item[1])
            else:
                files[seq] = item
        out = []
        for seq in sorted(files):
            result = files[seq]
            if seq[0] == 1 and seq[1] in added:
                result = replace(result, diagnostics=[*result.diagnostics, *added[seq[1]]])
            out.append(result)
        return out

    # ------------------------------------------------------------------ rendering

class _Nothing:
    """No unused suppressions to add (already added)."""

    def has_comments(self, index: int) -> bool:
        return False

    def inline_findings(self) -> list:
        return []

    def per_file_result(self) -> None:
        return None

    def add(self, result: Any, index: int) -> None:
        pass


def at_least(results: list, level: str) -> list:
    """The results with only the findings at ``level`` or above (--min-severity); the same list for info.
    The exit code is computed before this filter, so hiding warnings never changes it."""
    if level == "info":
        return results
    from dataclasses import replace

    from trainlint.core.diagnostics import Severity

    rank = Severity(level).rank
    return [replace(r, diagnostics=[d for d in r.diagnostics if d.severity.rank >= rank]) for r in results]


def baseline_file(args: argparse.Namespace, session: Session) -> str | None:
    """--baseline, else ``baseline`` in the project config (relative to the config's folder)."""
    if getattr(args, "baseline", None):
        return args.baseline
    configured = session.project.baseline
    if configured and not getattr(args, "write_baseline", None):
        return str(Path(session.project.root or ".") / configured)
    return None


def _matcher(path: str | None) -> Any:
    if not path:
        return None  # no baseline in play: the module (and hashlib) is never imported
    from trainlint.project import baseline as baselines

    return baselines.Matcher(baselines.load(path))


def _distinct(sessions: Sequence[Session]) -> list[Session]:
    out: list[Session] = []
    for one in sessions:
        if not any(one is s for s in out):
            out.append(one)
    return out
