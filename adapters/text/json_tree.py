"""A position-tracking reader for JSON as DeepSpeed reads it.

DeepSpeed opens its config with ``hjson.load(..., object_pairs_hook=dict_raise_error_on_duplicate_keys)``
(deepspeed/runtime/config.py), so it accepts more than JSON: comments (``//``, ``#``, ``/* */``),
trailing commas, a line break instead of a comma, unquoted keys, single-quoted strings and
quoteless strings (``"train_batch_size": GB_SIZE`` reads as the string ``"GB_SIZE,"``). The
Hugging Face integration and most tools read the same file with ``json.load``, which accepts none
of that. This reader accepts what hjson accepts in practice, records every non-portable use
(reported as TL010), every bare placeholder (TL007) and every duplicate key (TL003; DeepSpeed
raises "Duplicate keys in DeepSpeed config"), and stops at the first real syntax error (TL002)
with its exact position.

Values follow ``json.loads``: ``2e8`` and ``1.0`` are floats, ``5`` is an int. The reader is
iterative (an explicit stack, never recursion), nests at most :data:`MAX_DEPTH` levels and reads
at most :data:`MAX_VALUES` values, so
hostile input such as 100 000 ``[`` gives a TL002, not a RecursionError; regular expressions do
the per-token work, so time is linear in the input.

Why not the ``json`` module or PyYAML: ``json`` gives positions only for errors and keeps only
the last duplicate; PyYAML reads ``1e-5`` as a string and rejects tabs (research: anchors-linter
§3.1).
"""

from __future__ import annotations

from trainlint.core import cancel
from trainlint.core.numbers import read_int

import json
import math
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from trainlint.core.diagnostics import Diagnostic, Related, Severity
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.positions import FILE_START, LineIndex, Span

MAX_DUPLICATES_LISTED = 100
"""Duplicate keys reported one by one; the rest are one TL003 (200,000 of them were 200,000 findings)."""
MAX_VALUES = 200_000
"""More values than this are refused (TL001, not read further), as in YAML (yaml_tree.MAX_NODES): the largest real
configs hold a few thousand (curriculum schedules); reading a generated array of millions would
take seconds per 100,000 values and hundreds of MB of positions."""

MAX_DEPTH = 100
"""Deeper input is refused (TL002). Real configs nest fewer than 10 levels; jsonschema and the
rest of trainlint recurse over the tree, so the limit keeps them far from Python's stack limit."""

# The full reader's token patterns (strings allow raw control characters: hjson does; reported
# separately), compiled when it is first used (:func:`_compile_full_reader`): a strict JSON file is read
# by :func:`_parse_strict` alone, and compiling them cost ~3.5M instructions of every start (issue 33).
_STRING_DQ: re.Pattern[str]
_NUMBER: re.Pattern[str]
_NUMBERISH: re.Pattern[str]
_WS: re.Pattern[str]
_CONTROL: re.Pattern[str]
_full_reader_compiled = False


def _compile_full_reader() -> None:
    global _STRING_DQ, _NUMBER, _NUMBERISH, _WS, _CONTROL, _full_reader_compiled
    if _full_reader_compiled:
        return
    _STRING_DQ = re.compile(r'"(?:[^"\\\n]|\\.)*"', re.DOTALL)
    _NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
    _NUMBERISH = re.compile(r"[-+]?[0-9.][0-9A-Za-z.+\-]*")
    _WS = re.compile(r"[ \t\r\n\ufeff]+")
    _CONTROL = re.compile(r"[\x00-\x1f]")
    _full_reader_compiled = True


_SKIP_START = frozenset(" \t\r\n\ufeff#/")
_LITERALS = {"true": True, "false": False, "null": None}
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_PYTHON_WORDS = {"True": "true", "False": "false", "None": "null"}


# The patterns of hjson's extensions (single-quoted strings, unquoted keys, quoteless values and their
# placeholders) are compiled the first time a file uses one (functools.cache): a strict JSON file never
# does, and compiling them cost ~0.7 ms of every start (issue 33).


@cache
def _string_sq() -> re.Pattern[str]:
    return re.compile(r"'(?:[^'\\\n]|\\.)*'", re.DOTALL)


