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
  only moved: the entry of a statement after an edit (a digit typed, a line added) is found under
  its old place and, when replayed, moved by the edit's change of offsets and lines (:class:`Shift`:
  every location it holds; a value read is compared with the moved value the replay of the
  statement that set it gave), and
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
    tree: Any = None
    entries: dict[tuple, Entry] = field(default_factory=dict)
    entries_text: str = ""
    """The text the entries were recorded on (their keys' and locations' coordinates)..."""
    entries_bytes: int = 0
    """... and its length in bytes."""

    def parse(self, parser: Any, data: bytes) -> Any:
        """The syntax tree of ``data``: the last one when the bytes are the same, else a new parse.

        Not tree-sitter's incremental parse (``tree.edit`` + ``parser.parse(data, old_tree)``): it
        recovers from a syntax error differently from a full parse (tests/test_shell_memo.py found a
        script whose edited text got a TL002 only when parsed incrementally), and a read must give
        what a full read gives."""
        if self.tree is not None and self.data == data:
            return self.tree
        self.data = self.tree = None
        tree = parser.parse(data)
        self.data, self.tree = data, tree
        return tree

    def shift_to(self, text: str, data: bytes) -> Shift | None:
        """How the entries' text became ``text`` (None: no entries, or no offset or line changed)."""
        if not self.entries or text == self.entries_text:
            return None
        shift = Shift.between(self.context[0], self.entries_text, text, len(data) - self.entries_bytes)
        return shift if shift.chars or shift.bytes or shift.lines else None

    def keep(self, entries: dict[tuple, Entry], text: str, data: bytes) -> None:
        """The entries of a completed read of ``text`` (an earlier text's are not needed again)."""
        self.entries, self.entries_text, self.entries_bytes = entries, text, len(data)


class Unmappable(Exception):
    """A location the edit touched (or whose side of it is ambiguous): it has no place in the new text."""


