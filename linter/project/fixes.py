"""``check --fix`` / ``--diff``: the findings' fixes, applied as text edits in each file's own format.

A fix is a finding's ``edits`` (the adapters and rules fill them; see
:class:`trainlint.core.diagnostics.Edit`; a rule's layout ``changes`` are written by the run's adapter
and turned into edits with :func:`edits_between`). Which fixes apply is the finding's ``applicability``: safe
ones with ``--fix``, unsafe ones too with ``--unsafe-fixes``, display-only ones never.

Computing the change is pure (:func:`plan`): the edits of one file, sorted, a fix whose edits
overlap an earlier fix's left for the next run (as ruff does), applied to the text the check
read. Writing goes through :mod:`trainlint.files.safe_write` (atomic replace, the file's encoding, line
ends and permissions kept, nothing written when the file changed since it was read). The caller
re-checks what was written and reverts a fix that did not remove its finding (:func:`verify`).
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from trainlint.core.diagnostics import Diagnostic, Edit
from trainlint.core.positions import Span


@dataclass(frozen=True)
class Fix:
    """One finding's fix: its edits, all in ``path``."""

    path: str
    diagnostic: Diagnostic
    edits: tuple[Edit, ...]

    @property
    def identity(self) -> tuple[str, str, str]:
        """What the finding is, independent of where it is: after a fix the same finding at
        another line is still the same finding."""
        return (self.path, self.diagnostic.code, self.diagnostic.message)


@dataclass
class FilePlan:
    path: str
    fixes: list[Fix] = field(default_factory=list)
    deferred: list[Fix] = field(default_factory=list)
    """Fixes whose edits overlap an applied one (the next run applies them)."""


def applies(diagnostic: Diagnostic, unsafe: bool) -> bool:
    """Whether ``--fix`` (``unsafe``: with ``--unsafe-fixes``) applies the finding's fix
    (:meth:`Diagnostic.applies`, which every face's "fixable" mark uses too)."""
    return diagnostic.applies(unsafe)


def collect(results: Iterable, unsafe: bool) -> dict[str, FilePlan]:
    """The fixes to apply, per file, from checked results (``FileResult``)."""
    plans: dict[str, FilePlan] = {}
    seen: set[tuple] = set()
    for result in results:
        for diagnostic in result.diagnostics:
            if not applies(diagnostic, unsafe):
                continue
            home = diagnostic.path or result.path
            paths = {edit.path or home for edit in diagnostic.edits}
            if len(paths) != 1:
                continue  # a fix over several files is not applied piecemeal
            path = paths.pop()
            key = (path, diagnostic.code, diagnostic.span, diagnostic.edits)
            if key in seen:  # a file checked in two runs reports its finding twice
                continue
            seen.add(key)
            plans.setdefault(path, FilePlan(path)).fixes.append(Fix(path, diagnostic, diagnostic.edits))
    for plan_ in plans.values():
        _drop_overlaps(plan_)
    return plans


def _drop_overlaps(file_plan: FilePlan) -> None:
    """Keep the fixes whose edits overlap no kept fix's, in the order of their first edit."""
    kept: list[Fix] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for fix in sorted(file_plan.fixes, key=lambda f: min(e.span for e in f.edits)):
        ranges = [((e.span.line, e.span.column), (e.span.end_line, e.span.end_column)) for e in fix.edits]
        if any(_overlap(r, t) for r in ranges for t in taken) or any(
                _overlap(a, b) for i, a in enumerate(ranges) for b in ranges[i + 1:]):
            file_plan.deferred.append(fix)
            continue
        kept.append(fix)
        taken.extend(ranges)
    file_plan.fixes = kept


def _overlap(a: tuple, b: tuple) -> bool:
    # two insertions at one point overlap too (their order would be a guess)
    if a[0] == a[1] and b[0] == b[1]:
        return a[0] == b[0]
    return a[0] < b[1] and b[0] < a[1]


class EditOutsideText(ValueError):
    """An edit's span is not inside the text (the file changed since it was read)."""


def _offsets(text: str) -> list[int]:
    starts = [0]
    position = text.find("\n")
    while position != -1:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    return starts


def _offset(starts: list[int], text: str, line: int, column: int) -> int:
    if not 1 <= line <= len(starts):
        raise EditOutsideText(f"line {line} is outside the text")
    line_end = starts[line] - 1 if line < len(starts) else len(text)
    offset = starts[line - 1] + column - 1
    if not starts[line - 1] <= offset <= line_end:
        raise EditOutsideText(f"column {column} is outside line {line}")
    return offset


def apply(text: str, fixes: Sequence[Fix]) -> str:
    """``text`` with every edit of ``fixes`` (non-overlapping) applied. Spans are 1-based code
    points of the text as trainlint read it (``\\n`` line ends)."""
    starts = _offsets(text)
    edits: list[tuple[int, int, str]] = []
    for fix in fixes:
        for edit in fix.edits:
            span: Span = edit.span
            edits.append((_offset(starts, text, span.line, span.column),
                          _offset(starts, text, span.end_line, span.end_column), edit.content))
    out = text
    for start, end, content in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + content + out[end:]
    return out