@cache
def _key_bare() -> re.Pattern[str]:
    return re.compile(r"[^\s,:\[\]{}\"']+")


@cache
def _quoteless_end() -> re.Pattern[str]:
    return re.compile(r"[,\]}\n]")


@cache
def _placeholder() -> re.Pattern[str]:
    return re.compile(
        r"_*[A-Z][A-Z0-9_]*"                 # GB_SIZE, LTD_ENABLED, CONFIG_CL_MIN (upper case, as sed targets)
        r"|[A-Za-z0-9]*[A-Z][A-Za-z0-9]*_[A-Za-z0-9_]*"  # CL_1st_MIN, QuantW_FORWARD
        r"|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"   # $MB or ${MB}
        # the shell's other expansions, left as written in a here-document whose values are only
        # known at launch: $2, ${MB:-4}, $((MB * GAS)), $(nproc)
        r"|\$(?:[0-9@*#?]|\{[^{}]+\}|\(\(.+\)\)|\([^()]+\))"
        r"|\{\{.*\}\}|<[^<>\s]+>"           # {{ mb }}, <MB>
    )


# Kinds of non-portable (hjson-only) syntax, with how the message names them.
EXTENSION_LABELS = {
    "comment": "comments",
    "trailing-comma": "trailing commas",
    "missing-comma": "members separated by a line break without a comma",
    "unquoted-key": "unquoted keys",
    "quoteless-string": "unquoted strings",
    "single-quoted-string": "single-quoted strings",
    "multiline-string": "''' multi-line strings",
    "control-character": "raw control characters (such as tabs) inside strings",
}


@dataclass(frozen=True)
class Extension:
    """One use of syntax that hjson accepts and JSON does not."""

    kind: str
    span: Span


@dataclass(frozen=True)
class Duplicate:
    """A key written twice in one JSON object, with the span of each occurrence."""

    pointer: str
    key: str
    first: Span
    second: Span


@dataclass(frozen=True)
class Placeholder:
    """A bare word where a value belongs (``GB_SIZE``), filled in by a script before launch."""

    pointer: str
    token: str
    span: Span


@dataclass(frozen=True)
class Quoteless:
    """A bare word hjson reads as a string. hjson reads to the end of the line, comma and
    comment included, so ``"device": cpu,`` is the string ``"cpu,"`` for DeepSpeed."""

    pointer: str
    token: str
    hjson_value: str
    span: Span


@dataclass(frozen=True)
class NonFinite:
    """A NaN or Infinity literal, which strict JSON does not allow: the token and where it is."""

    pointer: str
    token: str
    span: Span


@dataclass(frozen=True)
class SyntaxProblem:
    """Why and where the text could not be read as JSON (or was refused)."""

    message: str
    span: Span
    code: str = "TL002"
    """TL002 for a syntax error; TL001 when the file is refused for its size (not read further)."""


