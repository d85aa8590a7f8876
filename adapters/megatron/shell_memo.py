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
  character offset, line and column: every location and line number it makes is the same), and
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

from collections import OrderedDict
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.core.diagnostics import Diagnostic

    from trainlint.adapters.megatron.words import Field, Loc

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
