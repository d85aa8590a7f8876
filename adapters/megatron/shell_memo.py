"""What the language server keeps of a launch script between two reads of it, so that an edit costs
the statements it changes, not the whole script.

Inside :func:`remembering` (the language server's lint of a buffer), :func:`~.shell.evaluate` keeps,
per script path, a :class:`FileMemo`: the syntax tree of the last text read (reused when the text is
the same; an edited text is parsed anew, see :meth:`FileMemo.parse`) and, for each top-level
statement, a :class:`Entry`: what evaluating it did (the variables it set or unset, the commands,
assignments, diagnostics and here-document files it added, the steps and budget it used) and what
that depended on (the value each variable it read had before it, the functions defined).

A statement is replayed from its entry instead of evaluated when

* it is written the same (its text, and the placeholders in it) at the same place (byte and
  character offset, line and column: every location and line number it makes is the same), or it
  only moved: an edit before it (a digit typed, a line added) shifts the entries of the statements
  after it by the edit's change of offsets and lines (:class:`Shift`: every location they hold,
  their values' and those of the values they read, moved once per edit), and
* every variable it read has the same value now (the same object, or an equal one: a value
  re-evaluated from an unchanged assignment is equal), the same functions are defined, and the
  evaluation's bounds (steps, commands, value budget) leave room for all it used.

A script with a syntax error (tree-sitter's recovery depends on the text around a statement) is read
in full and nothing of it is kept. What cannot be replayed is never recorded: a statement that calls a function, defines one, sources
a file, reaches a bound (steps, commands, budget, nesting) or reports a diagnostic outside its own
lines is evaluated every time. The whole memo of a file is forgotten when what every statement may
read without naming it changes: the user's environment or the script's arguments (an ``#SBATCH``
value is compared for each variable read, as the script's own values). The result is the one a full
read gives (tests/test_shell_memo.py compares them over the corpus's scripts with random edits);
the batch ``check`` never uses this.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from trainlint.adapters.megatron.words import Field, Loc, Run, Seg, VarValue

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.core.diagnostics import Diagnostic

MISSING: Any = object()
"""A variable that is not set (as a read's dependency or a write's effect)."""

MAX_FILES = 32
"""Scripts remembered at once (the buffers an editor has open and lints); the least recently read go."""


@dataclass(frozen=True)
class Entry:
    """One top-level statement's evaluation: its dependencies and its effects."""

    reads: tuple[tuple[str, Any, Field | None], ...]
    """Each variable the statement read, the value it had before the statement (MISSING: unset) and
    the value an ``#SBATCH`` line gives it (None: none; read when the script does not set it)."""
    functions: tuple[str, ...]
    """The functions defined before the statement (a command name is looked up among them)."""
    writes: tuple[tuple[str, Any], ...]
    """Each variable whose value the statement changed, and its value after it (MISSING: unset)."""
    commands: tuple[Any, ...]
    assignments: tuple[Any, ...]
    diagnostics: tuple[Diagnostic, ...]
    virtual_files: tuple[tuple[str, tuple[Field, Loc]], ...]
    steps: int
    chars: int
    pieces: int
    match_work: int


@dataclass
class FileMemo:
    """One script's syntax tree and statement entries, for one reading context."""

    context: tuple
    data: bytes | None = None
    text: str | None = None
    tree: Any = None
    entries: dict[tuple, Entry] = field(default_factory=dict)

    def parse(self, parser: Any, data: bytes, text: str) -> Any:
        """The syntax tree of ``data``: the last one when the bytes are the same, else a new parse.

        Not tree-sitter's incremental parse (``tree.edit`` + ``parser.parse(data, old_tree)``): it
        recovers from a syntax error differently from a full parse (tests/test_shell_memo.py found a
        script whose edited text got a TL002 only when parsed incrementally), and a read must give
        what a full read gives."""
        if self.tree is not None and self.data == data:
            return self.tree
        old, old_data = self.text, self.data
        self.data = self.text = self.tree = None
        if old is not None and old_data is not None and self.entries:
            self.entries = Shift.between(self.context[0], old, text, len(data) - len(old_data)).rebase(self.entries)
        tree = parser.parse(data)
        self.data, self.text, self.tree = data, text, tree
        return tree


