"""A fix changes only what it names: the file is read again by its adapter and compared.

A fix is text edits. What it *names* is read off the edits themselves: every word an edit writes,
and, when the edit replaces like for like (no more words than it writes: ``--hiden-size`` by
``--hidden-size``, a key by its new spelling, a value by another, the lines a layout fix rewrites),
the words it replaces and every value written inside them. An edit that replaces more words than it
writes names only what it writes: the words it drops are changes it does not name. After the edits are
applied, the file (and the run it belongs to) is read again by the same adapter, and every value
the file wrote before and after is compared: a setting no fix names must keep its value, its
spelling and its place (moved only by the edits before it). A fix that would change anything
else (a continued string whose other flags it deletes, a key next to the one it renames) is
refused with the reason; ``check --fix`` / ``--diff`` and the language server's quick fixes use
this same check.

Only values whose origin is the file are compared (defaults and derived values follow from them).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from trainlint.core.diagnostics import Edit
from trainlint.core.positions import LineIndex, Span

_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*|--?[A-Za-z0-9_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True)
class Written:
    """One value as a file writes it: the value, its spelling and where (path, span)."""

    value: Any
    key: str | None
    path: str | None
    span: Span | None


@dataclass(frozen=True)
class Refusal:
    """Why a set of edits is not applied: the settings it would change that it does not name."""

    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return "; ".join(self.reasons)


def _same_path(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a == b
    return a == b or os.path.abspath(a) == os.path.abspath(b)


def written_values(results: Iterable[Any]) -> dict[tuple, Written]:
    """Every value the results' specs took from a file, by (result path, run index, name)."""
    from trainlint.core.provenance import Origin

    out: dict[tuple, Written] = {}
    for result in results:
        for index, spec in enumerate(result.specs):
            entries = list(spec.items()) + [(f"settings.{name}", v) for name, v in spec.settings.items()]
            for name, entry in entries:
                prov = entry.provenance
                if prov.origin is not Origin.FILE:
                    continue
                out[(result.path, index, name)] = Written(_comparable(entry.value), prov.key, prov.path, prov.span)
            for name, prov in spec.unresolved.items():
                out[(result.path, index, f"unresolved.{name}")] = Written("(unresolved)", prov.key, prov.path, prov.span)
    return out


def _comparable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _norm(word: str) -> str:
    return word.lstrip("-").replace("-", "_").lower()


@dataclass
class _FileEdits:
    """The edits of one file, with the text before and after, to say what they name and to move positions."""

    path: str
    before: str
    after: str
    edits: list[tuple[int, int, str]]  # (start, end) offsets in ``before``, new content
    words: set[str]
    like_for_like: list[tuple[int, int]]
    """The replaced ranges that name what is written in them (see the module's docstring)."""

    def __post_init__(self) -> None:
        self._before_index = LineIndex(self.before)
        self._after_index = LineIndex(self.after)
        self._before_starts = [0] + [m.end() for m in re.finditer("\n", self.before)]

    def offset(self, line: int, column: int) -> int:
        starts = self._before_starts
        if line < 1:
            return 0
        if line > len(starts):
            return len(self.before)
        return min(starts[line - 1] + column - 1, len(self.before))

    def touches(self, span: Span) -> bool:
        """Whether a value written at ``span`` (before) lies in, or against, text an edit replaces."""
        start, end = self.offset(span.line, span.column), self.offset(span.end_line, span.end_column)
        return any((a < end and start < b) or (a == b and start <= a <= end) or (start == end and a <= start <= b)
                   for a, b in self.like_for_like)

    def writes(self, span: Span) -> bool:
        """Whether a value read at ``span`` of the text *after* the edits lies in text an edit wrote
        (a value that only exists once the fix writes it: a string the fix turns into a number)."""
        starts = [0] + [m.end() for m in re.finditer("\n", self.after)]

        def offset(line: int, column: int) -> int:
            return min(starts[min(max(line, 1), len(starts)) - 1] + column - 1, len(self.after))

        start, end = offset(span.line, span.column), offset(span.end_line, span.end_column)
        delta = 0
        for a, b, content in sorted(self.edits):
            lo = a + delta
            hi = lo + len(content)
            if lo < end and start < hi:
                return True
            delta += len(content) - (b - a)
        return False

    def moved(self, span: Span) -> Span:
        """``span`` of the text before, where the same characters are after the edits."""
        start, end = self.offset(span.line, span.column), self.offset(span.end_line, span.end_column)
        return self._after_index.span(self._shift(start, False), self._shift(end, start < end))

    def _shift(self, offset: int, is_end: bool) -> int:
        """Where ``offset`` is after the edits: moved by every edit before it. Text inserted at a
        span's start goes before its first character; at its (exclusive) end, after its last."""
        delta = 0
        for a, b, content in self.edits:
            if b < offset or (b == offset and not (is_end and a == b)):
                delta += len(content) - (b - a)
        return offset + delta


def file_edits(path: str, before: str, after: str, edits: Sequence[Edit]) -> _FileEdits:
    """``edits`` (all of ``path``) as offsets, with the words they remove and write."""
    index = _FileEdits(path, before, after, [], set(), [])
    words: set[str] = set()
    for edit in edits:
        span = edit.span
        a, b = index.offset(span.line, span.column), index.offset(span.end_line, span.end_column)
        index.edits.append((a, b, edit.content))
        removed, written = _WORD.findall(before[a:b]), _WORD.findall(edit.content)
        words.update(_norm(w) for w in written)
        if len(removed) <= max(1, len(written)):
            words.update(_norm(w) for w in removed)
            index.like_for_like.append((a, b))
    index.words = words
    return index