@dataclass
class JsonTree:
    """The result of :func:`parse`: the value and where everything is."""

    text: str
    value: Any = None
    key_spans: dict[str, Span] = field(default_factory=dict)
    value_spans: dict[str, Span] = field(default_factory=dict)
    extensions: list[Extension] = field(default_factory=list)
    placeholders: list[Placeholder] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    nonfinite: list[NonFinite] = field(default_factory=list)
    quoteless: list[Quoteless] = field(default_factory=list)
    error: SyntaxProblem | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def unresolved(self) -> dict[str, str]:
        """Pointers whose value is a placeholder, with the reason (for Document.unresolved)."""
        return {p.pointer: f"template placeholder {p.token}" for p in self.placeholders}

    def diagnostics(self, path: str | None = None) -> list[Diagnostic]:
        """TL002, TL003, TL007 (placeholders), TL010 (one per kind) and non-finite numbers."""
        out: list[Diagnostic] = []
        if self.error is not None:
            out.append(input_diagnostic(self.error.code, self.error.message, self.error.span, path=path))
        for dup in self.duplicates[:MAX_DUPLICATES_LISTED]:
            out.append(input_diagnostic(
                "TL003",
                f"duplicate key \"{dup.key}\" (first at line {dup.first.line}); DeepSpeed refuses the file "
                "(\"Duplicate keys in DeepSpeed config\"), json.load would silently keep the last one",
                dup.second, path=path,
                related=(Related(f"first \"{dup.key}\" here", dup.first, path),)))
        if len(self.duplicates) > MAX_DUPLICATES_LISTED:
            more = self.duplicates[MAX_DUPLICATES_LISTED]
            out.append(input_diagnostic(
                "TL003", f"{len(self.duplicates) - MAX_DUPLICATES_LISTED:,} more duplicate keys from here on (not listed "
                "one by one); DeepSpeed refuses the file", more.second, path=path))
        for ph in self.placeholders:
            out.append(input_diagnostic(
                "TL007",
                f"template placeholder {ph.token}, filled by a script before launch (the file is not "
                "JSON until then); its value is not checked",
                ph.span, path=path))
        for nf in self.nonfinite:
            out.append(input_diagnostic(
                "TL010",
                f"{nf.token} is not a JSON number: json.load reads it as a float, hjson (DeepSpeed) as the "
                f"string \"{nf.token}\"",
                nf.span, path=path, severity=Severity.WARNING))
        for q in self.quoteless:
            if q.token in _PYTHON_WORDS:
                out.append(input_diagnostic(
                    "TL010",
                    f"{q.token} is Python, not JSON: hjson (DeepSpeed) reads it as the string "
                    f"{json.dumps(q.hjson_value)} and json.load refuses it; write {_PYTHON_WORDS[q.token]}",
                    q.span, path=path, severity=Severity.WARNING))
            elif q.hjson_value != q.token:
                out.append(input_diagnostic(
                    "TL010",
                    f"unquoted string {q.token}: hjson (DeepSpeed) reads an unquoted string to the end of the "
                    f"line, so the value is {json.dumps(q.hjson_value)}; json.load refuses it. Write "
                    f"{json.dumps(q.token)}",
                    q.span, path=path, severity=Severity.WARNING))
        out.extend(self._extension_diagnostics(path))
        return out

    def _extension_diagnostics(self, path: str | None) -> list[Diagnostic]:
        # One finding per kind, at its first use: a commented file should not get 40 findings.
        firsts: dict[str, Extension] = {}
        counts: dict[str, int] = {}
        for ext in self.extensions:
            firsts.setdefault(ext.kind, ext)
            counts[ext.kind] = counts.get(ext.kind, 0) + 1
        out = []
        for kind, ext in firsts.items():
            n = counts[kind]
            more = f" ({n} in this file)" if n > 1 else ""
            out.append(input_diagnostic(
                "TL010",
                f"{EXTENSION_LABELS[kind]}{more}: accepted by DeepSpeed (hjson) but not by json.load, "
                "the Hugging Face Trainer or most tools",
                ext.span, path=path))
        return out


class _Frame:
    __slots__ = (
        "comma_at",
        "container",
        "is_object",
        "key",
        "key_span",
        "key_start",
        "label",
        "pointer",
        "start",
        "state",
    )

    def __init__(self, container: Any, is_object: bool, pointer: str, start: int, label: str) -> None:
        self.container = container
        self.is_object = is_object
        self.pointer = pointer
        self.start = start
        self.state = "key" if is_object else "value-or-end"
        self.key: str | None = None
        self.key_span: Span | None = None
        self.key_start = 0
        self.comma_at = -1
        self.label = label  # how messages name this container: "the value of \"zero_optimization\""


class _SyntaxError(Exception):
    def __init__(self, message: str, offset: int, end: int | None = None, code: str = "TL002") -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.end = end
        self.code = code


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _show(ch: str) -> str:
    if ch == "\n":
        return "a line break"
    if ch == "\t":
        return "a tab"
    return repr(ch) if ch.isprintable() else f"U+{ord(ch):04X}"