def edits_between(before: str, after: str, path: str | None = None) -> tuple[Edit, ...]:
    """The edits that turn ``before`` into ``after`` (an adapter's writer gives a new text; a fix is
    edits, so that fixes of other findings in the same file apply beside it and one that overlaps
    waits for the next run). A line changed in place gives one edit per changed run of words on it,
    so that the fix covers only the words it rewrites (issue 27); lines added or removed give one
    edit per run of whole lines."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    last_line = before.count("\n") + 1  # lines as Span counts them (an empty last one after a final newline)

    def start(index: int) -> tuple[int, int]:
        """Where old line ``index`` (0-based) starts; past the end: the end of the text."""
        if index + 1 <= last_line:
            return index + 1, 1
        tail = before.rsplit("\n", 1)[-1]
        return last_line, len(tail) + 1

    def at(index: int, offset: int) -> tuple[int, int]:
        """Where character ``offset`` of old line ``index`` is (its line break: the next line's start)."""
        line = old[index]
        if offset >= len(line) and line.endswith("\n"):
            return start(index + 1)
        return index + 1, offset + 1

    edits = []
    for tag, i1, i2, j1, j2 in _opcodes(old, new):
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                edits.extend(_word_edits(old[i1 + k], new[j1 + k], i1 + k, at, path))
            continue
        (line, column), (end_line, end_column) = start(i1), start(i2)
        edits.append(Edit(Span(line, column, end_line, end_column), "".join(new[j1:j2]), path))
    return tuple(edits)


_TOKEN = re.compile(r"\s+|[^\s]+")


def _word_edits(old_line: str, new_line: str, index: int, at, path: str | None) -> list[Edit]:
    """The edits turning one line into another, one per changed run of words (and blanks)."""
    old_tokens, new_tokens = _TOKEN.findall(old_line), _TOKEN.findall(new_line)
    offsets = [0]
    for token in old_tokens:
        offsets.append(offsets[-1] + len(token))
    out = []
    for tag, a1, a2, b1, b2 in _opcodes(old_tokens, new_tokens):
        if tag == "equal":
            continue
        (line, column), (end_line, end_column) = at(index, offsets[a1]), at(index, offsets[a2])
        out.append(Edit(Span(line, column, end_line, end_column), "".join(new_tokens[b1:b2]), path))
    return out


_DIFF_WORK = 1_000_000
"""The largest (old items x new items) the differ compares item by item; beyond it the changed middle
is one replacement. SequenceMatcher is quadratic on repeated items (700 KB of comment lines took
13 s), and a writer's change touches a few lines: the common head and tail are cut first."""


def _opcodes(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes from ``old`` to ``new``, linear in the common head and tail."""
    shortest = min(len(old), len(new))
    head = 0
    while head < shortest and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < shortest - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    old_mid, new_mid = old[head:len(old) - tail], new[head:len(new) - tail]
    if not old_mid and not new_mid:
        return []
    middle: Sequence[tuple[str, int, int, int, int]]
    if len(old_mid) * len(new_mid) > _DIFF_WORK:
        middle = [("replace" if old_mid and new_mid else "delete" if old_mid else "insert",
                   0, len(old_mid), 0, len(new_mid))]
    else:
        middle = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False).get_opcodes()
    return [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle]


def unified_diff(path: str, before: str, after: str) -> str:
    """The change as a unified diff (``--- a/path`` / ``+++ b/path``), as git shows it.

    ``before`` and ``after`` are the file's texts as its bytes hold them
    (:func:`trainlint.files.safe_write.texts_as_written`): lines are split at ``\\n`` only, so a
    ``\\r\\n`` line keeps its ``\\r`` (and a BOM stays on the first line), as ``git apply`` and
    ``patch`` compare them; a last line without a line end is marked ``\\ No newline at end of file``."""
    name = _diff_path(path)
    lines = difflib.unified_diff(_lines(before), _lines(after), fromfile=f"a/{name}", tofile=f"b/{name}")
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _diff_path(path: str) -> str:
    """``path`` as a diff names it: the file (a symlink followed: ``git apply`` patches no link)
    relative to the current directory when below it, without ``./`` or ``..`` (``git apply``
    refuses ``a/./x.json``), with ``/`` separators; else as named, absolute."""
    for named, start in ((os.path.realpath(path), os.path.realpath(os.curdir)), (os.path.abspath(path), None)):
        try:
            relative = os.path.relpath(named, start)
        except ValueError:  # another drive (Windows)
            continue
        if not (relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative)):
            return relative.replace(os.sep, "/")
    return os.path.abspath(path).replace(os.sep, "/")


def _lines(text: str) -> list[str]:
    """``text`` cut after each ``\\n`` (``str.splitlines`` would also cut at ``\\r``, form feeds and
    U+2028, which no diff tool treats as line ends)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def persisting(fixes: Iterable[Fix], results_before: Iterable, results_after: Iterable) -> list[Fix]:
    """The fixes whose finding is still reported after they were applied. Findings are compared
    by what they say (file, code, message), not by line (a fix can move lines), and counted: two
    equal findings, one fixed, leave one behind, and that is not the fixed one persisting."""
    from collections import Counter

    def count(results: Iterable) -> Counter:
        return Counter((d.path or r.path, d.code, d.message) for r in results for d in r.diagnostics)

    before, after = count(results_before), count(results_after)
    fixes = list(fixes)
    fixed = Counter(fix.identity for fix in fixes)
    failed = {identity for identity, k in fixed.items() if after[identity] > before[identity] - k}
    return [fix for fix in fixes if fix.identity in failed]