@dataclass
class Shift:
    """One edit between two texts of a script, as the common prefix and suffix of the two: the
    characters ``old[:start]`` stay where they are, ``old[old_end:]`` is ``new[old_end + chars:]``.

    A statement that starts on a line after ``last_line`` (the edit's last line in the old text)
    has the same text, columns and everything up to the end of the file as before, ``chars``
    characters, ``bytes`` bytes and ``lines`` lines further on: its entry is found under its old key
    (:meth:`old_key`) and, when it may be replayed, moved (:meth:`entry`): every location it holds
    (a Loc's offsets, a Seg's runs) shifted. A location on the edited characters, or at the edge of
    an insertion (which side it belongs to is not known), cannot be moved (:class:`Unmappable`: the
    statement is evaluated). An entry with diagnostics is not moved (a message may name a line,
    related spans point anywhere). Each value is moved once per edit, and the moved value of each
    variable's value is remembered (:attr:`moved`): a later statement that read it finds it is the
    same (an ``is``), without moving what it read."""

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
    the one before when ``old_end`` starts a line in both texts."""
    moved: dict[int, Any] = field(default_factory=dict)
    """id of a value of the old entries (they stay alive while the read runs) -> the value moved."""
    _segs: dict[int, Seg] = field(default_factory=dict)
    """The same for the pieces of values (one piece is in a variable, the strings and commands built from it)..."""
    _fields: dict[int, Field] = field(default_factory=dict)
    """... for fields (an array's, a command's words) and for tuples of pieces (a variable's, a field's)."""
    _tuples: dict[int, tuple[Seg, ...]] = field(default_factory=dict)

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

    def old_key(self, key: tuple) -> tuple | None:
        """The key the statement written at ``key`` (new text) had in the old text, when it only moved."""
        kind, byte, first, line, column, text, placeholders, quoted = key
        if line - self.lines <= self.last_line:
            return None
        chars = self.chars
        return (kind, byte - self.bytes, first - chars, line - self.lines, column, text,
                tuple((a - chars, b - chars) for a, b in placeholders),
                tuple((a - chars, b - chars) for a, b in quoted))

    def same(self, now: Any, before: Any) -> bool:
        """Whether ``now`` (a value read in the new text) is ``before`` (read in the old) moved."""
        if now is before:
            return True  # a value from before the edit (it was moved to itself) or from outside the script
        moved = self.moved.get(id(before))
        if moved is not None:
            return moved is now or moved == now
        if now is MISSING or before is MISSING:
            return False
        try:
            return self.value(before) == now
        except Unmappable:
            return False

    def entry(self, entry: Entry, reads: tuple) -> Entry:
        """``entry`` moved, with ``reads`` (the values it reads now, each ``same`` as the one it read)."""
        return Entry(reads, entry.functions, tuple((n, self.value(v)) for n, v in entry.writes),
                     tuple([self.command(c) for c in entry.commands]),
                     tuple([self.assignment(a) for a in entry.assignments]), entry.diagnostics,
                     tuple((n, (self.field(f), self.loc(at))) for n, (f, at) in entry.virtual_files),
                     entry.steps, entry.chars, entry.pieces, entry.match_work)

    # the values' kinds, each moved by its own method (a value of another kind is Unmappable)

    def loc(self, loc: Loc) -> Loc:
        start, end = loc.start, loc.end
        if (end <= self.start and start < self.start) or loc.path != self.path:
            return loc
        if start > self.old_end or (start == self.old_end and end > start):
            return Loc(loc.path, start + self.chars, end + self.chars)
        raise Unmappable

    def seg(self, seg: Seg) -> Seg:
        at = seg.loc
        if at is None:
            if seg.runs is not None:
                raise Unmappable
            return seg
        start = at.start
        if (start < self.start and at.end <= self.start) or at.path != self.path:
            return seg  # before the edit (most of what a statement after it reads), or another file's
        done = self._segs.get(id(seg))  # a piece is shared by the values and commands built from it
        if done is not None:
            return done
        if not (start > self.old_end or (start == self.old_end and at.end > start)):
            raise Unmappable
        delta = self.chars
        runs = seg.runs
        if runs is not None:
            runs = tuple([Run(r.text, r.source + delta, r.escaped) for r in runs])
        moved = Seg(seg.text, Loc(at.path, start + delta, at.end + delta), seg.exact, seg.unknown, seg.env,
                    seg.uncertain, runs)
        self._segs[id(seg)] = moved
        return moved

    def segs(self, segs: tuple[Seg, ...]) -> tuple[Seg, ...]:
        done = self._tuples.get(id(segs))
        if done is not None:
            return done
        seg = self.seg
        out: list[Seg] | None = None
        for i, s in enumerate(segs):
            moved = seg(s)
            if out is not None:
                out.append(moved)
            elif moved is not s:
                out = [*segs[:i], moved]
        moved_segs = segs if out is None else tuple(out)
        self._tuples[id(segs)] = moved_segs
        return moved_segs

    def field(self, f: Field) -> Field:
        done = self._fields.get(id(f))
        if done is not None:
            return done
        segs, site = self.segs(f.segs), f.site
        moved_site = site if site is None else self.loc(site)
        moved = f if segs is f.segs and moved_site is site else Field(segs, moved_site, f.uncertain)
        self._fields[id(f)] = moved
        return moved

    def value(self, value: Any) -> Any:
        """A variable's value (a VarValue, MISSING) moved: once per edit, so it stays one object."""
        if value is MISSING:
            return value
        if type(value) is not VarValue:
            raise Unmappable
        moved = self.moved.get(id(value))
        if moved is not None:
            return moved
        scalar = value.scalar if value.scalar is None else self.segs(value.scalar)
        array = value.array
        if array is not None:
            fields = [self.field(f) for f in array]
            if any(a is not b for a, b in zip(fields, array, strict=True)):
                array = fields
        at = value.assigned_at if value.assigned_at is None else self.loc(value.assigned_at)
        if scalar is value.scalar and array is value.array and at is value.assigned_at:
            moved = value
        else:
            moved = VarValue(scalar, array, value.uncertain, at)
        self.moved[id(value)] = moved
        return moved

    def command(self, command: Any) -> Any:
        if type(command).__name__ != "Command":
            raise Unmappable
        return dataclasses.replace(
            command, fields=[self.field(f) for f in command.fields], loc=self.loc(command.loc),
            prefix={k: self.field(f) for k, f in command.prefix.items()},
            in_loop=command.in_loop if command.in_loop is None else self.loc(command.in_loop))

    def assignment(self, assignment: Any) -> Any:
        if type(assignment).__name__ != "Assignment":
            raise Unmappable
        return dataclasses.replace(assignment, value=self.value(assignment.value), loc=self.loc(assignment.loc))


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
