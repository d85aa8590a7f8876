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
from array import array
from collections import Counter
from itertools import pairwise
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


_PLACE_BITS = 20
_INDEX_BITS = 40
_PLACES = 1 << _PLACE_BITS
"""Mentions of files within one result told apart in the packed order (more are ordered as the last)."""


def _packed(seq: Seq) -> int:
    """``seq`` as one int ordered as the tuple, with room for the place of a mention within the
    result: 2 bits of part, 40 of index, 1 of order, 20 of place (63 bits: it fits the report's
    ``array('q')`` columns, 8 bytes a file instead of an int object each)."""
    part, index, order = seq
    return ((part << _INDEX_BITS | index) << 1 | order) << _PLACE_BITS


class Store(Protocol):
    def put(self, diagnostics: list[Diagnostic]) -> int: ...

    def get(self, handle: int) -> list[Diagnostic]: ...

    def close(self) -> None: ...


class MemoryStore:
    """The findings as they are (a report of a list of results, which is in memory anyway)."""

    def __init__(self) -> None:
        self.batches: list[list[Diagnostic]] = []

    def put(self, diagnostics: list[Diagnostic]) -> int:
        self.batches.append(diagnostics)
        return len(self.batches) - 1

    def get(self, handle: int) -> list[Diagnostic]:
        return list(self.batches[handle])

    def close(self) -> None:
        pass


class SpoolStore:
    """The findings pickled into a buffer that moves to a temporary file past ``max_size`` bytes
    (:class:`Spool`), each batch found again by its number (its offset in an ``array('q')``: 8 bytes
    a batch, the handle a small int)."""

    def __init__(self, max_size: int = SPOOL_BYTES) -> None:
        self.file = Spool(max_size)
        self.offsets = array("q")

    def put(self, diagnostics: list[Diagnostic]) -> int:
        import pickle  # here: a check of a few files keeps its findings in a MemoryStore (spooled())

        offset, _ = self.file.append(pickle.dumps(diagnostics, protocol=pickle.HIGHEST_PROTOCOL))
        self.offsets.append(offset)
        return len(self.offsets) - 1

    def get(self, handle: int) -> list[Diagnostic]:
        import pickle

        start = self.offsets[handle]
        stop = self.offsets[handle + 1] if handle + 1 < len(self.offsets) else self.file.end
        found: list[Diagnostic] = pickle.loads(self.file.read_at(start, stop - start))
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


@dataclass
class Tally:
    """What the summary and the footers count, over the findings as the entries show them."""

    severities: Counter
    fixable: dict[bool, tuple[int, int]]
    """unsafe -> (fixable, fixable only with --unsafe-fixes)."""


_NONE = -1
"""No seq (packed seqs are >= 0) in the report's ``array('q')`` columns."""


