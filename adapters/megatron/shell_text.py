"""A launch script as parsed text: the tree-sitter parser, a byte -> character map and line
index for spans, and the ``<Specify path>`` placeholders of example scripts (parsed as if quoted)."""

from __future__ import annotations

import re
from itertools import accumulate
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainlint.core.positions import LineIndex

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.megatron.shell_budget import ShellBudget
    from trainlint.adapters.megatron.words import EnvMap, Field, Loc, Piece, Seg, VarValue

_PARSER = None


def _parser():
    global _PARSER, NAME_FIELD, VALUE_FIELD, ARGUMENT_FIELD
    if _PARSER is None:
        from tree_sitter import Language, Parser

        language = Language(bash_language())
        NAME_FIELD = language.field_id_for_name("name")
        VALUE_FIELD = language.field_id_for_name("value")
        ARGUMENT_FIELD = language.field_id_for_name("argument")
        _PARSER = Parser(language)
    return _PARSER


NAME_FIELD: Any = None
VALUE_FIELD: Any = None
ARGUMENT_FIELD: Any = None
"""The grammar's ids of the ``name``, ``value`` and ``argument`` fields (set with the parser):
``child_by_field_id`` takes half the time of ``child_by_field_name``, which looks the name up in the
grammar on every call, and the evaluator asks for these on every assignment and command."""


def bash_language() -> Any:
    """tree-sitter-bash's grammar (the pointer its ``language()`` gives), from the package's
    compiled binding without running the package's ``__init__``: that imports
    importlib.resources (and with it tempfile, shutil, random, bz2, lzma) only to offer its
    highlight query, ~5 ms of every script check. Where the package is not laid out so (or is
    imported already), the ordinary import."""
    import sys

    package = sys.modules.get("tree_sitter_bash")
    if package is None:
        try:
            import importlib.machinery
            import importlib.util

            found = importlib.util.find_spec("tree_sitter_bash")  # finds the package, does not run it
            where = found.submodule_search_locations if found is not None else None
            spec = importlib.machinery.PathFinder.find_spec("tree_sitter_bash._binding", where) if where else None
            if spec is not None and spec.loader is not None:
                binding = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(binding)
                return binding.language()
        except (ImportError, AttributeError, OSError):
            pass
    import tree_sitter_bash

    return tree_sitter_bash.language()


_PLACEHOLDER = re.compile(r"(<(?<=[= \t\"]<)(?:[A-Za-z][A-Za-z0-9_./,:()'-]* [A-Za-z0-9 _./,:()'-]*>|[A-Z][A-Z0-9_]{2,}>))", re.M)
"""A ``<...>`` after ``=``, a blank or a double quote. The pattern starts with the literal ``<`` and looks
behind only there: the regular expression engine then jumps from one ``<`` to the next instead of
testing a look-behind at every character (~50 times faster on a 10 KB script)."""


# What ends each state of _quote_states's scan (and a backslash, where it escapes the next character).
_STATE_ENDS = {None: re.compile(r"[\\'\"#]"), "dq": re.compile(r'[\\"]'), "sq": re.compile("'"),
               "#": re.compile("\n")}


def _quote_states(text: str, offsets: list[int]) -> list[str | None]:
    """For each offset: inside double quotes ("dq"), single quotes ("sq"), a comment ("#") or not (None).

    A scan from one character that can change the state to the next (a regular expression
    search, not a loop over every character: this runs on every text with a placeholder)."""
    targets = sorted(set(offsets))
    found: dict[int, str | None] = {}
    state: str | None = None
    i, n, t = 0, len(text), 0
    escaped = -1  # the offset just after a backslash pair outside quotes: a `#` there starts no comment
    lost = False  # a target was an escaped character: no later target is recorded (they take the last state)
    while i < n and (lost or t < len(targets)):
        m = _STATE_ENDS[state].search(text, i)
        j = m.start() if m is not None else n
        while not lost and t < len(targets) and targets[t] <= j:
            found[targets[t]] = state
            t += 1
        if m is None:
            break
        ch = text[j]
        if ch == "\\":
            if not lost and t < len(targets) and targets[t] == j + 1:
                lost = True
            if state is None:
                escaped = j + 2
            i = j + 2
            continue
        if state is None:
            if ch == "'":
                state = "sq"
            elif ch == '"':
                state = "dq"
            elif (j == 0 or (j != escaped and text[j - 1] in " \t\n;")):
                state = "#"
        else:  # the closing quote, or the end of the comment's line
            state = None
        i = j + 1
    return [found.get(o, state) for o in offsets]


def _quoted_placeholders(text: str, placeholders: dict[int, int]) -> str:
    """The text with each placeholder's ``<`` and ``>`` written as ``"`` (so it parses as a quoted word):
    joined from slices, not rebuilt from a list of every character. ``placeholders`` are in text order
    and do not overlap (one regular expression's matches)."""
    parts: list[str] = []
    pos = 0
    for start, end in placeholders.items():
        parts += [text[pos:start], '"', text[start + 1:end - 1], '"']
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


