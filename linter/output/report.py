"""A report fed one checked file at a time: what every output format reads, kept small.

``trainlint check`` gives each file's result to :meth:`Report.add` as soon as the file is linted,
and keeps nothing else of it. The report keeps, per file of the report (one entry however its path
is spelled), only its name, format, framework target and where its findings are stored; the
findings themselves go to a :class:`Store`: in memory for a report made from a list of results
(:meth:`Report.of`: ``trainlint run``, the language server, tests), and for ``check`` a temporary
file that stays in memory up to :data:`SPOOL_BYTES` (:class:`SpoolStore`), so the memory of a
check is flat in the number of files while the report stays exactly the one a list of every
result would give.

Why findings are stored rather than printed at once: the report is ordered by each file's first
mention, and a file's entry is complete only at the end of the run. A file sourced by several
launch scripts gets findings from each of them (shown once when they are alike); a script read
before the file that sources it, a later script sourcing an already reported file, or the run-level
findings (plugin failures, which come first; unused ``per-file-ignores``, which come last) can all
add to an entry after it was first named. Each finding is stored with the position of its result
in the run (``seq``), so the entries come out as :func:`trainlint.output.file_entries` orders a list
of every result: by first mention, a file's findings sorted, a finding several results share once.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Protocol, Sequence

from trainlint.core.diagnostics import Diagnostic

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.output.entries import FileEntry, FixableCount
    from trainlint.core.results import FileResult

SPOOL_BYTES = 256 * 1024
"""Findings of a check kept in memory before they go to a temporary file: a few hundred files'
worth, so that the memory a check ends with does not depend on how many files it checked."""

Seq = tuple[int, int, int]
"""Where a result stands in the run: (part, index, order). Part 0: plugin failures (reported
first), 1: the checked files in check order, 2: run-level findings after them; ``order`` 1 for
findings added to a file's result at the end of the run (its unused suppressions)."""


_PLACES = 1 << 28
"""Mentions of files within one result told apart in the packed order (more are ordered as the last)."""


def _packed(seq: Seq) -> int:
    """``seq`` as one int ordered as the tuple (a record per file: one int, not two tuples), with
    room for the place of a mention within the result."""
    part, index, order = seq
    return ((part << 40 | index) << 1 | order) * _PLACES


class Store(Protocol):
    def put(self, diagnostics: list[Diagnostic]) -> Any: ...

    def get(self, handle: Any) -> list[Diagnostic]: ...

    def close(self) -> None: ...


class MemoryStore:
    """The findings as they are (a report of a list of results, which is in memory anyway)."""

    def put(self, diagnostics: list[Diagnostic]) -> Any:
        return diagnostics

    def get(self, handle: Any) -> list[Diagnostic]:
        return list(handle)

    def close(self) -> None:
        pass


_LENGTH_BITS = 40
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1


class SpoolStore:
    """The findings pickled into a buffer that moves to a temporary file past ``max_size`` bytes
    (:class:`Spool`), each batch found again by its offset."""

    def __init__(self, max_size: int = SPOOL_BYTES) -> None:
        self.file = Spool(max_size)

    def put(self, diagnostics: list[Diagnostic]) -> Any:
        import pickle  # here: a check of a few files keeps its findings in a MemoryStore (spooled())

        offset, length = self.file.append(pickle.dumps(diagnostics, protocol=pickle.HIGHEST_PROTOCOL))
        return offset << _LENGTH_BITS | length  # one int, not a tuple of two: a handle is kept per file

    def get(self, handle: Any) -> list[Diagnostic]:
        import pickle

        found: list[Diagnostic] = pickle.loads(self.file.read_at(handle >> _LENGTH_BITS, handle & _LENGTH_MASK))
        return found

    def close(self) -> None:
        self.file.close()