class _Parser:
    def __init__(self, text: str) -> None:
        _compile_full_reader()
        self.text = text
        self.n = len(text)
        self.index = LineIndex(text)
        self.tree = JsonTree(text)
        self.stack: list[_Frame] = []
        self.crossed_newline = False
        self.values = 0
        # Placeholders, non-finite numbers and quoteless strings by pointer while reading (one value
        # per pointer): a duplicate key drops the earlier value's entry in O(1); parse() lists them.
        self.placeholders_at: dict[str, Placeholder] = {}
        self.nonfinite_at: dict[str, NonFinite] = {}
        self.quoteless_at: dict[str, Quoteless] = {}
        # Positions are asked for in (nearly) increasing order: a forward cursor that counts
        # line breaks with str.count is much cheaper than a bisect per position.
        self._cursor = 0
        self._cursor_line = 1
        self._cursor_line_start = 0

    # -- helpers ---------------------------------------------------------------------------
    def position(self, offset: int) -> tuple[int, int]:
        if offset < self._cursor:
            return self.index.position(offset)
        offset = min(offset, self.n)
        text = self.text
        breaks = text.count("\n", self._cursor, offset)
        if breaks:
            self._cursor_line += breaks
            self._cursor_line_start = text.rfind("\n", self._cursor, offset) + 1
        self._cursor = offset
        return self._cursor_line, offset - self._cursor_line_start + 1

    def span(self, start: int, end: int) -> Span:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(line, column, end_line, end_column)

    def ext(self, kind: str, start: int, end: int) -> None:
        self.tree.extensions.append(Extension(kind, self.span(start, end)))

    def skip(self, i: int) -> int:
        """Skip whitespace and comments; note whether a line break was crossed."""
        text, n = self.text, self.n
        self.crossed_newline = False
        if i < n and text[i] not in _SKIP_START:
            return i  # the common case: the next token starts right here
        while i < n:
            m = _WS.match(text, i)
            if m:
                if "\n" in m.group():
                    self.crossed_newline = True
                i = m.end()
                continue
            c = text[i]
            if c == "#" or text.startswith("//", i):
                end = text.find("\n", i)
                end = n if end == -1 else end
                self.ext("comment", i, end)
                i = end
                continue
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                if end == -1:
                    raise _SyntaxError("unterminated /* comment (no closing */)", i, i + 2)
                if "\n" in text[i:end]:
                    self.crossed_newline = True
                self.ext("comment", i, end + 2)
                i = end + 2
                continue
            break
        return i

    # -- values ----------------------------------------------------------------------------
    def put(self, value: Any, ptr: str, start: int, end: int) -> None:
        """Store a value in the current container and record its span."""
        frame = self.stack[-1] if self.stack else None
        if frame is None:
            self.tree.value = value
        elif frame.is_object:
            frame.container[frame.key] = value
        else:
            frame.container.append(value)
        self.tree.value_spans[ptr] = self.span(start, end)

    def child_pointer(self) -> str:
        frame = self.stack[-1] if self.stack else None
        if frame is None:
            return ""
        if frame.is_object:
            return frame.pointer + "/" + _escape(frame.key or "")
        return frame.pointer + "/" + str(len(frame.container))

    def value(self, i: int) -> int:
        """Read one value at ``i`` (after whitespace). Containers are pushed, not descended into."""
        text, n = self.text, self.n
        if i >= n:
            where = self.describe_expectation()
            raise _SyntaxError(f"unexpected end of file: expected {where}", n)
        c = text[i]
        self.values += 1
        if not self.values & 255:
            cancel.check()  # a lint the language server no longer wants stops here
        if self.values > MAX_VALUES:
            raise _SyntaxError(f"more than {MAX_VALUES:,} values: far larger than any training config; not read further", i,
                               code="TL001")
        ptr = self.child_pointer()
        if c in "{[":
            if len(self.stack) >= MAX_DEPTH:
                raise _SyntaxError(f"nesting too deep (more than {MAX_DEPTH} levels of objects and arrays)", i)
            container: Any = {} if c == "{" else []
            label = self.container_label(ptr)
            self.put(container, ptr, i, i + 1)
            self.stack.append(_Frame(container, c == "{", ptr, i, label))
            return i + 1
        if c == '"':
            s, end = self.string(i)
            self.put(s, ptr, i, end)
            return end
        if c == "'":
            s, end = self.single_quoted(i)
            self.put(s, ptr, i, end)
            return end
        if c == "-" and text.startswith("-Infinity", i):
            return self.nonfinite(i, "-Infinity", ptr)
        if c == "-" or c.isdigit() or c in "+.":
            m = _NUMBER.match(text, i)
            rough = _NUMBERISH.match(text, i)
            if m and (rough is None or rough.end() <= m.end()):
                token = m.group()
                number: Any = float(token) if any(ch in token for ch in ".eE") else read_int(token)
                self.put(number, ptr, i, m.end())
                return m.end()
            token = rough.group() if rough else c
            raise _SyntaxError(f"invalid number {token!r} (JSON numbers look like 3, -0.5, 1e-5, 2.0E8)",
                               i, i + len(token))
        if c in ",:]}":
            raise _SyntaxError(f"expected {self.describe_expectation()}, found {_show(c)}", i)
        for word, lit in _LITERALS.items():
            if text.startswith(word, i) and not self.word_continues(i + len(word)):
                self.put(lit, ptr, i, i + len(word))
                return i + len(word)
        return self.quoteless(i, ptr)

    def describe_expectation(self) -> str:
        frame = self.stack[-1] if self.stack else None
        if frame is None:
            return "a value"
        if frame.is_object:
            return f"a value for \"{frame.key}\""
        return f"a value in {frame.label}"

    def container_label(self, ptr: str) -> str:
        frame = self.stack[-1] if self.stack else None
        if frame is None:
            return "the top-level array"
        if frame.is_object:
            return f"\"{frame.key}\""
        return f"element {len(frame.container)} of {frame.label}"

    def word_continues(self, j: int) -> bool:
        if j >= self.n:
            return False
        ch = self.text[j]
        return ch.isalnum() or ch in "_$-."

    def string(self, i: int) -> tuple[str, int]:
        m = _STRING_DQ.match(self.text, i)
        if m is None:
            nl = self.text.find("\n", i)
            end = self.n if nl == -1 else nl
            raise _SyntaxError("unterminated string (no closing \" on this line)", i, end)
        raw = m.group()
        if "\\" not in raw and not _CONTROL.search(raw):
            return raw[1:-1], m.end()  # no escapes: the text is the value
        if _CONTROL.search(raw):
            self.ext("control-character", i, m.end())
        try:
            value = json.loads(raw, strict=False)
        except json.JSONDecodeError as exc:
            raise _SyntaxError(f"invalid escape in string: {exc.msg}", i + exc.pos, i + exc.pos + 2) from None
        return value, m.end()

    def single_quoted(self, i: int) -> tuple[str, int]:
        text = self.text
        if text.startswith("'''", i):
            end = text.find("'''", i + 3)
            if end == -1:
                raise _SyntaxError("unterminated ''' string", i, i + 3)
            self.ext("multiline-string", i, end + 3)
            return text[i + 3:end].strip("\n"), end + 3
        m = _string_sq().match(text, i)
        if m is None:
            raise _SyntaxError("unterminated string (no closing ' on this line)", i, i + 1)
        self.ext("single-quoted-string", i, m.end())
        inner = m.group()[1:-1].replace('\\\'', "'").replace('"', '\\"')
        try:
            return json.loads('"' + inner + '"', strict=False), m.end()
        except json.JSONDecodeError as exc:
            raise _SyntaxError(f"invalid escape in string: {exc.msg}", i + exc.pos, i + exc.pos + 2) from None

    def nonfinite(self, i: int, token: str, ptr: str) -> int:
        end = i + len(token)
        self.put(_NONFINITE[token], ptr, i, end)
        self.nonfinite_at[ptr] = NonFinite(ptr, token, self.span(i, end))
        return end

    def quoteless(self, i: int, ptr: str) -> int:
        """A bare word: hjson reads it as a string (to the end of the line)."""
        m = _quoteless_end().search(self.text, i)
        end = self.n if m is None else m.start()
        # Stop before a comment that follows the word on the same line.
        for marker in ("//", "#", "/*"):
            k = self.text.find(marker, i, end)
            if k != -1:
                end = k
        token = self.text[i:end].rstrip()
        end = i + len(token)
        if token in _NONFINITE:
            return self.nonfinite(i, token, ptr)
        self.put(token, ptr, i, end)
        if _placeholder().fullmatch(token) and token not in _PYTHON_WORDS:
            self.placeholders_at[ptr] = Placeholder(ptr, token, self.span(i, end))
            return end
        eol = self.text.find("\n", i)
        hjson_value = self.text[i:self.n if eol == -1 else eol].rstrip()
        self.quoteless_at[ptr] = Quoteless(ptr, token, hjson_value, self.span(i, end))
        if hjson_value == token and token not in _PYTHON_WORDS:  # one aggregated TL010 for these
            self.ext("quoteless-string", i, end)
        return end

    # -- object keys -----------------------------------------------------------------------
    def key(self, frame: _Frame, i: int) -> int:
        text = self.text
        c = text[i]
        if c == '"':
            k, end = self.string(i)
        elif c == "'":
            k, end = self.single_quoted(i)
        else:
            m = _key_bare().match(text, i)
            if m is None:
                raise _SyntaxError(f"expected a key in double quotes or '}}', found {_show(c)}", i)
            k, end = m.group(), m.end()
            self.ext("unquoted-key", i, end)
        frame.key = k
        frame.key_start = i
        frame.key_span = self.span(i, end)
        ptr = frame.pointer + "/" + _escape(k)
        if k in frame.container:
            first = self.tree.key_spans.get(ptr, frame.key_span)
            self.tree.duplicates.append(Duplicate(ptr, k, first, frame.key_span))
            self.forget(ptr, frame.container.pop(k))  # the later value wins, as with json.load
        self.tree.key_spans[ptr] = frame.key_span
        return end

    def forget(self, ptr: str, old: Any) -> None:
        """Drop positions under a key that is given again: the earlier value's pointers, found by
        walking that value (each value is dropped at most once, so 200,000 duplicates stay linear;
        scanning every table for the pointer's prefix was quadratic: 13.7 s and 981 MB)."""
        tables = (self.tree.key_spans, self.tree.value_spans, self.placeholders_at, self.nonfinite_at, self.quoteless_at)
        stack = [(ptr, old)]
        while stack:
            p, value = stack.pop()
            for table in tables:
                table.pop(p, None)
            if isinstance(value, dict):
                stack.extend((p + "/" + _escape(str(key)), child) for key, child in value.items())
            elif isinstance(value, list):
                stack.extend((p + "/" + str(index), child) for index, child in enumerate(value))

    # -- driver ----------------------------------------------------------------------------
    def close(self, i: int) -> int:
        frame = self.stack.pop()
        if frame.comma_at >= 0:
            self.ext("trailing-comma", frame.comma_at, frame.comma_at + 1)
        self.tree.value_spans[frame.pointer] = self.span(frame.start, i + 1)
        return i + 1

    def run(self) -> None:
        text, n = self.text, self.n
        i = self.skip(0)
        if i >= n:
            raise _SyntaxError("empty document: expected a JSON object", 0)
        i = self.value(i)
        while self.stack:
            frame = self.stack[-1]
            i = self.skip(i)
            newline_before = self.crossed_newline
            if i >= n:
                opener = self.span(frame.start, frame.start + 1)
                closer = "}" if frame.is_object else "]"
                raise _SyntaxError(
                    f"unexpected end of file: '{text[frame.start]}' opened at line {opener.line} column "
                    f"{opener.column} is not closed with '{closer}'", n)
            c = text[i]
            if frame.is_object:
                if frame.state == "key":
                    if c == "}":
                        i = self.close(i)
                        continue
                    if c == ",":
                        raise _SyntaxError("unexpected ',': expected a key in double quotes or '}'", i)
                    i = self.key(frame, i)
                    frame.state = "colon"
                elif frame.state == "colon":
                    if c != ":":
                        raise _SyntaxError(f"expected ':' after the key \"{frame.key}\", found {_show(c)}", i)
                    i += 1
                    frame.state = "value"
                elif frame.state == "value":
                    frame.state = "after"
                    frame.comma_at = -1
                    i = self.value(i)
                else:  # after a member
                    if c == ",":
                        frame.comma_at = i
                        frame.state = "key"
                        i += 1
                    elif c == "}":
                        i = self.close(i)
                    elif newline_before and c not in ":]":
                        self.ext("missing-comma", i, i + 1)
                        frame.state = "key"
                    else:
                        raise _SyntaxError(
                            f"expected ',' or '}}' after the value of \"{frame.key}\", found {_show(c)}", i)
            else:
                if frame.state == "value-or-end":
                    if c == "]":
                        i = self.close(i)
                        continue
                    if c == ",":
                        raise _SyntaxError(f"unexpected ',': expected a value or ']' in {frame.label}", i)
                    frame.state = "after"
                    frame.comma_at = -1
                    i = self.value(i)
                else:
                    if c == ",":
                        frame.comma_at = i
                        frame.state = "value-or-end"
                        i += 1
                    elif c == "]":
                        i = self.close(i)
                    elif newline_before and c not in ":}":
                        self.ext("missing-comma", i, i + 1)
                        frame.state = "value-or-end"
                    else:
                        what = f"element {len(frame.container) - 1} of {frame.label}"
                        raise _SyntaxError(f"expected ',' or ']' after {what}, found {_show(c)}", i)
        i = self.skip(i)
        if i < n:
            raise _SyntaxError(f"unexpected {_show(text[i])} after the end of the document", i)