def _named(key: str | None, name: str, words: set[str]) -> bool:
    """Whether a value spelled ``key`` (named ``name`` in the spec) is named by the edits' words: its
    key, or a key on its path (renaming ``bfloat16`` names ``bfloat16.enabled``)."""
    candidates = {name.rsplit(".", 1)[-1]}
    if key:
        candidates.add(key)
        candidates.update(re.split(r"[./]", key))
    return any(_norm(c) in words for c in candidates if c)


def compare(before: dict[tuple, Written], after: dict[tuple, Written], changed: Sequence[_FileEdits]) -> list[str]:
    """What changed that no edit names: one sentence per setting, empty when nothing did."""
    by_path = {c.path: c for c in changed}

    def edits_of(path: str | None) -> _FileEdits | None:
        if path is None:
            return None
        found = by_path.get(path)
        if found is None:
            found = next((c for p, c in by_path.items() if _same_path(p, path)), None)
        return found

    words: set[str] = set()
    for c in changed:
        words |= c.words
    problems: list[str] = []
    for key in sorted(set(before) | set(after), key=repr):
        old, new = before.get(key), after.get(key)
        name = key[2]
        shown = (old or new).key or name  # type: ignore[union-attr]
        if old is not None and _named(old.key, name, words):
            continue
        if new is not None and _named(new.key, name, words):
            continue
        if old is not None and old.span is not None:
            edited = edits_of(old.path)
            if edited is not None and edited.touches(old.span):
                continue  # its value is written in the replaced text: the fix names it
        if old is None:
            edited = edits_of(new.path) if new is not None else None
            if new is not None and new.span is not None and edited is not None and edited.writes(new.span):
                continue  # a value the fix itself writes (``5e8``, a string, becomes the number 5.0e+8)
            problems.append(f"`{shown}` would be set ({_value(new)})")
            continue
        if new is None:
            problems.append(f"`{shown}` would no longer be set (it is {_value(old)})")
            continue
        if old.value != new.value:
            problems.append(f"`{shown}` would change from {_value(old)} to {_value(new)}")
            continue
        if old.key != new.key:
            problems.append(f"`{shown}` would be spelled `{new.key}`")
            continue
        if not _same_path(old.path, new.path):
            problems.append(f"`{shown}` would be read from {new.path} instead of {old.path}")
            continue
        if old.span is not None and new.span is not None:
            edited = edits_of(old.path)
            expected = edited.moved(old.span) if edited is not None else old.span
            if expected != new.span:
                problems.append(f"`{shown}` would be read at {new.span} instead of {expected}")
    return problems


def _value(w: Written | None) -> str:
    if w is None:
        return "not set"
    text = repr(w.value) if not isinstance(w.value, str) else w.value
    return text if len(text) <= 40 else text[:37] + "..."


def reread(result: Any, texts: dict[str, str], adapters: Sequence[Any], environment: dict[str, str] | None) -> Any:
    """``result`` read again by its adapter, with ``texts`` (absolute path -> text) in place of those files."""
    from trainlint.adapters.base import LoadContext
    from trainlint.files.checker import check_source
    from trainlint.files.sources import SourceText, read_source

    def read(path: Any) -> SourceText:
        given = texts.get(os.path.abspath(str(path)))
        return SourceText(str(path), given) if given is not None else read_source(path)

    context = LoadContext(extra_paths=list(result.run[1:]), read=read, environment=dict(environment or {}),
                          frameworks=result.frameworks)
    try:
        source = read(result.path)
    except Exception:  # noqa: BLE001 - a file that cannot be read again is compared as empty
        from trainlint.core.results import FileResult

        return FileResult(result.path, result.format)
    return check_source(source, adapters, context, force_format=result.format)


def results_reading(path: str, results: Iterable[Any]) -> list[Any]:
    """The results that read ``path`` (the file itself, a run it is part of, a script sourcing it)."""
    out = []
    for result in results:
        if result.format is None:
            continue
        paths = {result.path, *result.run, *(doc.path for doc in result.documents),
                 *(d.path for d in result.diagnostics if d.path)}
        paths.update(w.path for w in written_values([result]).values() if w.path)
        if any(_same_path(p, path) for p in paths):
            out.append(result)
    return out


def check_edits(results: Sequence[Any], path: str, before: str, after: str, edits: Sequence[Edit],
                adapters: Sequence[Any], environment: dict[str, str] | None) -> Refusal | None:
    """Whether applying ``edits`` to ``path`` (text ``before`` -> ``after``) changes only what they
    name, in every run that reads the file. None when it does; else why not."""
    readers = results_reading(path, results)
    if not readers:
        return Refusal((f"no run trainlint read takes anything from {path}, so the fix cannot be checked",))
    absolute = os.path.abspath(path)
    changed = [file_edits(path, before, after, edits)]
    problems: list[str] = []
    for result in readers:
        old = written_values([reread(result, {absolute: before}, adapters, environment)])
        new = written_values([reread(result, {absolute: after}, adapters, environment)])
        for problem in compare(old, new, changed):
            if problem not in problems:
                problems.append(problem)
    return Refusal(tuple(problems)) if problems else None