_STARTS_A_CHARACTER = bytes(0 if 0x80 <= b < 0xC0 else 1 for b in range(256))
"""For bytes.translate: 1 for a byte that starts a UTF-8 character, 0 for a continuation byte."""


@dataclass
class FileText:
    """A parsed file: its text, a byte->character map and line index for spans."""

    path: str
    text: str
    data: bytes
    index: LineIndex
    _char_of_byte: list[int] | None = None
    placeholders: dict[int, int] = field(default_factory=dict)
    """``<Specify path>`` placeholders of example scripts (start -> end offsets): not valid bash; they are
    parsed as if quoted and their value is unknown."""
    quoted_placeholders: dict[int, int] = field(default_factory=dict)
    """The same inside double quotes (``options="--save <PATH TO DIR>"``): unknown pieces of the string."""
    bytes_are_chars: bool = True
    """Every byte offset is the character offset (an ASCII text: no ``_char_of_byte`` table); read
    for every location the evaluator makes."""

    @classmethod
    def of(cls, path: str, text: str) -> FileText:
        placeholders: dict[int, int] = {}
        quoted: dict[int, int] = {}
        parse_text = text
        if "<" in text:
            matches = [(m.start(1), m.end(1)) for m in _PLACEHOLDER.finditer(text)]
            if matches:
                states = _quote_states(text, [a for a, _ in matches])
                for (start, end), state in zip(matches, states, strict=True):
                    if state == "dq":
                        quoted[start] = end
                    elif state is None:
                        placeholders[start] = end
                if placeholders:
                    parse_text = _quoted_placeholders(text, placeholders)
        if "\x00" in parse_text:
            # bash drops NUL bytes from a script it runs; tree-sitter would end a comment at one and
            # report an error: read as a blank (same length, so every offset stays), which is what
            # bash makes of one between words or in a comment (shell.py reports it: TL002)
            parse_text = parse_text.replace("\x00", " ")
        data = parse_text.encode("utf-8", errors="surrogatepass")
        ft = cls(path, text, data, LineIndex(text), None, placeholders, quoted)
        if len(data) != len(text):
            # the character of each byte: how many characters start at or before it, less one (a
            # UTF-8 continuation byte, 0b10xxxxxx, starts none); counted in C, not per character
            starts = data.translate(_STARTS_A_CHARACTER)
            table = list(accumulate(starts, initial=-1))[1:]
            table.append(len(text))
            ft._char_of_byte = table
            ft.bytes_are_chars = False
        return ft

    def char(self, byte_offset: int) -> int:
        table = self._char_of_byte
        if table is None:
            return byte_offset
        try:
            return table[byte_offset]
        except IndexError:  # past the end: the end
            return table[-1]


MAX_NESTING = 64
"""Nested statements, expansions and arithmetic (``{ { ...``, ``${A:-${B:-...``): deeper is TL002,
as JSON and YAML nesting; a real launch script nests a handful of levels. (Here, not in :mod:`.shell`,
so that word expansion can check it without a call: see ``WordExpansion._pieces``.)"""


class Unresolvable(Exception):
    """A value that cannot be known statically (the message says why)."""


class EvaluatorParts:
    """What the parts of the shell evaluator (statements in :mod:`.shell`, conditions, word
    expansion, arithmetic) use of each other: declared here for the type checker;
    :class:`trainlint.adapters.megatron.shell.ShellEvaluator` has them all."""

    root_path: str
    env: EnvMap
    environment: dict[str, str]
    slurm: dict[str, Field]
    arguments: tuple[str, ...] | None
    _depth: int
    _uncertain: int
    _reads: set[str] | None
    budget: ShellBudget
    call_arguments: list[list[Field]]
    functions: dict[str, Any]

    if TYPE_CHECKING:  # pragma: no cover - defined by ShellEvaluator and its mixins
        def _step(self, node: Any, ft: FileText) -> None: ...
        def _enter(self, node: Any, ft: FileText) -> None: ...
        def _loc(self, node: Any, ft: FileText) -> Loc: ...
        def _note_read(self, name: str) -> None: ...
        def _set(self, name: str, value: VarValue, loc: Loc, record: bool = True) -> None: ...
        def _arith(self, node: Any, ft: FileText) -> int: ...
        def _string_of(self, node: Any, ft: FileText) -> str | None: ...
        def _pieces(self, node: Any, ft: FileText, quoted: bool, kind: str | None = None) -> list[Piece]: ...
        def _expansion_pieces(self, node: Any, ft: FileText, quoted: bool) -> list[Piece]: ...
        def _lookup(self, name: str, loc: Loc) -> VarValue | Seg: ...
        def _budget_refused(self, reason: str, loc: Loc) -> None: ...
        def _matches(self, text: str, pattern: str) -> bool | None: ...
