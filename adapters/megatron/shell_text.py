"""A launch script as parsed text: the tree-sitter parser, a byte -> character map and line
index for spans, and the ``<Specify path>`` placeholders of example scripts (parsed as if quoted)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainlint.positions import LineIndex

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.megatron.words import EnvMap, Field, Loc, Piece, Seg, VarValue

_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        _PARSER = Parser(Language(tree_sitter_bash.language()))
    return _PARSER


_PLACEHOLDER = re.compile(r"(?:(?<==)|(?<=[ \t\"]))(<[A-Za-z][A-Za-z0-9_./,:()'-]* [A-Za-z0-9 _./,:()'-]*>|<[A-Z][A-Z0-9_]{2,}>)", re.M)


def _quote_states(text: str, offsets: list[int]) -> list[str | None]:
    """For each offset: inside double quotes ("dq"), single quotes ("sq"), a comment ("#") or not (None)."""
    targets = sorted(set(offsets))
    found: dict[int, str | None] = {}
    state: str | None = None
    i, n, t = 0, len(text), 0
    prev = "\n"
    while i < n and t < len(targets):
        if i == targets[t]:
            found[i] = state
            t += 1
            continue
        ch = text[i]
        if state is None:
            if ch == "\\":
                i += 2
                prev = "x"
                continue
            if ch == "'":
                state = "sq"
            elif ch == '"':
                state = "dq"
            elif ch == "#" and prev in " \t\n;":
                state = "#"
        elif state == "dq":
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                state = None
        elif state == "sq":
            if ch == "'":
                state = None
        elif state == "#" and ch == "\n":
            state = None
        prev = ch
        i += 1
    return [found.get(o, state) for o in offsets]


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

    @classmethod
    def of(cls, path: str, text: str) -> FileText:
        placeholders: dict[int, int] = {}
        quoted: dict[int, int] = {}
        parse_text = text
        if "<" in text:
            matches = [(m.start(1), m.end(1)) for m in _PLACEHOLDER.finditer(text)]
            if matches:
                states = _quote_states(text, [a for a, _ in matches])
                chars = list(text)
                for (start, end), state in zip(matches, states, strict=True):
                    if state == "dq":
                        quoted[start] = end
                    elif state is None:
                        placeholders[start] = end
                        chars[start] = '"'
                        chars[end - 1] = '"'
                if placeholders:
                    parse_text = "".join(chars)
        data = parse_text.encode("utf-8", errors="surrogatepass")
        ft = cls(path, text, data, LineIndex(text), None, placeholders, quoted)
        if len(data) != len(text):
            table = [0] * (len(data) + 1)
            b = 0
            for i, ch in enumerate(text):
                width = len(ch.encode("utf-8", errors="surrogatepass"))
                for k in range(width):
                    table[b + k] = i
                b += width
            table[b] = len(text)
            ft._char_of_byte = table
        return ft

    def char(self, byte_offset: int) -> int:
        if self._char_of_byte is None:
            return byte_offset
        return self._char_of_byte[min(byte_offset, len(self._char_of_byte) - 1)]


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

    if TYPE_CHECKING:  # pragma: no cover - defined by ShellEvaluator and its mixins
        def _step(self, node: Any, ft: FileText) -> None: ...
        def _enter(self, node: Any, ft: FileText) -> None: ...
        def _loc(self, node: Any, ft: FileText) -> Loc: ...
        def _set(self, name: str, value: VarValue, loc: Loc, record: bool = True) -> None: ...
        def _arith(self, node: Any, ft: FileText) -> int: ...
        def _string_of(self, node: Any, ft: FileText) -> str | None: ...
        def _pieces(self, node: Any, ft: FileText, quoted: bool) -> list[Piece]: ...
        def _expansion_pieces(self, node: Any, ft: FileText, quoted: bool) -> list[Piece]: ...
        def _lookup(self, name: str, loc: Loc) -> VarValue | Seg: ...