@cache
def _strict_token() -> re.Pattern[str]:
    """One token of strict JSON after its blanks: a string without raw control characters (group 1; with
    the colon after it, group 5: a key), a number (2), a bracket, colon or comma (3), a literal (4).
    Compiled for the first JSON file read."""
    string = r'"(?:[^"\\\x00-\x1f]|\\[^\x00-\x1f])*"'
    return re.compile(r'[ \t\r\n]*(?:(' + string + r')(?:[ \t\r\n]*(:))?|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?'
                      r'(?:[eE][+-]?[0-9]+)?)|([][{}:,])|(true|false|null))')


_CONTINUES_NUMBER = frozenset("0123456789.+-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
"""A character that would make a number's token longer (``_NUMBERISH``): then it is not a clean number."""
_CONTINUES_WORD = frozenset("_$-.")
_LITERAL_VALUES = {"true": True, "false": False, "null": None}


def _parse_strict(text: str) -> JsonTree | None:
    """The tree :class:`_Parser` gives, for a text that is strict JSON with an object or array at the
    top, no duplicate key and no more than the limits; None for any other text (the full reader then
    reads it). Most configs are strict JSON: one regular expression walks their tokens (the full
    reader calls a handful of methods per token to allow for hjson's extensions), and every value and
    key gets the span and pointer the full reader gives it, in the same order
    (tests/test_json_strict_path.py compares the two over the corpus and edited texts)."""
    tree = JsonTree(text)
    key_spans, value_spans = tree.key_spans, tree.value_spans
    count = text.count
    rfind = text.rfind
    n = len(text)
    line, line_start, cursor = 1, 0, 0  # the position of offset `cursor`, moved forward token by token
    values = 0
    # a frame: [container, is object, pointer, start line, start column, state, key]; states: 0 expecting
    # a key or the end, 2 a value, 3 a comma or the end, 4 a key (after a comma), 5 a value or the end
    # (an array just opened)
    stack: list[list[Any]] = []
    frame: list[Any] | None = None
    root_done = False
    pos = 0
    for m in _strict_token().finditer(text):
        kind = m.lastindex
        start = m.start(1 if kind == 2 else kind)  # type: ignore[arg-type]  # one group always matches
        if m.start() != pos or root_done:
            return None  # a character that is not strict JSON between two tokens, or text after the value
        pos = m.end()
        if kind == 4:
            c = text[start]
            if c == ",":
                if frame is None or frame[5] != 3:
                    return None
                frame[5] = 4 if frame[1] else 2
                continue
            if c == "}" or c == "]":
                if frame is None or frame[1] != (c == "}") or frame[5] not in (0, 3, 5):
                    return None
                end = pos
                breaks = count("\n", cursor, end)
                if breaks:
                    line += breaks
                    line_start = rfind("\n", cursor, end) + 1
                cursor = end
                value_spans[frame[2]] = Span(frame[3], frame[4], line, end - line_start + 1)
                stack.pop()
                if stack:
                    frame = stack[-1]
                else:
                    frame = None
                    root_done = True
                continue
            if c == ":":
                return None  # a colon after anything but a key
        # a key or a value: its span
        breaks = count("\n", cursor, start)
        if breaks:
            line += breaks
            line_start = rfind("\n", cursor, start) + 1
        cursor = start
        first_line, first_column = line, start - line_start + 1
        if kind == 2:  # a key and its colon
            if frame is None or not (frame[5] == 0 or frame[5] == 4):
                return None
            raw = m.group(1)
            if "\\" in raw:
                try:
                    key = json.loads(raw)
                except ValueError:
                    return None
            else:
                key = raw[1:-1]
            if key in frame[0]:
                return None  # a duplicate key: the full reader records it
            end = m.end(1)  # on the key's line: a strict string holds no line break
            cursor = end
            key_spans[frame[2] + "/" + key.replace("~", "~0").replace("/", "~1")] = Span(
                first_line, first_column, line, end - line_start + 1)
            frame[6] = key
            frame[5] = 2
            continue
        if frame is None:
            if kind != 4:
                return None  # only an object or an array at the top
            ptr = ""
        elif frame[5] == 2 or frame[5] == 5:
            ptr = frame[2] + "/" + (frame[6].replace("~", "~0").replace("/", "~1") if frame[1] else str(len(frame[0])))
        else:
            return None
        values += 1
        if not values & 255:
            cancel.check()  # a lint the language server no longer wants stops here
        if values > MAX_VALUES:
            return None
        if kind == 4:  # `{` or `[`
            if len(stack) >= MAX_DEPTH:
                return None
            is_object = text[start] == "{"
            container: Any = {} if is_object else []
            value_spans[ptr] = FILE_START  # its place in the order; the span is set at its end
            if frame is None:
                tree.value = container
            else:
                if frame[1]:
                    frame[0][frame[6]] = container
                else:
                    frame[0].append(container)
                frame[5] = 3
            frame = [container, is_object, ptr, first_line, first_column, 0 if is_object else 5, None]
            stack.append(frame)
            continue
        end = pos
        if kind == 1:
            raw = m.group(1)
            if "\\" in raw:
                try:
                    value: Any = json.loads(raw)
                except ValueError:
                    return None
            else:
                value = raw[1:-1]
        elif kind == 3:
            if end < n and text[end] in _CONTINUES_NUMBER:
                return None
            token = m.group(3)
            value = float(token) if "." in token or "e" in token or "E" in token else read_int(token)
        else:
            if end < n and (text[end].isalnum() or text[end] in _CONTINUES_WORD):
                return None
            value = _LITERAL_VALUES[m.group(5)]
        cursor = end  # on the value's line: no scalar of strict JSON holds a line break
        if frame is None:
            return None  # a scalar at the top: the full reader
        if frame[1]:
            frame[0][frame[6]] = value
        else:
            frame[0].append(value)
        frame[5] = 3
        value_spans[ptr] = Span(first_line, first_column, line, end - line_start + 1)
    if not root_done or text[pos:].strip(" \t\r\n"):
        return None
    return tree


def parse(text: str) -> JsonTree:
    """Parse ``text`` (already decoded, BOM stripped). Never raises on bad input."""
    fast = _parse_strict(text)
    if fast is not None:
        return fast
    return parse_full(text)


def parse_full(text: str) -> JsonTree:
    """:func:`parse` by the reader of everything hjson accepts, whatever the text."""
    parser = _Parser(text)
    try:
        parser.run()
    except _SyntaxError as problem:
        end = problem.end if problem.end is not None else min(problem.offset + 1, len(text))
        span = parser.span(problem.offset, max(end, problem.offset))
        if span.end_line == span.line and span.end_column <= span.column:
            span = Span.point(span.line, span.column)
        parser.tree.error = SyntaxProblem(problem.message, span, problem.code)
    parser.tree.placeholders = list(parser.placeholders_at.values())
    parser.tree.nonfinite = list(parser.nonfinite_at.values())
    parser.tree.quoteless = list(parser.quoteless_at.values())
    return parser.tree