class Report:
    """The files of a report and their findings, fed one result at a time (:meth:`add`).

    A file's record is a row of columns, not an object: a long run keeps a few hundred thousand of
    them alive beside each file's short-lived garbage, and many small objects per file cost their
    size about twice over in a fragmented heap (issue 33). Per row: ``_first``, the first mention
    (its result's seq and its place among that result's mentions, packed); ``_spelling``, the first
    spelling met (a finding's path); ``_own_seq``, the seq of the first result that is this file (or
    a member of its run), whose spelling is in the sparse ``_own`` only where it differs from
    ``_spelling``; the first format any mention gives and its seq; the framework target and its seq;
    the (seq, store handle) of the first batch of the file's findings, the others (rare) in the
    sparse ``_more_parts``; ``_checked``: the spelling(s) under which the file was checked (read as
    a config, or with a finding), a string, or a set for the rare file checked under several: the
    summary counts each spelling once."""

    def __init__(self, store: Store | None = None) -> None:
        self.store: Store = store if store is not None else MemoryStore()
        self._rows: dict[str, int] = {}
        self._first = array("q")
        self._spelling: list[str] = []
        self._own_seq = array("q")
        self._own: dict[int, str] = {}
        self._format: list[str | None] = []
        self._format_seq = array("q")
        self._target: list[dict | None] = []
        self._target_seq = array("q")
        self._part_seq = array("q")
        self._part = array("q")
        self._more_parts: dict[int, list[tuple[int, int]]] = {}
        self._checked: list[str | set[str] | None] = []
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
            row = self._row(_same_file(member), member, order + min(place, _PLACES - 1))
            own_seq = self._own_seq[row]
            if own_seq == _NONE or order < own_seq:
                self._own_seq[row] = order
                if member == self._spelling[row]:
                    self._own.pop(row, None)
                else:
                    self._own[row] = member
            self._set_format(row, result.format, order)
            if counted:
                self._mark_checked(row, member)
        home = self._rows[_same_file(result.path)]
        target = target_of(result)  # kept in the result when its specs were dropped
        if target is not None:
            target_seq = self._target_seq[home]
            if target_seq == _NONE or order < target_seq:
                self._target[home], self._target_seq[home] = self._shared(target), order
        self.add_findings(result.path, result.diagnostics, seq, result.format, first_place=len(members))

    def add_findings(self, path: str, diagnostics: Sequence[Diagnostic], seq: Seq, fmt: str | None = None, *,
                     first_place: int = 0) -> None:
        """Findings of the result at ``seq`` whose home is ``path`` (each goes to the entry of its own
        file: a finding of a launch script can lie in the file it sources)."""
        from trainlint.output.entries import _same_file

        self._tally = None
        order = _packed(seq)
        by_row: dict[int, list[Diagnostic]] = {}
        for place, diagnostic in enumerate(diagnostics, start=first_place):
            where = diagnostic.path or path
            row = self._row(_same_file(where), where, order + min(place, _PLACES - 1))
            self._set_format(row, fmt, order)
            by_row.setdefault(row, []).append(diagnostic)
        for row, found in by_row.items():
            handle = self.store.put(found)
            if self._part_seq[row] == _NONE:
                self._part_seq[row], self._part[row] = order, handle
            else:
                self._more_parts.setdefault(row, []).append((order, handle))

    def _row(self, key: str, spelling: str, first: int) -> int:
        row = self._rows.get(key)
        if row is None:
            row = len(self._spelling)
            # an absolute spelling is its own key: one string kept for the file, not two
            self._rows[spelling if key == spelling else key] = row
            self._first.append(first)
            self._spelling.append(spelling)
            self._own_seq.append(_NONE)
            self._format.append(None)
            self._format_seq.append(_NONE)
            self._target.append(None)
            self._target_seq.append(_NONE)
            self._part_seq.append(_NONE)
            self._part.append(0)
            self._checked.append(None)
        elif first < self._first[row]:  # a result placed before the others (a plugin failure): its spelling
            if self._own_seq[row] != _NONE and row not in self._own:
                self._own[row] = self._spelling[row]  # the own spelling was the one replaced
            self._first[row], self._spelling[row] = first, spelling
            if self._own.get(row) == spelling:
                del self._own[row]
        return row

    def _set_format(self, row: int, fmt: str | None, seq: int) -> None:
        # the first format any mention gives, in run order (a file read on its own as no config
        # is still what the runs that read it say)
        if fmt:
            format_seq = self._format_seq[row]
            if format_seq == _NONE or seq < format_seq:
                self._format[row], self._format_seq[row] = fmt, seq

    def _mark_checked(self, row: int, spelling: str) -> None:
        checked = self._checked[row]
        if checked is None:
            self._checked[row] = spelling
        elif isinstance(checked, str):
            if checked != spelling:
                self._checked[row] = {checked, spelling}
        else:
            checked.add(spelling)

    def _shared(self, target: dict) -> dict:
        """One dict for equal targets: thousands of files judged against one release share it."""
        key = json.dumps(target, sort_keys=True, default=str)
        return self._targets.setdefault(key, target)

    def _parts(self, row: int) -> list[tuple[int, int]]:
        """(seq, store handle) of each batch of the row's findings, in run order."""
        if self._part_seq[row] == _NONE:
            return []
        parts = [(self._part_seq[row], self._part[row]), *self._more_parts.get(row, ())]
        return sorted(parts, key=lambda part: part[0]) if len(parts) > 1 else parts

    # ------------------------------------------------------------------ reading

    def _in_order(self) -> Iterable[int]:
        """The rows by first mention: as they are when the results came in run order (a check with
        ``--jobs 1``: no list of an int object per file at the end), else sorted (stable: ties in
        the order they came)."""
        first = self._first
        if all(a <= b for a, b in pairwise(first)):
            return range(len(first))
        return sorted(range(len(first)), key=first.__getitem__)

    def entries(self) -> Iterator[FileEntry]:
        """One entry per file in order of first mention, each with its findings sorted, a finding
        several results report alike shown once (see :func:`trainlint.output.file_entries`)."""
        from trainlint.output.entries import FileEntry, _identity

        severities: Counter = Counter()
        fixable = {False: [0, 0], True: [0, 0]}
        for row in self._in_order():
            found: list[Diagnostic] = []
            seen: set[tuple] = set()
            for _, handle in self._parts(row):
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
            spelling = self._spelling[row]
            own = None if self._own_seq[row] == _NONE else self._own.get(row, spelling)
            yield FileEntry(own or spelling, self._format[row], found, self._target[row])
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

        checked = sum(0 if c is None else 1 if isinstance(c, str) else len(c) for c in self._checked)
        return summary_text(self.severity_counts(), checked, self._skipped)

    def close(self) -> None:
        self.store.close()


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