class Unmappable(Exception):
    """A location the edit touched (or whose side of it is ambiguous): it has no place in the new text."""


_UNMAPPED = object()
"""A value read before a statement that the edit touched: equal to nothing a new read gives."""


@dataclass
class Shift:
    """One edit between two texts of a script, as the common prefix and suffix of the two: the
    characters ``old[:start]`` stay where they are, ``old[old_end:]`` is ``new[old_end + chars:]``.

    The memo's entries of statements after the edit are moved with it (:meth:`rebase`): every
    location they hold (character offsets of a Loc, a Seg's runs), their keys (byte and character
    offset, line) shifted; the columns stay, as only statements that start on a line after the
    one the edit ends on are moved (that line's newline and everything up to the statement are the
    same text, or the edit ends with a whole line). A location on the edited characters, or at the edge of an insertion (which side it
    belongs to is not known), cannot be moved: an entry holding one is forgotten, a value read
    holding one becomes a value nothing equals (the statement is evaluated again). An entry with
    diagnostics is not moved (a message may name a line; related spans may point anywhere)."""

    path: str
    """The script's path: a location in another file (the environment's, a here-document's) stays."""
    start: int
    """The length of the common prefix (characters)."""
    old_end: int
    chars: int
    bytes: int
    lines: int
    last_line: int
    """The last line (1-based, old text) whose columns the edit may change: the line of ``old_end``, or
    the one before when ``old_end`` starts a line in both texts. Statements after it keep their columns."""

    @classmethod
    def between(cls, path: str, old: str, new: str, byte_delta: int) -> Shift:
        n = min(len(old), len(new))
        start = _common_prefix(old, new, n)
        end = _common_prefix(old[::-1], new[::-1], n - start)  # the suffix never overlaps the prefix
        old_end, new_end = len(old) - end, len(new) - end
        last_line = old.count("\n", 0, old_end) + 1
        if old_end == old.rfind("\n", 0, old_end) + 1 and new_end == new.rfind("\n", 0, new_end) + 1:
            last_line -= 1  # the unchanged text starts a line in both: the rest of that line keeps its columns
        return cls(path, start, old_end, len(new) - len(old), byte_delta, new.count("\n") - old.count("\n"),
                   last_line)

    def rebase(self, entries: dict[tuple, Entry]) -> dict[tuple, Entry]:
        """The entries whose statements may still be replayed in the new text, at their new places."""
        if not (self.chars or self.bytes or self.lines):
            return entries  # the same offsets and lines (a character replaced): the keys say what stays
        out: dict[tuple, Entry] = {}
        self._done: dict[int, Any] = {}
        self._keep: list[Any] = []  # the objects whose ids key _done, alive while it is used
        for key, entry in entries.items():
            kind, byte, first, line, column, text, placeholders, quoted = key
            if first + len(text) <= self.start:
                out[key] = entry  # before the edit: the key (text at its place) decides
            elif line > self.last_line and first >= self.old_end and not entry.diagnostics:
                try:
                    moved = self._entry(entry)
                    out[(kind, byte + self.bytes, first + self.chars, line + self.lines, column, text,
                         self._places(placeholders), self._places(quoted))] = moved
                except Unmappable:
                    pass
        self._done, self._keep = {}, []
        return out

    def _places(self, places: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
        return tuple((a + self.chars, b + self.chars) for a, b in places)

    def _entry(self, entry: Entry) -> Entry:
        reads = []
        for name, before, allocated in entry.reads:
            try:
                before = self.value(before)
            except Unmappable:
                before = _UNMAPPED
            reads.append((name, before, allocated))  # an #SBATCH value is read from the new text: compared as it is
        return dataclasses.replace(
            entry, reads=tuple(reads), writes=tuple((n, self.value(v)) for n, v in entry.writes),
            commands=tuple(self.value(c) for c in entry.commands),
            assignments=tuple(self.value(a) for a in entry.assignments),
            virtual_files=tuple((n, self.value(v)) for n, v in entry.virtual_files))

    def loc(self, loc: Loc) -> Loc:
        start, end = loc.start, loc.end
        if loc.path != self.path:
            return loc
        if end <= self.start and start < self.start:
            return loc
        if start > self.old_end or (start == self.old_end and end > start):
            return Loc(loc.path, start + self.chars, end + self.chars)
        raise Unmappable

    def value(self, obj: Any) -> Any:
        """``obj`` with every location moved; the same object when none moves (a value shared by a
        write and a later read stays shared: a replay's ``is`` check holds)."""
        if obj is None or obj is MISSING or isinstance(obj, (str, int)):
            return obj
        key = id(obj)
        done = self._done.get(key)
        if done is not None:
            if done is _UNMAPPED:
                raise Unmappable
            return done
        try:
            moved = self._move(obj)
        except Unmappable:
            self._done[key] = _UNMAPPED
            self._keep.append(obj)
            raise
        self._done[key] = moved
        self._keep.append(obj)
        return moved

    def _move(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is Loc:
            return self.loc(obj)
        if kind is Seg:
            if obj.loc is None:
                if obj.runs is not None:
                    raise Unmappable
                return obj
            loc = self.loc(obj.loc)
            if loc is obj.loc:
                return obj
            delta = loc.start - obj.loc.start
            runs = obj.runs if obj.runs is None else tuple(Run(r.text, r.source + delta, r.escaped) for r in obj.runs)
            return Seg(obj.text, loc, obj.exact, obj.unknown, obj.env, obj.uncertain, runs)
        if kind is Field:
            segs = self._tuple(obj.segs)
            site = self.value(obj.site)
            if segs is obj.segs and site is obj.site:
                return obj
            return Field(segs, site, obj.uncertain)
        if kind is tuple:
            return self._tuple(obj)
        if kind is list:
            items = [self.value(x) for x in obj]
            return obj if all(a is b for a, b in zip(items, obj, strict=True)) else items
        if kind is dict:
            moved = {k: self.value(v) for k, v in obj.items()}
            return obj if all(moved[k] is v for k, v in obj.items()) else moved
        if kind is VarValue or type(obj).__name__ in _RECORDS:
            changes = {}
            for f in dataclasses.fields(obj):
                old = getattr(obj, f.name)
                new = self.value(old)
                if new is not old:
                    changes[f.name] = new
            return dataclasses.replace(obj, **changes) if changes else obj
        if isinstance(obj, (bool, float)):
            return obj
        raise Unmappable  # a kind of value this does not know how to move: not carried over

    def _tuple(self, items: tuple) -> tuple:
        moved = tuple(self.value(x) for x in items)
        return items if all(a is b for a, b in zip(moved, items, strict=True)) else moved


_RECORDS = frozenset({"Command", "Assignment"})
"""The shell reader's records (adapters/megatron/shell.py, which imports this module) moved field by field."""


def _common_prefix(a: str, b: str, limit: int) -> int:
    """The length of the common prefix of ``a`` and ``b`` (at most ``limit``), by halving (C compares)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class StatementMemo:
    """The scripts a language server keeps between reads (see the module docstring)."""

    def __init__(self, max_files: int = MAX_FILES) -> None:
        self.max_files = max_files
        self._files: OrderedDict[str, FileMemo] = OrderedDict()

    def file(self, path: str, context: tuple) -> FileMemo:
        """The memo of ``path``, new when the reading context changed."""
        memo = self._files.get(path)
        if memo is None or memo.context != context:
            memo = FileMemo(context)
            self._files[path] = memo
        self._files.move_to_end(path)
        while len(self._files) > self.max_files:
            self._files.popitem(last=False)
        return memo

    def forget(self) -> None:
        self._files.clear()


_ACTIVE: ContextVar[StatementMemo | None] = ContextVar("trainlint_shell_memo", default=None)


def active() -> StatementMemo | None:
    """The memo the shell evaluation in this thread keeps statements in (None: a plain read)."""
    return _ACTIVE.get()


@contextmanager
def remembering(memo: StatementMemo) -> Iterator[None]:
    """Shell scripts read inside this block keep their statements in ``memo`` and reuse them."""
    token = _ACTIVE.set(memo)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