class Spool:
    """Bytes appended in memory up to ``max_size``, then in an anonymous temporary file (gone when
    closed, or when the process ends). Where no temporary file can be made (a read-only or full
    temporary folder) the bytes stay in memory: a report is worth more than its memory."""

    def __init__(self, max_size: int = SPOOL_BYTES) -> None:
        self.max_size = max_size
        self.memory: io.BytesIO | None = io.BytesIO()
        self.disk: Any = None
        self.end = 0

    def append(self, data: bytes) -> tuple[int, int]:
        """Where ``data`` is: (offset, length)."""
        if self.memory is not None and self.end + len(data) > self.max_size:
            self._to_disk()
        offset = self.end
        target = self.memory if self.memory is not None else self.disk
        target.seek(offset)
        target.write(data)
        self.end += len(data)
        return offset, len(data)

    def read_at(self, offset: int, length: int) -> bytes:
        source = self.memory if self.memory is not None else self.disk
        source.seek(offset)
        data: bytes = source.read(length)
        return data

    def _to_disk(self) -> None:
        import tempfile

        assert self.memory is not None
        try:
            disk = tempfile.TemporaryFile(prefix="trainlint-")  # noqa: SIM115 - closed by close()
            disk.write(self.memory.getbuffer())
        except OSError:
            self.max_size = 1 << 62  # no temporary file here: stay in memory
            return
        self.disk, self.memory = disk, None

    def close(self) -> None:
        if self.disk is not None:
            self.disk.close()
        self.memory = None


class _Entry:
    """One file of the report while the run goes on."""

    __slots__ = ("checked", "first", "format", "format_seq", "own", "own_seq", "parts", "spelling", "target",
                 "target_seq")

    def __init__(self, first: int, spelling: str) -> None:
        self.first = first
        """The first mention: its result's seq and its place among that result's mentions, packed."""
        self.spelling = spelling
        """The first spelling met (a finding's path), when no result names the file itself."""
        self.own: str | None = None
        """The spelling of the first result that is this file (or a member of its run)."""
        self.own_seq: int | None = None
        self.format: str | None = None
        self.format_seq: int | None = None
        self.target: dict | None = None
        self.target_seq: int | None = None
        self.parts: tuple[int, Any] | list[tuple[int, Any]] | None = None
        """(seq, store handle) of the batch of this file's findings, or a list of them when there are
        several (most files have one: no list for them)."""
        self.checked: str | set[str] | None = None
        """The spelling(s) under which the file was checked (read as a config, or with a finding): the
        summary counts each spelling once, as it counted a set of them (no set per file: most have one)."""


@dataclass
class Tally:
    """What the summary and the footers count, over the findings as the entries show them."""

    severities: Counter
    fixable: dict[bool, tuple[int, int]]
    """unsafe -> (fixable, fixable only with --unsafe-fixes)."""


