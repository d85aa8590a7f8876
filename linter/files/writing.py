"""The text-editing kit every format's writer uses: a buffer of planned edits per file, the
files of a run, a mapping editor for JSON and YAML trees (block or flow), value rendering, and the
batch-triple arithmetic DeepSpeed and NeoX assert.

A writer (:class:`Writer`) belongs to its adapter (``Adapter.writer``); :mod:`trainlint.layout.writeback`
drives it, verifies the round trip and hands the new texts to :mod:`trainlint.files.safe_write`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from trainlint.core.results import FileResult
from trainlint.core.document import Document, parent_pointer, pointer_parts
from trainlint.core.positions import Span
from trainlint.files.sources import SourceText, UnreadableSource, read_source
from trainlint.core.spec import TrainingSpec


class WritebackError(ValueError):
    """A change cannot be written back faithfully; the message says which value and where."""


def where(path: str | None, span: Span | None) -> str:
    if path and span:
        return f"{path}:{span.line}:{span.column}"
    return path or "the file"


# ============================================================================ text buffers


def same_file(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:  # pragma: no cover - odd paths
        return os.path.abspath(a) == os.path.abspath(b)


@dataclass
class BufferEdit:
    start: int
    end: int
    text: str
    seq: int


class Buffer:
    """One file's original text and the edits planned on it (applied all at once)."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.edits: list[BufferEdit] = []
        self._starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    # -- positions ------------------------------------------------------------------------
    def offset(self, line: int, column: int) -> int:
        if line - 1 >= len(self._starts):
            return len(self.text)
        return min(self._starts[line - 1] + column - 1, len(self.text))

    def offsets(self, span: Span) -> tuple[int, int]:
        return self.offset(span.line, span.column), self.offset(span.end_line, span.end_column)

    def line_start(self, offset: int) -> int:
        return self.text.rfind("\n", 0, offset) + 1

    def line_end(self, offset: int) -> int:
        end = self.text.find("\n", offset)
        return len(self.text) if end == -1 else end

    def line_no(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def span(self, start: int, end: int) -> Span:
        line = self.line_no(start)
        end_line = self.line_no(end)
        return Span(line, start - self.line_start(start) + 1, end_line, end - self.line_start(end) + 1)

    # -- edits ----------------------------------------------------------------------------
    def replace(self, start: int, end: int, text: str) -> BufferEdit:
        edit = BufferEdit(start, end, text, len(self.edits))
        self.edits.append(edit)
        return edit

    def insert(self, at: int, text: str) -> BufferEdit:
        return self.replace(at, at, text)

    def result(self) -> str:
        out: list[str] = []
        pos = 0
        # inserts before replacements at the same offset; otherwise in the order planned
        for e in sorted(self.edits, key=lambda e: (e.start, e.end > e.start, e.seq)):
            if e.start < pos:
                raise WritebackError(f"{self.path}: two changes touch the same text near line {self.line_no(e.start)}")
            out.append(self.text[pos:e.start])
            out.append(e.text)
            pos = max(pos, e.end)
        out.append(self.text[pos:])
        return "".join(out)


class Texts:
    """The original text of every file a run reads, and the buffers edits go to."""

    def __init__(self, result: FileResult, environment: dict[str, str]) -> None:
        self.result = result
        self.environment = environment
        self.known: dict[str, str] = {}
        self.buffers: dict[str, Buffer] = {}
        virtual = virtual_documents(result)
        main = main_document(result)
        if main is not None:
            self.known[result.path] = main.text
        for doc in result.documents:
            if id(doc) in virtual or any(same_file(doc.path, p) for p in self.known):
                continue
            self.known[doc.path] = doc.text

    def add_known(self, path: str, text: str) -> None:
        if not any(same_file(path, p) for p in self.known):
            self.known[path] = text

    def original(self, path: str) -> str:
        for known, text in self.known.items():
            if same_file(known, path):
                return text
        try:
            text = read_source(path).text
        except UnreadableSource as exc:
            raise WritebackError(f"cannot read {path} to rewrite it: {exc.diagnostic.message}") from None
        self.known[path] = text
        return text

    def buffer(self, path: str) -> Buffer:
        for known, buf in self.buffers.items():
            if same_file(known, path):
                return buf
        buf = Buffer(path, self.original(path))
        self.buffers[path] = buf
        return buf

    def changed(self) -> dict[str, str]:
        out = {}
        for path, buf in self.buffers.items():
            if buf.edits:
                new = buf.result()
                if new != buf.text:
                    out[path] = new
        return out

    def reader(self, overrides: Mapping[str, str]) -> Callable[[str], SourceText]:
        """A LoadContext.read that serves ``overrides`` (else the known originals, else the disk)."""
        def read(path: str) -> SourceText:
            for known, text in overrides.items():
                if same_file(known, path):
                    return SourceText(path, text)
            for known, text in self.known.items():
                if same_file(known, path):
                    return SourceText(path, text)
            return read_source(path)
        return read


def main_document(result: FileResult) -> Document | None:
    docs = [d for d in result.documents if same_file(d.path, result.path)]
    for doc in docs:
        if doc.format == result.format:
            return doc
    return docs[0] if docs else None


def virtual_documents(result: FileResult) -> set[int]:
    """Documents of another format embedded in a file of the result's own format (DeepSpeed JSONs a
    launch script writes with a here-document): their Document has the file's path but a text of
    its own (the body placed at its line and column)."""
    own = [d for d in result.documents if d.format == result.format]
    return {id(doc) for doc in result.documents
            if doc.format != result.format and any(same_file(doc.path, d.path) for d in own)}


# ======================================================================== value rendering


def json_value(value: Any) -> str:
    return json.dumps(value)


_YAML_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_YAML_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def yaml_value(value: Any, old_token: str | None = None) -> str:
    if isinstance(value, bool):
        word = "true" if value else "false"
        if old_token and old_token[:1].isupper():
            word = word.capitalize()
        return word
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    quote = old_token[:1] if old_token and old_token[:1] in "\"'" else ""
    if quote:
        return json.dumps(text) if quote == '"' else "'" + text.replace("'", "''") + "'"
    if _YAML_PLAIN.fullmatch(text) and text.lower() not in _YAML_RESERVED:
        return text
    return json.dumps(text)


# ======================================================================= mapping editor


class TextMapping:
    """Edits a parsed mapping tree (JSON / hjson, or YAML block or flow) through a buffer.

    ``key_spans``/``value_spans`` are keyed by JSON pointers of the keys *as written* in this
    file; ``source`` is the text the spans were computed on (the buffer's own text, except for a
    here-document JSON inside a launch script, whose spans are checked before any edit)."""

    def __init__(self, buf: Buffer, data: Any, key_spans: Mapping[str, Span], value_spans: Mapping[str, Span],
                 flavor: str, source: str | None = None, label: str | None = None) -> None:
        self.buf = buf
        self.data = data
        self.key_spans = key_spans
        self.value_spans = value_spans
        self.flavor = flavor  # "json" | "yaml"
        self.source = buf.text if source is None else source
        self.label = label or buf.path
        self.virtual = source is not None and source != buf.text
        self.deleted: set[str] = set()

    # -- reading --------------------------------------------------------------------------
    def get(self, ptr: str, fallback: Any = None) -> Any:
        node = self.data
        for part in pointer_parts(ptr):
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                return fallback
        return node

    def has(self, ptr: str) -> bool:
        return ptr in self.key_spans

    def children(self, ptr: str) -> list[str]:
        """The members of a mapping in file order (without those deleted by this writer)."""
        kids = [p for p in self.key_spans if p and parent_pointer(p) == ptr and p not in self.deleted]
        return sorted(kids, key=lambda p: (self.key_spans[p].line, self.key_spans[p].column))

    def where(self, ptr: str) -> str:
        span = self.value_spans.get(ptr) or self.key_spans.get(ptr)
        return where(self.label, span)

    def _checked(self, span: Span) -> tuple[int, int]:
        a, b = self.buf.offsets(span)
        if self.virtual:
            src = Buffer("", self.source)
            sa, sb = src.offsets(span)
            if self.source[sa:sb] != self.buf.text[a:b]:
                raise WritebackError(
                    f"the DeepSpeed config at {where(self.label, span)} is written by a here-document that expands "
                    "shell variables; trainlint does not rewrite it")
        return a, b

    def is_flow(self, ptr: str) -> bool:
        span = self.value_spans.get(ptr)
        if span is None:
            return False
        a, _ = self.buf.offsets(span)
        return self.buf.text[a:a + 1] in ("{", "[")

    # -- editing --------------------------------------------------------------------------
    def render(self, value: Any, old_token: str | None = None) -> str:
        if self.flavor == "json":
            return json_value(value)
        return yaml_value(value, old_token)

    def replace(self, ptr: str, value: Any) -> None:
        span = self.value_spans.get(ptr)
        if span is None:
            raise WritebackError(f"{self.where(ptr)}: `{dotted(ptr)}` has no value to replace")
        a, b = self._checked(span)
        old = self.buf.text[a:b]
        self.buf.replace(a, b, self.render(value, old))

    def insert(self, parent: str, key: str, value: Any, after: str | None = None) -> None:
        """Add ``key: value`` to the mapping at ``parent`` (after the member ``after``, else last)."""
        if self.virtual:
            raise WritebackError(f"{self.label}: the DeepSpeed config is written by a here-document; trainlint does "
                                 f"not add `{key}` to it")
        span = self.value_spans.get(parent)
        if span is None:
            raise WritebackError(f"{self.label}: cannot find `{dotted(parent) or 'the top level'}` to add `{key}`")
        members = self.children(parent)
        if self.is_flow(parent) or self.flavor == "json":
            self._insert_flow(parent, span, members, key, value, after)
        else:
            if not members:
                raise WritebackError(f"{self.where(parent)}: cannot add `{key}` to an empty mapping")
            self._insert_block(members, key, value, after)

    def _key_text(self, sibling: str | None, key: str) -> str:
        if sibling is not None:
            a, _ = self.buf.offsets(self.key_spans[sibling])
            quote = self.buf.text[a:a + 1]
            if quote in ("\"", "'"):
                return f"{quote}{key}{quote}"
            if self.flavor == "json":
                return key  # hjson unquoted keys: follow the file
        return json.dumps(key) if self.flavor == "json" else key

    def _colon(self, sibling: str | None) -> str:
        """How the file separates a key from its value (``": "``, ``" : "``, ``":"``)."""
        if sibling is not None and sibling in self.value_spans:
            _, kb = self.buf.offsets(self.key_spans[sibling])
            va, _ = self.buf.offsets(self.value_spans[sibling])
            between = self.buf.text[kb:va]
            if re.fullmatch(r"[ \t]*:[ \t]*", between) and (between.endswith((" ", "\t")) or self.flavor == "json"):
                return between
        return ": "

    def _indent_unit(self) -> int:
        """Columns one nesting level adds in this file (from the first nested member), else 2."""
        for ptr, span in self.key_spans.items():
            parent = parent_pointer(ptr)
            if parent and parent in self.key_spans:
                outer = self.key_spans[parent]
                if span.line != outer.line and span.column > outer.column and self._starts_line(span):
                    return span.column - outer.column
        for ptr, span in self.key_spans.items():
            if parent_pointer(ptr) == "" and self._starts_line(span) and span.column > 1:
                return span.column - 1
        return 2

    def _starts_line(self, span: Span) -> bool:
        a, _ = self.buf.offsets(span)
        return self.buf.text[self.buf.line_start(a):a].strip() == ""

    def _inline_object(self, sibling: str | None, value: dict) -> str:
        parts = [f"{self._key_text(sibling, str(k))}{self._colon(sibling)}{self.render(v)}" for k, v in value.items()]
        return "{" + ", ".join(parts) + "}"

    def _flow_value(self, sibling: str | None, value: Any, indent: str, multiline: bool) -> str:
        if not isinstance(value, dict):
            return self.render(value)
        if not multiline or not value:
            return self._inline_object(sibling, value)
        inner = indent + " " * self._indent_unit()
        lines = [f"{inner}{self._key_text(sibling, str(k))}{self._colon(sibling)}{self._flow_value(sibling, v, inner, True)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(lines) + "\n" + indent + "}"

    def _nested_multiline(self, parent: str) -> bool:
        """Whether this file writes nested objects over several lines (the DeepSpeed default)."""
        multi = single = 0
        for ptr, span in self.value_spans.items():
            if ptr and isinstance(self.get(ptr), dict) and self.get(ptr) and ptr in self.key_spans:
                if span.line != span.end_line:
                    multi += 1
                else:
                    single += 1
        return multi >= single

    def _insert_flow(self, parent: str, span: Span, members: list[str], key: str, value: Any,
                     after: str | None) -> None:
        text = self.buf.text
        a, b = self.buf.offsets(span)
        close = b - 1
        if text[a:a + 1] != "{" or text[close:close + 1] != "}":
            raise WritebackError(f"{self.where(parent)}: `{dotted(parent) or 'the top level'}` is not an object")
        if not members:
            if text[a + 1:close].strip():
                raise WritebackError(f"{self.where(parent)}: cannot add `{key}` to this object (it holds only comments)")
            self.buf.replace(a + 1, close, f"{self._key_text(None, key)}: {self._flow_value(None, value, '', False)}")
            return
        anchor = after if after in members else members[-1]
        last = anchor == members[-1]
        ka, _ = self.buf.offsets(self.key_spans[anchor])
        vspan = self.value_spans.get(anchor) or self.key_spans[anchor]
        _, vb = self.buf.offsets(vspan)
        j = vb
        while j < len(text) and text[j] in " \t":
            j += 1
        has_comma = text[j:j + 1] == ","
        ktxt = self._key_text(anchor, key) + self._colon(anchor)
        line_start = self.buf.line_start(ka)
        indent = text[line_start:ka]
        multiline = indent.strip() == "" and self.buf.line_no(ka) != self.buf.line_no(close)
        if not last:
            nxt = members[members.index(anchor) + 1]
            na, _ = self.buf.offsets(self.key_spans[nxt])
            multiline = multiline and self.buf.line_no(na) != self.buf.line_no(vb)
        nested_multi = multiline and self._nested_multiline(parent)
        vtxt = self._flow_value(anchor, value, indent if multiline else "", nested_multi)
        if multiline:
            if has_comma:
                self.buf.insert(self.buf.line_end(j), f"\n{indent}{ktxt}{vtxt},")
            elif last:
                self.buf.insert(vb, ",")
                self.buf.insert(self.buf.line_end(vb), f"\n{indent}{ktxt}{vtxt}")
            else:  # members separated by line breaks (hjson): keep that
                self.buf.insert(self.buf.line_end(vb), f"\n{indent}{ktxt}{vtxt}")
        elif has_comma:
            self.buf.insert(j + 1, f" {ktxt}{vtxt},")
        else:
            self.buf.insert(vb, f", {ktxt}{vtxt}")

    def _insert_block(self, members: list[str], key: str, value: Any, after: str | None) -> None:
        text = self.buf.text
        anchor = after if after in members else members[-1]
        ka, _ = self.buf.offsets(self.key_spans[anchor])
        indent = text[self.buf.line_start(ka):ka]
        if indent.strip():
            raise WritebackError(f"{self.where(anchor)}: cannot add `{key}` next to `{dotted(anchor)}` (not a "
                                 "simple block mapping)")
        vspan = self.value_spans.get(anchor) or self.key_spans[anchor]
        _, end = self.buf.offsets(vspan)
        if end > 0 and end == self.buf.line_start(end) and end > ka:
            end -= 1  # the value ends with its line break
        ktxt = self._key_text(anchor, key)
        if isinstance(value, dict):
            inner = indent + " " * self._indent_unit()
            body = "".join(f"\n{inner}{self._key_text(anchor, str(k))}: {self.render(v)}" for k, v in value.items())
            line = f"{ktxt}:{body}"
        else:
            line = f"{ktxt}: {self.render(value)}"
        self.buf.insert(self.buf.line_end(end), f"\n{indent}{line}")

    def delete(self, ptr: str) -> None:
        """Remove a one-line member (``key: value`` alone on its line)."""
        text = self.buf.text
        ka, _ = self.buf.offsets(self.key_spans[ptr])
        vspan = self.value_spans.get(ptr) or self.key_spans[ptr]
        _, vb = self.buf.offsets(vspan)
        ls, le = self.buf.line_start(ka), self.buf.line_end(vb)
        rest = text[vb:le].strip()
        if rest.startswith(","):
            rest = rest[1:].strip()
        if text[ls:ka].strip() or (rest and not rest.startswith(("#", "//"))):
            raise WritebackError(f"{self.where(ptr)}: cannot remove `{dotted(ptr)}` (it shares its line with "
                                 "other settings)")
        self.buf.replace(ls, min(le + 1, len(text)), "")
        self.deleted.add(ptr)


def dotted(ptr: str) -> str:
    return ".".join(pointer_parts(ptr))


# ===================================================================== batch consistency

BATCH_KEYS = ("batch.micro_batch", "batch.grad_accum", "batch.global_batch")


def fill_batch(written: dict[str, Any], changes: dict[str, Any], dp: int | None) -> dict[str, int]:
    """The batch values to write: those in ``changes`` plus, when the file writes all three of
    the triple (numbers, not "auto"), the one needed to keep global = micro x accumulation x DP.

    ``written`` maps batch keys to the file's values (None: not written). DeepSpeed and NeoX
    assert the identity when all three are given."""
    out = {k: changes[k] for k in BATCH_KEYS if k in changes}
    numbers = {k: v for k, v in written.items() if isinstance(v, int) and not isinstance(v, bool)}
    if len(numbers) < 3 or not out or any(v is None for v in out.values()):
        return out  # None: the key goes away (NeoX) or is refused (DeepSpeed)
    m0, g0, t0 = (numbers[k] for k in BATCH_KEYS)
    if dp is None and m0 > 0 and g0 > 0 and t0 % (m0 * g0) == 0:
        dp = t0 // (m0 * g0)
    if dp is None:
        return out
    m = out.get("batch.micro_batch", m0)
    g = out.get("batch.grad_accum", g0)
    t = out.get("batch.global_batch", t0)
    if t == m * g * dp:
        return out
    if "batch.grad_accum" not in out and m * dp > 0 and t % (m * dp) == 0:
        out["batch.grad_accum"] = t // (m * dp)
    elif "batch.global_batch" not in out:
        out["batch.global_batch"] = m * g * dp
    elif "batch.micro_batch" not in out and g * dp > 0 and t % (g * dp) == 0:
        out["batch.micro_batch"] = t // (g * dp)
    else:
        raise WritebackError(f"the batch sizes asked for are inconsistent: global {t} != micro {m} x accumulation {g} "
                             f"x data-parallel {dp}")
    return out


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ============================================================================== writers


class Writer:
    """The write-back half of an adapter: applies layout changes (the keys of
    :data:`trainlint.layout.changes.CHANGE_KEYS`, already normalised) to one run as edits on
    the :class:`Texts` it was given. :meth:`run` plans every edit (or raises
    :class:`WritebackError` naming the value that cannot be written); nothing is written to disk
    here: the driver verifies the round trip and :mod:`trainlint.files.safe_write` writes."""

    touched: set[str]
    """Settings keys (spec.settings) the writer changed, added or removed: the round trip does
    not compare these."""
    implied: dict[str, Any] = {}
    """Values written besides the changes asked for (the batch triple kept consistent)."""
    noop: frozenset[str] | set[str] = frozenset()
    """Changes the format has no setting for that ask for what the run already does."""
    unverified: frozenset[str] = frozenset()
    """Change keys the format derives itself, so the round trip does not read them back
    (Megatron-LM computes the accumulation from the global batch, micro batch and DP)."""
    reading: Any = None
    """The adapter's ``LoadResult`` of the original text when the writer read it again itself (with the
    round trip's reader, environment and frameworks): the round trip's "before" is that reading, not a
    third one. None: the round trip reads it."""

    def unsupported(self, spec: TrainingSpec, key: str, value: Any, what: str) -> None:
        refuse_unsupported(spec, key, value, what)
        self.noop = set(self.noop) | {key}

    def run(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


# What "not used" reads as, per field, when a format has no setting for it.
_NEUTRAL: dict[str, tuple[Any, ...]] = {
    "parallel.virtual_pipeline": (None, 1), "parallel.context": (None, 1), "parallel.sequence_parallel": (None, False),
    "parallel.distributed_optimizer": (None, False), "parallel.zero_stage": (None, 0),
    "parallel.pipeline_engine": (None, False), "memory.recompute": (None, "none"),
    "memory.recompute_method": (None, "uniform"), "memory.recompute_num_layers": (None,),
}


def refuse_unsupported(spec: TrainingSpec, key: str, value: Any, what: str) -> None:
    """A change the format cannot express: fine when it asks for what the run already does."""
    current = spec.value(key)
    neutral = _NEUTRAL.get(key, (None,))
    if value == current or (value in neutral and current in neutral):
        return
    if key == "memory.recompute_method" and value in neutral:
        return  # the method only matters with full recompute, which the format decides itself
    raise WritebackError(f"{what} has no setting for {key} (asked: {value!r}, the run has {current!r}); trainlint "
                         "cannot write it")