class Report:
    """The files of a report and their findings, fed one result at a time (:meth:`add`)."""

    def __init__(self, store: Store | None = None) -> None:
        self.store: Store = store if store is not None else MemoryStore()
        self._entries: dict[str, _Entry] = {}
        self._skipped = 0
        self._targets: dict[str, dict] = {}
        self._tally: Tally | None = None
        self._next = 0

    @classmethod
    def of(cls, results: Iterable[FileResult]) -> Report:
        report = cls()
        for result in results:
            report.add(result)
        return report

    # ------------------------------------------------------------------ feeding

    def add(self, result: FileResult, seq: Seq | None = None) -> None:
        """One result, as reported (after baselines and --min-severity). ``seq``: its place in the
        run (default: after every result added so far)."""
        from trainlint.frameworks.target import target_of
        from trainlint.output.entries import _same_file

        if seq is None:
            seq = (1, self._next, 0)
            self._next += 1
        order = _packed(seq)
        self._tally = None
        counted = bool(result.format or result.diagnostics)
        if not counted:
            self._skipped += 1
        members = result.run or [result.path]
        for place, member in enumerate(members):
            entry = self._entry(_same_file(member), member, order + min(place, _PLACES - 1))
            if entry.own_seq is None or order < entry.own_seq:
                entry.own, entry.own_seq = member, order
            self._format(entry, result.format, order)
            if counted:
                _mark_checked(entry, member)
        home = self._entries[_same_file(result.path)]
        target = target_of(result)  # kept in the result when its specs were dropped
        if target is not None and (home.target_seq is None or order < home.target_seq):
            home.target, home.target_seq = self._shared(target), order
        self.add_findings(result.path, result.diagnostics, seq, result.format, first_place=len(members))

    def add_findings(self, path: str, diagnostics: Sequence[Diagnostic], seq: Seq, fmt: str | None = None, *,
                     first_place: int = 0) -> None:
        """Findings of the result at ``seq`` whose home is ``path`` (each goes to the entry of its own
        file: a finding of a launch script can lie in the file it sources)."""
        from trainlint.output.entries import _same_file

        self._tally = None
        order = _packed(seq)
        by_file: dict[str, list[Diagnostic]] = {}
        for place, diagnostic in enumerate(diagnostics, start=first_place):
            where = diagnostic.path or path
            key = _same_file(where)
            entry = self._entry(key, where, order + min(place, _PLACES - 1))
            self._format(entry, fmt, order)
            by_file.setdefault(key, []).append(diagnostic)
        for key, found in by_file.items():
            entry = self._entries[key]
            part = (order, self.store.put(found))
            if entry.parts is None:
                entry.parts = part
            elif isinstance(entry.parts, tuple):
                entry.parts = [entry.parts, part]
            else:
                entry.parts.append(part)

    def _entry(self, key: str, spelling: str, first: int) -> _Entry:
        entry = self._entries.get(key)
        if entry is None:
            # an absolute spelling is its own key: one string kept for the file, not two
            entry = self._entries[spelling if key == spelling else key] = _Entry(first, spelling)
        elif first < entry.first:  # a result placed before the others (a plugin failure): its spelling
            entry.first, entry.spelling = first, spelling
        return entry

    @staticmethod
    def _format(entry: _Entry, fmt: str | None, seq: int) -> None:
        # the first format any mention gives, in run order (a file read on its own as no config
        # is still what the runs that read it say)
        if fmt and (entry.format_seq is None or seq < entry.format_seq):
            entry.format, entry.format_seq = fmt, seq

    def _shared(self, target: dict) -> dict:
        """One dict for equal targets: thousands of files judged against one release share it."""
        key = json.dumps(target, sort_keys=True, default=str)
        return self._targets.setdefault(key, target)

    # ------------------------------------------------------------------ reading

    def entries(self) -> Iterator[FileEntry]:
        """One entry per file in order of first mention, each with its findings sorted, a finding
        several results report alike shown once (see :func:`trainlint.output.file_entries`)."""
        from trainlint.output.entries import FileEntry, _identity

        severities: Counter = Counter()
        fixable = {False: [0, 0], True: [0, 0]}
        for entry in sorted(self._entries.values(), key=lambda e: e.first):
            found: list[Diagnostic] = []
            seen: set[tuple] = set()
            parts = [entry.parts] if isinstance(entry.parts, tuple) else entry.parts or []
            for _, handle in sorted(parts, key=lambda part: part[0]):
                for diagnostic in self.store.get(handle):
                    identity = _identity(diagnostic)
                    if identity not in seen:
                        seen.add(identity)
                        found.append(diagnostic)
            found.sort(key=Diagnostic.sort_key)
            for d in found:
                severities[d.severity] += 1
                for unsafe, counts in fixable.items():
                    if d.applies(unsafe):
                        counts[0] += 1
                    elif d.applies(True):
                        counts[1] += 1
            yield FileEntry(entry.own or entry.spelling, entry.format, found, entry.target)
        self._tally = Tally(severities, {k: (v[0], v[1]) for k, v in fixable.items()})

    def tally(self) -> Tally:
        if self._tally is None:
            for _ in self.entries():
                pass
        assert self._tally is not None
        return self._tally

    def severity_counts(self) -> Counter:
        return Counter(self.tally().severities)

    def fixable_count(self, unsafe: bool = False) -> FixableCount:
        from trainlint.output.entries import FixableCount

        return FixableCount(*self.tally().fixable[unsafe])

    def summary_line(self) -> str:
        from trainlint.output.entries import summary_text

        checked = sum(0 if e.checked is None else 1 if isinstance(e.checked, str) else len(e.checked)
                      for e in self._entries.values())
        return summary_text(self.severity_counts(), checked, self._skipped)

    def close(self) -> None:
        self.store.close()


def _mark_checked(entry: _Entry, spelling: str) -> None:
    if entry.checked is None:
        entry.checked = spelling
    elif isinstance(entry.checked, str):
        if entry.checked != spelling:
            entry.checked = {entry.checked, spelling}
    else:
        entry.checked.add(spelling)


def as_report(results: Report | Sequence[FileResult]) -> Report:
    """``results`` as a :class:`Report` (a list of results is read into one)."""
    return results if isinstance(results, Report) else Report.of(results)


HELD_FILES = 16
"""A check of at most this many files keeps their findings as they are (:class:`MemoryStore`): their
memory is bounded by the count already, and a cold check of one file does not import pickle
(~2% of its instructions, issue 33)."""


def spooled(files: int | None = None) -> Report:
    """A report for a check of ``files`` files (None: any number): findings spooled out of memory,
    unless they are few (:data:`HELD_FILES`)."""
    if files is not None and files <= HELD_FILES:
        return Report(MemoryStore())
    return Report(SpoolStore())
