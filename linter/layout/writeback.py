"""Writing a chosen layout back into the config it came from (``trainlint suggest --write-to``).

:func:`rewrite` takes the file as the checker read it, the spec of the run and a dict of
changes keyed by spec field (see /work/notes/layout-interface.md) and returns the new text of
every file that has to change. Everything that is not part of the layout stays byte for byte:
values are replaced in place, at the span the adapter recorded; missing settings are added next
to related ones, in the file's own style; nothing is re-serialised.

Per format:

* **DeepSpeed JSON** (hjson-ish too): the value token is replaced; a missing key is added to the
  right object (created when absent) with the file's indentation and quoting; the batch triple
  ``train_batch_size = micro x accumulation x DP`` stays consistent when the file writes all three
  (DeepSpeed asserts it); ``"auto"`` stays ``"auto"`` unless the change is to that key.
* **GPT-NeoX YAML** (block or the JSON-like flow style of NeoX's own configs, one file or a run of
  several): the same on YAML scalars, in the file where the key is set; a new key goes next to a
  related key (in the file that has one, else the first file) with that file's ``-``/``_``
  spelling; a new ``zero_optimization`` repeats NeoX's defaults (NeoX replaces the dict whole).
* **Megatron-LM launch scripts**: a literal argument is replaced where it is written; a value that
  comes from a variable is replaced at the variable's assignment when that assignment is a plain
  literal used only by this flag, else the flag's argument (``$TP``) is replaced by the literal.
  Missing flags go next to related flags (a new array element line, a ``\\``-continued line, or
  inline), or take the place of a flag of the same kind that goes away; flags a change switches
  off are removed (with the line when nothing else is on it, and the ``\\`` of the line that then
  ends the command). Recompute is written with the modern flags
  (``--recompute-granularity/--recompute-method/--recompute-num-layers``) in current Megatron-LM,
  ``--checkpoint-activations`` in Megatron-DeepSpeed and older copies. ``MODEL_ARGS`` YAML files
  are edited as YAML. A ``--deepspeed_config`` JSON that repeats the batch sizes follows.

A change that cannot be written faithfully (a value from ``$1``, computed by ``$((...))``, taken
from the environment, a template placeholder, ...) raises :class:`WritebackError` naming the value
and where it is written. After rewriting, the new text is read again through the same adapter
and must give the requested values with every other setting unchanged; otherwise
:class:`WritebackError` too (nothing is returned that does not round-trip).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from trainlint.checker import FileResult
from trainlint.document import Document, parent_pointer, pointer, pointer_parts
from trainlint.positions import Span
from trainlint.provenance import Origin, Value
from trainlint.sources import SourceText, UnreadableSource, read_source
from trainlint.spec import MEGATRON_LM, TrainingSpec

__all__ = ["CHANGE_KEYS", "FileRewrite", "WritebackError", "rewrite", "rewrite_files"]


class WritebackError(ValueError):
    """A change cannot be written back faithfully; the message says which value and where."""


CHANGE_KEYS = frozenset({
    "parallel.tensor", "parallel.pipeline", "parallel.virtual_pipeline", "parallel.context", "parallel.data",
    "parallel.sequence_parallel", "parallel.zero_stage", "parallel.distributed_optimizer",
    "parallel.pipeline_engine", "batch.micro_batch", "batch.grad_accum", "batch.global_batch",
    "memory.recompute", "memory.recompute_method", "memory.recompute_num_layers",
})
_ALIASES = {"parallel.virtual_stages": "parallel.virtual_pipeline"}
_INFORMATIONAL = {"parallel.data"}
"""Keys no framework writes (DP is derived from the world size): used for consistency only."""

# GPT-NeoX's zero_optimization when the config gives none (ZERO_DEFAULTS in
# megatron/neox_arguments/arguments.py, EleutherAI/gpt-neox @ ea7aefd). A zero_optimization dict
# replaces it whole ("a dict is overwritten and not updated key by key"), so a new one repeats it.
NEOX_ZERO_DEFAULTS = {
    "stage": 0, "allgather_partitions": True, "reduce_scatter": True, "allgather_bucket_size": 500000000,
    "overlap_comm": False, "reduce_bucket_size": 500000000, "contiguous_gradients": False,
}


# =============================================================================== entry point


@dataclass(frozen=True)
class FileRewrite:
    path: str
    text: str
    """The new text, normalised as the readers give it (``\n`` line ends, no BOM):
    :func:`trainlint.safe_write.write_back` puts the file's encoding and line ends back."""
    original_hash: str
    """``safe_write.text_hash`` of the text the change was made from: the write refuses when the
    file no longer has it."""


def rewrite(result: FileResult, spec: TrainingSpec, changes: Mapping[str, Any], *,
            environment: Mapping[str, str] | None = None, verify: bool = True) -> dict[str, str]:
    """The new (normalised) text of every file that must change to apply ``changes`` to ``spec``'s run."""
    return {f.path: f.text for f in rewrite_files(result, spec, changes, environment=environment, verify=verify)}


def rewrite_files(result: FileResult, spec: TrainingSpec, changes: Mapping[str, Any], *,
                  environment: Mapping[str, str] | None = None, verify: bool = True) -> list[FileRewrite]:
    """Every file that must change to apply ``changes`` to ``spec``'s run: its new text and the
    hash of the text it was made from (write them with ``trainlint.safe_write.write_back``).

    ``environment``: the shell variables the file was checked with (``--env`` / the project
    config), so that a launch script is read again the same way. ``verify``: re-read the new
    text through the adapter and check the round trip (on by default; cheap)."""
    if result.format is None or not result.specs:
        raise WritebackError(f"{result.path}: no training run was read from this file; nothing to write back")
    wanted = _normalise(changes)
    env = dict(environment or {})
    index = _spec_index(result, spec)
    texts = _Texts(result, env)
    writer: _Writer
    if result.format == "deepspeed":
        writer = _DeepSpeedWriter(texts, result, spec, wanted)
    elif result.format == "neox":
        writer = _NeoXWriter(texts, result, spec, wanted)
    elif result.format == "megatron":
        writer = _MegatronWriter(texts, result, spec, wanted, index)
    else:
        raise WritebackError(f"{result.path}: trainlint cannot write a layout back into a {result.format} file")
    writer.run()
    new_texts = texts.changed()
    if verify and new_texts:
        checked = {k: v for k, v in {**writer.implied, **wanted}.items() if k not in getattr(writer, "noop", set())}
        _verify(result, index, checked, texts, new_texts, writer.touched, env)
    from trainlint.safe_write import text_hash

    return [FileRewrite(path, text, text_hash(texts.original(path))) for path, text in new_texts.items()]


def _normalise(changes: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in changes.items():
        key = _ALIASES.get(key, key)
        if key not in CHANGE_KEYS:
            raise WritebackError(f"unknown change key {key!r}; expected one of {', '.join(sorted(CHANGE_KEYS))}")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        out[key] = value
    rec = out.get("memory.recompute")
    if rec is not None and rec not in ("none", "selective", "full"):
        raise WritebackError(f"memory.recompute must be none, selective or full, not {rec!r}")
    return out


def _spec_index(result: FileResult, spec: TrainingSpec) -> int:
    for i, candidate in enumerate(result.specs):
        if candidate is spec:
            return i
    for i, candidate in enumerate(result.specs):
        if candidate.label == spec.label and candidate.path == spec.path:
            return i
    raise WritebackError(f"{result.path}: the run to rewrite ({spec.label or spec.path}) is not one of this file's runs")


def _where(path: str | None, span: Span | None) -> str:
    if path and span:
        return f"{path}:{span.line}:{span.column}"
    return path or "the file"


# ============================================================================ text buffers


def _same_file(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:  # pragma: no cover - odd paths
        return os.path.abspath(a) == os.path.abspath(b)


@dataclass
class _Edit:
    start: int
    end: int
    text: str
    seq: int


class _Buffer:
    """One file's original text and the edits planned on it (applied all at once)."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.edits: list[_Edit] = []
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
    def replace(self, start: int, end: int, text: str) -> _Edit:
        edit = _Edit(start, end, text, len(self.edits))
        self.edits.append(edit)
        return edit

    def insert(self, at: int, text: str) -> _Edit:
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


class _Texts:
    """The original text of every file a run reads, and the buffers edits go to."""

    def __init__(self, result: FileResult, environment: dict[str, str]) -> None:
        self.result = result
        self.environment = environment
        self.known: dict[str, str] = {}
        self.buffers: dict[str, _Buffer] = {}
        virtual = _virtual_documents(result)
        main = _main_document(result)
        if main is not None:
            self.known[result.path] = main.text
        for doc in result.documents:
            if id(doc) in virtual or any(_same_file(doc.path, p) for p in self.known):
                continue
            self.known[doc.path] = doc.text

    def add_known(self, path: str, text: str) -> None:
        if not any(_same_file(path, p) for p in self.known):
            self.known[path] = text

    def original(self, path: str) -> str:
        for known, text in self.known.items():
            if _same_file(known, path):
                return text
        try:
            text = read_source(path).text
        except UnreadableSource as exc:
            raise WritebackError(f"cannot read {path} to rewrite it: {exc.diagnostic.message}") from None
        self.known[path] = text
        return text

    def buffer(self, path: str) -> _Buffer:
        for known, buf in self.buffers.items():
            if _same_file(known, path):
                return buf
        buf = _Buffer(path, self.original(path))
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
                if _same_file(known, path):
                    return SourceText(path, text)
            for known, text in self.known.items():
                if _same_file(known, path):
                    return SourceText(path, text)
            return read_source(path)
        return read


def _main_document(result: FileResult) -> Document | None:
    docs = [d for d in result.documents if _same_file(d.path, result.path)]
    for doc in docs:
        if doc.format == result.format:
            return doc
    return docs[0] if docs else None


def _virtual_documents(result: FileResult) -> set[int]:
    """DeepSpeed JSONs a launch script writes with a here-document: their Document has the
    script's path but a text of its own (the body placed at its line and column)."""
    out: set[int] = set()
    if result.format != "megatron":
        return out
    for doc in result.documents:
        if doc.format == "deepspeed" and any(_same_file(doc.path, d.path) and d.format == "megatron"
                                              for d in result.documents):
            out.add(id(doc))
    return out


# ======================================================================== value rendering


def _json_value(value: Any) -> str:
    return json.dumps(value)


_YAML_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_YAML_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _yaml_value(value: Any, old_token: str | None = None) -> str:
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


class _Mapping:
    """Edits a parsed mapping tree (JSON / hjson, or YAML block or flow) through a buffer.

    ``key_spans``/``value_spans`` are keyed by JSON pointers of the keys *as written* in this
    file; ``source`` is the text the spans were computed on (the buffer's own text, except for a
    here-document JSON inside a launch script, whose spans are checked before any edit)."""

    def __init__(self, buf: _Buffer, data: Any, key_spans: Mapping[str, Span], value_spans: Mapping[str, Span],
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
        return _where(self.label, span)

    def _checked(self, span: Span) -> tuple[int, int]:
        a, b = self.buf.offsets(span)
        if self.virtual:
            src = _Buffer("", self.source)
            sa, sb = src.offsets(span)
            if self.source[sa:sb] != self.buf.text[a:b]:
                raise WritebackError(
                    f"the DeepSpeed config at {_where(self.label, span)} is written by a here-document that expands "
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
            return _json_value(value)
        return _yaml_value(value, old_token)

    def replace(self, ptr: str, value: Any) -> None:
        span = self.value_spans.get(ptr)
        if span is None:
            raise WritebackError(f"{self.where(ptr)}: `{_dotted(ptr)}` has no value to replace")
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
            raise WritebackError(f"{self.label}: cannot find `{_dotted(parent) or 'the top level'}` to add `{key}`")
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
            raise WritebackError(f"{self.where(parent)}: `{_dotted(parent) or 'the top level'}` is not an object")
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
            raise WritebackError(f"{self.where(anchor)}: cannot add `{key}` next to `{_dotted(anchor)}` (not a "
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
            raise WritebackError(f"{self.where(ptr)}: cannot remove `{_dotted(ptr)}` (it shares its line with "
                                 "other settings)")
        self.buf.replace(ls, min(le + 1, len(text)), "")
        self.deleted.add(ptr)


def _dotted(ptr: str) -> str:
    return ".".join(pointer_parts(ptr))


# ===================================================================== batch consistency

_BATCH = ("batch.micro_batch", "batch.grad_accum", "batch.global_batch")


def _fill_batch(written: dict[str, Any], changes: dict[str, Any], dp: int | None) -> dict[str, int]:
    """The batch values to write: those in ``changes`` plus, when the file writes all three of
    the triple (numbers, not "auto"), the one needed to keep global = micro x accumulation x DP.

    ``written`` maps batch keys to the file's values (None: not written). DeepSpeed and NeoX
    assert the identity when all three are given."""
    out = {k: changes[k] for k in _BATCH if k in changes}
    numbers = {k: v for k, v in written.items() if isinstance(v, int) and not isinstance(v, bool)}
    if len(numbers) < 3 or not out or any(v is None for v in out.values()):
        return out  # None: the key goes away (NeoX) or is refused (DeepSpeed)
    m0, g0, t0 = (numbers[k] for k in _BATCH)
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


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ============================================================================== writers


class _Writer:
    touched: set[str]
    """Settings keys (spec.settings) the writer changed, added or removed: the round trip does
    not compare these."""
    implied: dict[str, Any] = {}
    """Values written besides the changes asked for (the batch triple kept consistent)."""
    noop: set[str]
    """Changes the format has no setting for that ask for what the run already does."""

    def unsupported(self, spec: TrainingSpec, key: str, value: Any, what: str) -> None:
        _unsupported(spec, key, value, what)
        self.noop = getattr(self, "noop", set()) | {key}

    def run(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


# What "not used" reads as, per field, when a format has no setting for it.
_NEUTRAL: dict[str, tuple[Any, ...]] = {
    "parallel.virtual_pipeline": (None, 1), "parallel.context": (None, 1), "parallel.sequence_parallel": (None, False),
    "parallel.distributed_optimizer": (None, False), "parallel.zero_stage": (None, 0),
    "parallel.pipeline_engine": (None, False), "memory.recompute": (None, "none"),
    "memory.recompute_method": (None, "uniform"), "memory.recompute_num_layers": (None,),
}


def _unsupported(spec: TrainingSpec, key: str, value: Any, what: str) -> None:
    """A change the format cannot express: fine when it asks for what the run already does."""
    current = spec.value(key)
    neutral = _NEUTRAL.get(key, (None,))
    if value == current or (value in neutral and current in neutral):
        return
    if key == "memory.recompute_method" and value in neutral:
        return  # the method only matters with full recompute, which the format decides itself
    raise WritebackError(f"{what} has no setting for {key} (asked: {value!r}, the run has {current!r}); trainlint "
                         "cannot write it")


# ------------------------------------------------------------------------------- DeepSpeed


class _DeepSpeedJson:
    """One DeepSpeed JSON (the config itself, or the --deepspeed_config of a Megatron run)."""

    def __init__(self, texts: _Texts, doc: Document, virtual: bool = False) -> None:
        buf = texts.buffer(doc.path)
        self.doc = doc
        self.map = _Mapping(buf, doc.data, doc.key_spans, doc.value_spans, "json",
                            source=doc.text if virtual else None, label=doc.path)
        self.touched: set[str] = set()

    def written(self, key: str) -> Any:
        """A top-level value as written (None when absent, "auto"/placeholders as strings)."""
        ptr = pointer([key])
        return self.doc.get(ptr) if self.map.has(ptr) else None

    def set(self, parts: list[str], value: Any) -> None:
        ptr = pointer(parts)
        if value is None:
            raise WritebackError(f"removing `{'.'.join(parts)}` from a DeepSpeed config is not supported")
        self.touched.add(".".join(parts))
        if self.map.has(ptr):
            current = self.doc.get(ptr)
            if isinstance(current, (dict, list)):
                raise WritebackError(f"{self.map.where(ptr)}: `{'.'.join(parts)}` is not a single value")
            reason = self.doc.unresolved.get(ptr)
            if reason is not None and current != "auto":
                raise WritebackError(f"{self.map.where(ptr)}: `{'.'.join(parts)}` is {reason}, filled in by a script "
                                     "before launch; trainlint does not overwrite the template")
            self.map.replace(ptr, value)
            return
        # the deepest object that exists
        depth = len(parts) - 1
        while depth > 0 and not self.map.has(pointer(parts[:depth])):
            depth -= 1
        parent = pointer(parts[:depth])
        node = self.doc.get(parent)
        nested: Any = value
        for part in reversed(parts[depth + 1:]):
            nested = {part: nested}
        if isinstance(node, dict):
            self.map.insert(parent, parts[depth], nested, after=self._after(parent, parts[depth]))
        elif isinstance(node, bool) and parts[:1] == ["zero_optimization"] and depth == 1:
            # the deprecated `"zero_optimization": true` form: an object says the stage
            self.touched.add("zero_optimization")
            self.map.replace(parent, {parts[depth]: nested})
        else:
            raise WritebackError(f"{self.map.where(parent)}: `{_dotted(parent)}` is not an object; cannot add "
                                 f"`{'.'.join(parts)}`")

    def _after(self, parent: str, key: str) -> str | None:
        if parent:
            return None
        order = ["train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"]
        if key in order:
            present = [pointer([k]) for k in order if self.map.has(pointer([k]))]
            return present[-1] if present else None
        return None


_DS_BATCH_KEYS = {"batch.micro_batch": "train_micro_batch_size_per_gpu",
                  "batch.grad_accum": "gradient_accumulation_steps", "batch.global_batch": "train_batch_size"}


class _DeepSpeedWriter(_Writer):
    def __init__(self, texts: _Texts, result: FileResult, spec: TrainingSpec, changes: dict[str, Any]) -> None:
        doc = _main_document(result)
        if doc is None:
            raise WritebackError(f"{result.path}: the DeepSpeed config was not read (syntax error?)")
        self.json = _DeepSpeedJson(texts, doc)
        self.spec = spec
        self.changes = changes
        self.touched = self.json.touched

    def run(self) -> None:
        c, spec = self.changes, self.spec
        for key, parts in (("parallel.zero_stage", ["zero_optimization", "stage"]),
                           ("parallel.tensor", ["tensor_parallel", "autotp_size"]),
                           ("parallel.pipeline", ["pipeline", "stages"])):
            if key in c:
                if c[key] is None:
                    raise WritebackError(f"{key}: removing it from a DeepSpeed config is not supported")
                self.json.set(parts, c[key])
        written = {k: self.json.written(name) for k, name in _DS_BATCH_KEYS.items()}
        dp = _int(c.get("parallel.data"))
        batch = _fill_batch(written, c, dp)
        self.implied = {k: v for k, v in batch.items() if k not in c}
        for key, value in batch.items():
            self.json.set([_DS_BATCH_KEYS[key]], value)
        for key in ("parallel.virtual_pipeline", "parallel.context", "parallel.sequence_parallel",
                    "parallel.distributed_optimizer", "parallel.pipeline_engine", "memory.recompute",
                    "memory.recompute_method", "memory.recompute_num_layers"):
            if key in c:
                self.unsupported(spec, key, c[key], "a DeepSpeed config")


# ----------------------------------------------------------------------------------- NeoX


class _NeoXWriter(_Writer):
    GROUPS = (
        ("pipe_parallel_size", "model_parallel_size", "sequence_parallel"),
        ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"),
        ("checkpoint_activations", "checkpoint_num_layers", "partition_activations"),
        ("zero_optimization", "optimizer"),
    )

    def __init__(self, texts: _Texts, result: FileResult, spec: TrainingSpec, changes: dict[str, Any]) -> None:
        from trainlint.adapters.yaml_tree import parse_yaml

        self.spec = spec
        self.changes = changes
        self.touched: set[str] = set()
        self.files: list[_Mapping] = []
        for path in result.run or [result.path]:
            buf = texts.buffer(path)
            tree = parse_yaml(buf.text, path)
            if not tree.ok or not isinstance(tree.data, dict):
                raise WritebackError(f"{path}: cannot read this file as a NeoX config (YAML syntax?)")
            self.files.append(_Mapping(buf, tree.data, tree.key_spans, tree.value_spans, "yaml"))

    def find(self, key: str) -> tuple[_Mapping, str] | None:
        """Where the run takes ``key`` from: the last file (and spelling) that sets it."""
        found = None
        for m in self.files:
            for raw in m.data:
                if isinstance(raw, str) and raw.replace("-", "_") == key:
                    found = (m, pointer([raw]))
        return found

    @staticmethod
    def spelled(m: _Mapping, key: str) -> str:
        """``key`` as this file spells its keys (NeoX accepts ``-`` and ``_``)."""
        keys = [k for k in m.data if isinstance(k, str) and ("-" in k or "_" in k)]
        hyphens = sum("-" in k for k in keys) > sum("_" in k for k in keys)
        return key.replace("_", "-") if hyphens else key

    def home(self, key: str) -> tuple[_Mapping, str | None]:
        """Where to add a key the run does not set: next to the last related key (in the file
        that has it), else at the end of the first file."""
        for group in self.GROUPS:
            if key in group:
                for m in reversed(self.files):
                    present = [p for p in m.children("") if pointer_parts(p)[0].replace("-", "_") in group]
                    if present:
                        return m, present[-1]
        return self.files[0], None

    def set(self, key: str, value: Any) -> None:
        if value is None:  # back to NeoX's default
            self.delete(key)
            return
        self.touched.add(key)
        found = self.find(key)
        if found is not None:
            m, ptr = found
            current = m.get(ptr)
            if isinstance(current, (dict, list)):
                raise WritebackError(f"{m.where(ptr)}: `{key}` is not a single value")
            m.replace(ptr, value)
            return
        m, after = self.home(key)
        m.insert("", self.spelled(m, key), value, after=after)

    def set_zero_stage(self, stage: int) -> None:
        self.touched.update({"zero_optimization", "zero_optimization.stage"})
        found = self.find("zero_optimization")
        if found is None:
            m, after = self.home("zero_optimization")
            m.insert("", self.spelled(m, "zero_optimization"), {**NEOX_ZERO_DEFAULTS, "stage": stage}, after=after)
            return
        m, ptr = found
        section = m.get(ptr)
        if not isinstance(section, dict):
            raise WritebackError(f"{m.where(ptr)}: `zero_optimization` is not a mapping")
        if m.has(ptr + "/stage"):
            if _int(section.get("stage")) is None:
                raise WritebackError(f"{m.where(ptr + '/stage')}: `zero_optimization.stage` is "
                                     f"{section.get('stage')!r} (autotuning candidates?), not one stage; trainlint does "
                                     "not overwrite it")
            m.replace(ptr + "/stage", stage)
        else:
            first = m.children(ptr)
            m.insert(ptr, "stage", stage, after=None if not first else first[-1])

    def delete(self, key: str) -> None:
        found = self.find(key)
        if found is None:
            return
        self.touched.add(key)
        m, ptr = found
        m.delete(ptr)

    def run(self) -> None:
        c, spec = self.changes, self.spec
        if "parallel.tensor" in c:
            self.set("model_parallel_size", c["parallel.tensor"])
        if "parallel.pipeline" in c or "parallel.pipeline_engine" in c:
            pp = c.get("parallel.pipeline", spec.value("parallel.pipeline", 1))
            current = spec.settings.get("pipe_parallel_size")
            engine = c.get("parallel.pipeline_engine",
                           bool(spec.value("parallel.pipeline_engine", current is not None and _int(current.value) != 0)))
            if pp > 1 and engine is False:
                raise WritebackError(f"GPT-NeoX engages the pipeline engine with {pp} pipeline stages; "
                                     "parallel.pipeline_engine false needs parallel.pipeline 1")
            self.set("pipe_parallel_size", pp if pp > 1 else (1 if engine else 0))
        if "parallel.sequence_parallel" in c:
            self.set("sequence_parallel", bool(c["parallel.sequence_parallel"]))
        if "parallel.zero_stage" in c:
            self.set_zero_stage(c["parallel.zero_stage"])
        written = {}
        for key, name in _DS_BATCH_KEYS.items():
            found = self.find(name)
            written[key] = found[0].get(found[1]) if found else None
        dp = _int(c.get("parallel.data")) or _int(spec.value("parallel.data"))
        batch = _fill_batch(written, c, dp)
        self.implied = {k: v for k, v in batch.items() if k not in c}
        for key, value in batch.items():
            self.set(_DS_BATCH_KEYS[key], value)
        if "memory.recompute" in c:
            rec = c["memory.recompute"]
            if rec == "selective":
                raise WritebackError("GPT-NeoX has no selective recompute (checkpoint_activations recomputes whole "
                                     "layers); cannot write memory.recompute selective")
            self.set("checkpoint_activations", rec == "full")
        if "memory.recompute_num_layers" in c:
            n = c["memory.recompute_num_layers"]
            if n is None:
                self.delete("checkpoint_num_layers")
            else:
                self.set("checkpoint_num_layers", n)
        for key in ("parallel.virtual_pipeline", "parallel.context", "parallel.distributed_optimizer",
                    "memory.recompute_method"):
            if key in c:
                self.unsupported(spec, key, c[key], "GPT-NeoX")


# ------------------------------------------------------------------------------- Megatron

_PARALLEL_FLAGS = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
                   "--sequence-parallel", "--use-distributed-optimizer", "--num-layers-per-virtual-pipeline-stage",
                   "--num-virtual-stages-per-pipeline-rank", "--expert-model-parallel-size", "--model-parallel-size")
_BATCH_FLAGS = ("--micro-batch-size", "--global-batch-size", "--batch-size", "--rampup-batch-size")
_RECOMPUTE_FLAGS = ("--recompute-granularity", "--recompute-method", "--recompute-num-layers",
                    "--recompute-activations", "--checkpoint-activations", "--checkpoint-num-layers",
                    "--distribute-saved-activations")
_FALLBACK_FLAGS = ("--seq-length", "--train-iters", "--train-samples", "--num-layers", "--hidden-size")


def _groups_for(flag: str) -> list[tuple[str, ...]]:
    """Flags to put a new flag next to, best first: its own kind, then the other layout flags."""
    groups = [_PARALLEL_FLAGS, _BATCH_FLAGS, _RECOMPUTE_FLAGS]
    own = next((g for g in groups if flag in g), None)
    if own is None:
        return [_FALLBACK_FLAGS, *groups]
    return [own, *[g for g in groups if g is not own], _FALLBACK_FLAGS]


def _rank(flag: str, groups: list[tuple[str, ...]]) -> int:
    return next((i for i, g in enumerate(groups) if flag in g), len(groups))


@dataclass
class _Op:
    kind: str        # "set" | "bool" | "drop"
    dests: tuple[str, ...]
    """Destinations that may already be written for this setting (the first one given is edited)."""
    flag: str        # flag to add when none is given
    value: Any = None


class _MegatronWriter(_Writer):
    def __init__(self, texts: _Texts, result: FileResult, spec: TrainingSpec, changes: dict[str, Any],
                 index: int) -> None:
        from trainlint.adapters.base import LoadContext
        from trainlint.adapters.megatron.adapter import load_runs

        self.texts = texts
        self.result = result
        self.spec = spec
        self.changes = changes
        self.touched: set[str] = set()
        main = texts.original(result.path)
        context = LoadContext(read=texts.reader({}), environment=texts.environment)
        _loaded, runs = load_runs(SourceText(result.path, main), context)
        if index >= len(runs):
            raise WritebackError(f"{result.path}: the run {spec.label} was not found again when re-reading the script")
        self.run_ = runs[index]
        if self.run_.shell is not None:
            for path, ft in self.run_.shell.files.items():
                texts.add_known(path, ft.text)
        self.given = set(self.run_.parsed.settings)
        self.dialect = self.run_.spec.dialect
        # MODEL_ARGS YAML files are read without a shell evaluation
        self.backend: _ScriptArgs | _YamlArgs = (_YamlArgs(texts, result.path, self.run_)
                                                 if self.run_.shell is None else _ScriptArgs(texts, self.run_))
        self.ds_json = self._deepspeed_json()

    def _deepspeed_json(self) -> _DeepSpeedJson | None:
        setting = self.run_.parsed.settings.get("deepspeed_config") or self.run_.parsed.settings.get("deepscale_config")
        if setting is None:
            return None
        virtual = _virtual_documents(self.result)
        script_docs = {d.path for d in self.result.documents if d.format == "megatron"}
        candidates = [d for d in self.result.documents if d.format == "deepspeed"]
        written = setting.value_fields[0].text if setting.value_fields else None
        for doc in candidates:
            if written and not (doc.path.endswith(os.path.basename(written)) or id(doc) in virtual):
                continue
            return _DeepSpeedJson(self.texts, doc, virtual=id(doc) in virtual or doc.path in script_docs)
        return None

    # -- planning ----------------------------------------------------------------------------
    def run(self) -> None:
        c, spec = self.changes, self.spec
        current = self.dialect == MEGATRON_LM or not self.dialect
        legacy = self.dialect == "legacy"
        ops: list[_Op] = []
        if "parallel.tensor" in c:
            dests = ("tensor_model_parallel_size", "model_parallel_size") if not current else ("tensor_model_parallel_size",)
            ops.append(_Op("set", dests, "--model-parallel-size" if legacy else "--tensor-model-parallel-size",
                           c["parallel.tensor"]))
        if "parallel.pipeline" in c:
            ops.append(_Op("set", ("pipeline_model_parallel_size", "pipe_parallel_size"), "--pipeline-model-parallel-size",
                           c["parallel.pipeline"]))
        if "parallel.virtual_pipeline" in c:
            ops.extend(self._virtual_ops(c["parallel.virtual_pipeline"]))
        if "parallel.context" in c:
            ops.append(_Op("set", ("context_parallel_size",), "--context-parallel-size", c["parallel.context"]))
        if "parallel.sequence_parallel" in c:
            ops.append(_Op("bool", ("sequence_parallel",), "--sequence-parallel", bool(c["parallel.sequence_parallel"])))
        if "parallel.distributed_optimizer" in c:
            ops.append(_Op("bool", ("use_distributed_optimizer",), "--use-distributed-optimizer",
                           bool(c["parallel.distributed_optimizer"])))
        if "batch.micro_batch" in c:
            ops.append(_Op("set", ("micro_batch_size", "batch_size"), "--micro-batch-size", c["batch.micro_batch"]))
        if "batch.global_batch" in c:
            ops.extend(self._global_batch_ops(c["batch.global_batch"]))
        if "batch.grad_accum" in c and "gas" in self.given:
            ops.append(_Op("set", ("gas",), "--gas", c["batch.grad_accum"]))
        if "memory.recompute" in c:
            ops.extend(self._recompute_ops(c["memory.recompute"], current))
        if "memory.recompute_method" in c:
            ops.extend(self._method_ops(c["memory.recompute_method"]))
        if "memory.recompute_num_layers" in c:
            ops.extend(self._num_layers_ops(c["memory.recompute_num_layers"]))
        if "parallel.zero_stage" in c:
            self._zero_stage(c["parallel.zero_stage"], ops)
        if "parallel.pipeline_engine" in c:
            self.unsupported(spec, "parallel.pipeline_engine", c["parallel.pipeline_engine"], "a Megatron-LM script")
        self.backend.apply(ops)
        for op in ops:
            self.touched.update(op.dests)
            self.touched.update(self.backend.dest_of(op.flag))
        self._mirror_deepspeed_batch()
        if self.ds_json is not None:
            # the merged DeepSpeed view of the batch and DP follows the flags
            self.touched.update({"deepspeed:batch.micro_batch", "deepspeed:batch.grad_accum",
                                 "deepspeed:batch.global_batch", "deepspeed:parallel.data"})

    def _virtual_ops(self, vp: int | None) -> list[_Op]:
        vp = 1 if vp is None else vp
        k_dest, v_dest = "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank"
        if vp <= 1:
            return [_Op("drop", (k_dest,), ""), _Op("drop", (v_dest,), "")]
        if k_dest in self.given or (self.dialect not in (MEGATRON_LM, "") and v_dest not in self.given):
            layers = _int(self.spec.value("model.num_layers"))
            pp = _int(self.changes.get("parallel.pipeline", self.spec.value("parallel.pipeline")))
            if not layers or not pp or layers % (pp * vp):
                raise WritebackError(f"cannot write {vp} virtual stages as --num-layers-per-virtual-pipeline-stage: "
                                     f"{layers} layers do not split into {pp} x {vp} equal chunks")
            return [_Op("set", (k_dest,), "--num-layers-per-virtual-pipeline-stage", layers // (pp * vp)),
                    _Op("drop", (v_dest,), "")]
        return [_Op("set", (v_dest,), "--num-virtual-stages-per-pipeline-rank", vp)]

    def _global_batch_ops(self, value: int) -> list[_Op]:
        if "global_batch_size" not in self.given and self.ds_json is not None:
            entry = self.spec.batch.global_batch
            if entry is not None and entry.provenance.origin is Origin.FILE and \
                    entry.provenance.key == "train_batch_size":
                return []  # the DeepSpeed JSON gives it: written there by the mirror
        return [_Op("set", ("global_batch_size",), "--global-batch-size", value)]

    def _recompute_ops(self, rec: str, current: bool) -> list[_Op]:
        gran, act, ckpt = "recompute_granularity", "recompute_activations", "checkpoint_activations"
        if rec == "none":
            return [_Op("drop", (gran,), ""), _Op("drop", (act,), ""), _Op("drop", (ckpt,), "")]
        if current or gran in self.given:
            return [_Op("set", (gran,), "--recompute-granularity", rec), _Op("drop", (act,), ""),
                    _Op("drop", (ckpt,), "")]
        # Megatron-DeepSpeed and older copies: full recompute is --checkpoint-activations there
        if rec == "full":
            return [_Op("bool", (ckpt,), "--checkpoint-activations", True), _Op("drop", (act,), "")]
        if self.dialect == "legacy":
            raise WritebackError("this script targets an old Megatron-LM copy without selective recompute "
                                 "(--recompute-granularity); cannot write memory.recompute selective")
        return [_Op("set", (gran,), "--recompute-granularity", rec), _Op("drop", (act,), ""), _Op("drop", (ckpt,), "")]

    def _checkpoint_style(self) -> bool:
        """Whether full recompute is (or will be) written as --checkpoint-activations."""
        if self.dialect == MEGATRON_LM or not self.dialect:
            return False  # current Megatron-LM reads only the --recompute-* flags
        rec = self.changes.get("memory.recompute")
        if rec is not None:
            return "recompute_granularity" not in self.given and rec == "full"
        return "checkpoint_activations" in self.given and "recompute_granularity" not in self.given

    def _method_ops(self, method: str | None) -> list[_Op]:
        if method is None:
            return [_Op("drop", ("recompute_method",), "")]
        if self._checkpoint_style() and method == "uniform" and "recompute_method" not in self.given:
            return []  # uniform is what --checkpoint-activations does
        return [_Op("set", ("recompute_method",), "--recompute-method", method)]

    def _num_layers_ops(self, n: int | None) -> list[_Op]:
        if n is None:
            return [_Op("drop", ("recompute_num_layers",), ""), _Op("drop", ("checkpoint_num_layers",), "")]
        if "recompute_num_layers" in self.given:
            return [_Op("set", ("recompute_num_layers",), "--recompute-num-layers", n)]
        if "checkpoint_num_layers" in self.given or self._checkpoint_style():
            return [_Op("set", ("checkpoint_num_layers",), "--checkpoint-num-layers", n)]
        return [_Op("set", ("recompute_num_layers",), "--recompute-num-layers", n)]

    def _zero_stage(self, stage: int, ops: list[_Op]) -> None:
        entry = self.spec.parallel.zero_stage
        from_json = entry is not None and entry.provenance.origin is Origin.FILE and \
            (entry.provenance.key or "").startswith("zero_optimization")
        written = False
        if "zero_stage" in self.given:  # Megatron-DeepSpeed's flag: kept equal to the JSON's
            ops.append(_Op("set", ("zero_stage",), "--zero-stage", stage))
            written = True
        if self.ds_json is not None and (from_json or not written):
            self.ds_json.set(["zero_optimization", "stage"], stage)
            self.touched.update({"deepspeed:zero_optimization.stage", "deepspeed:parallel.zero_stage"})
            written = True
        if not written:
            self.unsupported(self.spec, "parallel.zero_stage", stage, "this Megatron-LM script (no DeepSpeed config)")

    def _mirror_deepspeed_batch(self) -> None:
        """A --deepspeed_config JSON that repeats the batch sizes follows the flags."""
        ds = self.ds_json
        if ds is None:
            return
        wanted = {k: v for k, v in self.changes.items() if k in _BATCH and v is not None}
        if not wanted:
            return
        written = {k: ds.written(name) for k, name in _DS_BATCH_KEYS.items()}
        dp = _int(self.changes.get("parallel.data")) or _int(self.spec.value("parallel.data"))
        values = _fill_batch(written, wanted, dp)
        for key, value in values.items():
            name = _DS_BATCH_KEYS[key]
            entry = self.spec.batch.global_batch if key == "batch.global_batch" else None
            json_gives_global = entry is not None and entry.provenance.key == name and "global_batch_size" not in self.given
            if written[key] is not None or json_gives_global:
                ds.set([name], value)
                self.touched.add(f"deepspeed:{name}")
        self.touched.update(f"deepspeed:{t}" for t in ds.touched)
        if ds.touched:
            self.touched.update({"deepspeed:batch.micro_batch", "deepspeed:batch.grad_accum",
                                 "deepspeed:batch.global_batch", "deepspeed:parallel.data"})


# -- Megatron launch scripts ---------------------------------------------------------------


_SEP = re.compile(r"(?:[ \t]|\\\n)*")
_VAR_REF = re.compile(r'^"?\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=][^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))"?$')


def _scan_word(text: str, i: int, quote: str | None) -> int:
    """The end of the shell word starting at ``i`` (approximate, for arguments of flags);
    ``quote``: the quote the word is inside of (a flag and its value in one string)."""
    n = len(text)
    in_dq = quote == '"'
    while i < n:
        c = text[i]
        if c in " \t\n" or c == quote or (quote is None and c in ";|&<>()"):
            break
        if quote == "'":
            i += 1
            continue
        if c == "\\":
            i += 2
            continue
        if text.startswith("${", i):
            i = _close(text, i + 1, "{", "}")
            continue
        if text.startswith("$(", i):
            i = _close(text, i + 1, "(", ")")
            continue
        if not in_dq and c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if not in_dq and c == "'":
            j = text.find("'", i + 1)
            i = n if j == -1 else j + 1
            continue
        i += 1
    return min(i, n)


def _close(text: str, i: int, opening: str, closing: str) -> int:
    depth = 0
    n = len(text)
    while i < n:
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _references(text: str, name: str) -> list[tuple[int, int]]:
    """Where a shell variable is read: ``$NAME``, ``${NAME...}`` and bare names in ``((...))``."""
    out = [(m.start(), m.end()) for m in re.finditer(r"\$\{?[#!]?" + re.escape(name) + r"(?![A-Za-z0-9_])", text)]
    for m in re.finditer(r"\(\((.*?)\)\)", text, re.S):
        for r in re.finditer(r"(?<![A-Za-z0-9_$])" + re.escape(name) + r"(?![A-Za-z0-9_])", m.group(1)):
            out.append((m.start(1) + r.start(), m.start(1) + r.end()))
    for m in re.finditer(r"\bexport\s+(?:-\w+\s+)?" + re.escape(name) + r"(?![A-Za-z0-9_=])", text):
        out.append((m.start(), m.end()))
    return out


@dataclass
class _FlagAt:
    """A flag written literally in a file: where it and its argument are."""

    path: str
    start: int       # the flag's word (with its quotes when quoted alone)
    flag_end: int
    end: int         # the end of the flag and its argument
    arg: tuple[int, int] | None
    quote: str | None
    """The quote the flag is written inside of, with other words (``"--tp 2 --pp 1"``)."""


class _ScriptArgs:
    """Edits the arguments of one invocation in a launch script (and the files it sources)."""

    def __init__(self, texts: _Texts, run: Any) -> None:
        from trainlint.adapters.megatron.flags import flag_table

        self.texts = texts
        self.run = run
        self.parsed = run.parsed
        self.shell = run.shell
        self.table = flag_table()
        self.removals: dict[int, tuple[str, int, int]] = {}
        """Flags to remove, by id of their Setting: (path, start, end)."""
        self.removed: dict[int, Any] = {}
        self.after_line: dict[tuple[str, int], list[_Edit]] = {}
        """Lines added after a \\-continued line, by (path, that line's start)."""

    def dest_of(self, flag: str) -> set[str]:
        return {info.dest for info in self.table.candidates(flag)} if flag else set()

    # -- locating --------------------------------------------------------------------------
    def locate(self, setting: Any) -> _FlagAt | None:
        from trainlint.adapters.megatron.shell import _quote_states

        segs = [s for s in setting.flag_field.segs if s.text or s.unknown]
        if not segs or segs[0].unknown is not None or segs[0].loc is None:
            return None
        seg = segs[0]
        if not seg.text.startswith(setting.flag_text):
            return None
        path = seg.loc.path
        text = self.texts.buffer(path).text
        if seg.exact:
            start = seg.loc.start
        else:
            # A string with \-newlines (ARGS=" \ --flag 1 \ ...") is read as one piece: find the
            # flag in it, when it is there exactly once.
            region = text[seg.loc.start:seg.loc.end]
            found = [m.start() for m in re.finditer(r"(?<![\w-])" + re.escape(setting.flag_text) + r"(?![\w-])", region)]
            if len(found) != 1:
                return None
            start = seg.loc.start + found[0]
        flag_end = start + len(setting.flag_text)
        if text[start:flag_end] != setting.flag_text:
            return None
        state = _quote_states(text, [start])[0]
        quote = {"dq": '"', "sq": "'"}.get(state or "")
        word_start, after = start, flag_end
        if quote and text[start - 1:start] == quote and text[flag_end:flag_end + 1] == quote:
            # "--flag" quoted on its own: the word includes the quotes, the value is another word
            word_start, after, quote = start - 1, flag_end + 1, None
        if not setting.info.takes_value or not setting.value_fields:
            return _FlagAt(path, word_start, flag_end, after, None, quote)
        if setting.inline:
            if text[flag_end:flag_end + 1] != "=":
                return None
            a = flag_end + 1
        else:  # blanks, \-newlines, and line breaks (array elements, multi-line strings)
            a = after
            while True:
                a = _SEP.match(text, a).end()
                if text[a:a + 1] != "\n":
                    break
                a += 1
        b = _scan_word(text, a, quote)
        if b <= a:
            return None
        end = b
        if quote and text[word_start - 1:word_start] == quote and text[b:b + 1] == quote:
            # "--flag value" quoted as one word (an array element): the word includes the quotes
            word_start, end = word_start - 1, b + 1
        return _FlagAt(path, word_start, flag_end, end, (a, b), quote)

    def _describe(self, setting: Any) -> str:
        loc = setting.value_loc or setting.flag_field.value_loc or setting.flag_field.site
        if loc is None:
            return f"`{setting.flag_text}`"
        buf = self.texts.buffer(loc.path)
        return f"`{setting.flag_text}` ({_where(loc.path, buf.span(loc.start, loc.end))})"

    # -- operations --------------------------------------------------------------------------
    def apply(self, ops: list[_Op]) -> None:
        adds: list[tuple[str, Any]] = []
        for op in ops:
            given = [self.parsed.settings[d] for d in op.dests if d in self.parsed.settings]
            if op.kind == "drop" or (op.kind != "set" and not op.value) or (op.kind == "set" and op.value is None):
                for dest in op.dests:
                    for setting in self.parsed.order:
                        if setting.info.dest == dest:
                            self.remove(setting)
            elif op.kind == "bool":
                if given and given[0].value is True and given[0].info.action == "store_true":
                    continue
                if given:  # --no-... or a store_false spelling: drop it, add the positive flag
                    for setting in self.parsed.order:
                        if setting.info.dest in op.dests:
                            self.remove(setting)
                adds.append((op.flag, None))
            elif given:
                self.set_value(given[0], op.value)
            else:
                adds.append((op.flag, op.value))
        for flag, value in adds:
            self.add(flag, value)
        self._flush_removals()

    def set_value(self, setting: Any, value: Any) -> None:
        what = self._describe(setting)
        if setting.unresolved:
            raise WritebackError(f"{what} takes its value from {setting.unresolved}; trainlint cannot rewrite it")
        if len(setting.value_fields) != 1:
            raise WritebackError(f"{what} has {len(setting.value_fields)} values; trainlint rewrites single values only")
        literal = _shell_word(value)
        segs = [s for s in setting.value_fields[0].segs if s.text or s.unknown]
        at = self.locate(setting)
        if len(segs) != 1:
            if at is not None and at.arg is not None:
                self._replace_arg(setting, at, literal)
                return
            raise WritebackError(f"the value of {what} is assembled from several pieces; trainlint cannot rewrite it")
        seg = segs[0]
        if seg.env is not None:
            raise WritebackError(f"the value of {what} comes from the environment variable {seg.env} (given to "
                                 "trainlint with --env or the project config); change it there")
        if seg.loc is None:
            raise WritebackError(f"the value of {what} is not written in any file trainlint read")
        buf = self.texts.buffer(seg.loc.path)
        if not seg.exact and at is not None and at.arg is not None and at.path == seg.loc.path \
                and seg.loc.start <= at.arg[0] and at.arg[1] <= seg.loc.end \
                and buf.text[at.arg[0]:at.arg[1]] == seg.text:
            buf.replace(at.arg[0], at.arg[1], literal)  # a literal inside a string with \-newlines
            return
        if not seg.exact:
            written = buf.text[seg.loc.start:seg.loc.end]
            how = "computed by the arithmetic expression" if written.startswith("$((") else "written as"
            raise WritebackError(f"the value of {what} is {how} `{_short(written)}` at "
                                 f"{_where(seg.loc.path, buf.span(seg.loc.start, seg.loc.end))}; trainlint does not "
                                 "rewrite expressions")
        loc = seg.loc
        if at is not None and at.arg is not None and at.path == loc.path and at.arg[0] <= loc.start and loc.end <= at.arg[1]:
            buf.replace(loc.start, loc.end, literal)  # a literal argument (or the default of ${VAR:-x})
            return
        assignment = self._assignment_at(loc)
        token = self.texts.buffer(at.path).text[at.arg[0]:at.arg[1]] if at is not None and at.arg else None
        ref = _VAR_REF.match(token) if token else None
        name = (ref.group(1) or ref.group(2)) if ref else None
        if assignment is not None and name == assignment.name and self._plain(assignment, seg) \
                and not seg.uncertain and self._used_once(assignment):
            buf.replace(loc.start, loc.end, literal)  # TP=4, used only by this flag
            return
        if name is not None and at is not None:
            self._replace_arg(setting, at, literal)  # the variable is used elsewhere: only this flag changes
            return
        where = _where(loc.path, buf.span(loc.start, loc.end))
        raise WritebackError(f"the value of {what} is written at {where} and reaches the flag through "
                             f"`{_short(token or '?')}`; trainlint cannot rewrite it safely")

    def _replace_arg(self, setting: Any, at: _FlagAt, literal: str) -> None:
        a, b = at.arg  # type: ignore[misc]
        buf = self.texts.buffer(at.path)
        token = buf.text[a:b]
        if "$(" in token and not _VAR_REF.match(token):
            raise WritebackError(f"the value of {self._describe(setting)} is computed by `{_short(token)}`; trainlint "
                                 "does not rewrite expressions")
        buf.replace(a, b, literal)

    def _assignment_at(self, loc: Any) -> Any:
        best = None
        for a in self.shell.assignments if self.shell else ():
            if a.loc.path == loc.path and a.loc.start <= loc.start and loc.end <= a.loc.end:
                if best is None or (a.loc.end - a.loc.start) < (best.loc.end - best.loc.start):
                    best = a
        return best

    @staticmethod
    def _plain(assignment: Any, seg: Any) -> bool:
        value = assignment.value
        if value.is_array or value.scalar is None:
            return False
        segs = [s for s in value.scalar if s.text or s.unknown]
        return len(segs) == 1 and segs[0].loc == seg.loc and segs[0].text == seg.text

    def _used_once(self, assignment: Any) -> bool:
        """The variable is read exactly once (by the flag) in every file the script reads, and
        not exported to the processes it starts."""
        text = self.texts.buffer(assignment.loc.path).text
        line = text[text.rfind("\n", 0, assignment.loc.start) + 1:assignment.loc.start]
        if re.search(r"\b(export|declare\s+-\w*x|readonly)\b", line):
            return False
        count = 0
        for path, ft in (self.shell.files.items() if self.shell else ()):
            for start, end in _references(ft.text, assignment.name):
                if path == assignment.loc.path and assignment.loc.start <= start and end <= assignment.loc.end:
                    continue  # TP=${TP:-4} reads itself
                count += 1
        return count == 1

    def remove(self, setting: Any) -> None:
        at = self.locate(setting)
        if at is None:
            raise WritebackError(f"{self._describe(setting)} is not written as a plain word trainlint can remove")
        if id(setting) in self.removed:
            return
        self.removed[id(setting)] = setting
        self.removals[id(setting)] = (at.path, at.start, at.end)

    def add(self, flag: str, value: Any) -> None:
        words = flag if value is None else f"{flag} {_shell_word(value)}"
        own_group = _groups_for(flag)[0]
        for key, setting in list(self.removed.items()):
            if setting.flag_text in own_group:
                # a flag of the same kind goes away (--recompute-activations for
                # --recompute-granularity): the new one takes its place
                at = self.locate(setting)
                if at is not None:
                    self.texts.buffer(at.path).replace(at.start, at.end, words)
                    del self.removed[key], self.removals[key]
                    return
        anchor = self._anchor(flag)
        if anchor is None:
            raise WritebackError(f"cannot find where to add `{flag}`: no flag of this run is written as a plain word")
        at, _setting = anchor
        buf = self.texts.buffer(at.path)
        text = buf.text
        ls, le = buf.line_start(at.start), buf.line_end(at.end)
        if text[ls:at.start].strip():
            buf.insert(at.end, f" {words}")  # several flags on the line: one more, inline
            return
        indent = text[ls:at.start]
        rest = text[at.end:le].strip()
        prev = text[buf.line_start(ls - 1):ls - 1] if ls > 0 else ""
        if rest == "\\":  # a \-continued line: a new continued line after it
            edit = buf.insert(le, f"\n{indent}{words} \\")
            self.after_line.setdefault((at.path, ls), []).append(edit)
        elif prev.rstrip().endswith("\\"):  # the last line of a continued command: before it
            buf.insert(ls, f"{indent}{words} \\\n")
        elif rest == "" or rest.startswith("#"):  # an array element or a line of a string
            buf.insert(le, f"\n{indent}{words}")
        else:  # the line closes the array or string: before it
            buf.insert(ls, f"{indent}{words}\n")

    def _anchor(self, flag: str) -> tuple[_FlagAt, Any] | None:
        main = self.run.spec.path
        candidates: list[tuple[int, int, _FlagAt, Any]] = []
        groups = _groups_for(flag)
        for pos, setting in enumerate(self.parsed.order):
            if id(setting) in self.removed:
                continue
            rank = _rank(setting.flag_text, groups)
            at = self.locate(setting)
            if at is None:
                continue
            candidates.append((rank + (0 if _same_file(at.path, main) else 1000), -pos, at, setting))
        if not candidates:
            return None
        candidates.sort(key=lambda c: (c[0], c[1]))
        return candidates[0][2], candidates[0][3]

    def _flush_removals(self) -> None:
        by_path: dict[str, list[tuple[int, int]]] = {}
        for path, a, b in self.removals.values():
            by_path.setdefault(path, []).append((a, b))
        for path, regions in by_path.items():
            buf = self.texts.buffer(path)
            text = buf.text
            whole: dict[int, tuple[int, int, bool]] = {}   # line start -> (start, end, continued)
            inline: list[tuple[int, int]] = []
            per_line: dict[int, list[tuple[int, int]]] = {}
            for a, b in sorted(regions):
                per_line.setdefault(buf.line_start(a), []).append((a, b))
            for ls, regs in per_line.items():
                le = buf.line_end(max(b for _, b in regs))
                kept, pos = [], ls
                for a, b in regs:
                    kept.append(text[pos:a])
                    pos = max(pos, b)
                kept.append(text[pos:le])
                rest = "".join(kept).strip()
                if rest in ("", "\\") or rest.startswith("#"):  # nothing else on the line: the line goes
                    whole[ls] = (ls, min(le + 1, len(text)), rest == "\\")
                else:
                    inline.extend(regs)
            for ls, (start, end, continued) in sorted(whole.items()):
                buf.replace(start, end, "")
                if continued or ls == 0:
                    continue
                # This line ended a \-continued command: the nearest kept line before it now does.
                p = buf.line_start(ls - 1)
                while p in whole and p > 0:
                    p = buf.line_start(p - 1)
                if p in whole:
                    continue
                added = self.after_line.get((path, p))
                if added:  # lines were added after that one: the last of them ends the command
                    added[-1].text = added[-1].text[:-2]
                    continue
                line = text[p:buf.line_end(p)]
                stripped = line.rstrip()
                if stripped.endswith("\\") and not stripped.endswith("\\\\"):
                    k = p + len(stripped) - 1
                    while k > p and text[k - 1] in " \t":
                        k -= 1
                    buf.replace(k, p + len(stripped), "")
            for a, b in inline:
                ls = buf.line_start(a)
                k = a
                while k > ls and text[k - 1] in " \t":
                    k -= 1
                if k < a:
                    buf.replace(k, b, "")
                else:
                    j = b
                    while j < len(text) and text[j] in " \t":
                        j += 1
                    buf.replace(a, j, "")


def _shell_word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if re.fullmatch(r"[A-Za-z0-9_.,:/+-]+", text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def _short(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= 50 else text[:47] + "..."


# -- Megatron MODEL_ARGS YAML -------------------------------------------------------------


class _YamlArgs:
    """Edits the ``MODEL_ARGS`` mapping of a Megatron functional-test / model-zoo YAML."""

    def __init__(self, texts: _Texts, path: str, run: Any) -> None:
        from trainlint.adapters.megatron.flags import flag_table
        from trainlint.adapters.yaml_tree import parse_yaml

        buf = texts.buffer(path)
        tree = parse_yaml(buf.text, path)
        if not tree.ok or not isinstance(tree.data, dict) or not isinstance(tree.data.get("MODEL_ARGS"), dict):
            raise WritebackError(f"{path}: cannot read MODEL_ARGS to rewrite it")
        self.map = _Mapping(buf, tree.data, tree.key_spans, tree.value_spans, "yaml")
        self.table = flag_table()
        self.parent = pointer(["MODEL_ARGS"])
        self.run = run
        self.deleted: set[str] = set()

    def dest_of(self, flag: str) -> set[str]:
        return {info.dest for info in self.table.candidates(flag)} if flag else set()

    def _written(self, dests: Iterable[str]) -> list[str]:
        dests = set(dests)
        out = []
        for ptr in self.map.children(self.parent):
            flag = pointer_parts(ptr)[-1]
            if any(info.dest in dests for info in self.table.candidates(flag)):
                out.append(ptr)
        return out

    def _merged(self, dests: Iterable[str]) -> list[str]:
        """Flags MODEL_ARGS gets from a YAML merge key (``<<: *BASE_MODEL_ARGS``), not written in it."""
        dests = set(dests)
        own = {pointer_parts(p)[-1] for p in self.map.children(self.parent)}
        section = self.map.get(self.parent, {})
        return [flag for flag in section if isinstance(flag, str) and flag not in own
                and any(info.dest in dests for info in self.table.candidates(flag))]

    def apply(self, ops: list[_Op]) -> None:
        # removals first, so that no flag is added next to one that goes away
        off = [op for op in ops if op.kind == "drop" or (op.kind == "bool" and not op.value)
               or (op.kind == "set" and op.value is None)]
        for op in off + [op for op in ops if op not in off]:
            written = [p for p in self._written(op.dests) if p not in self.deleted]
            merged = self._merged(op.dests)
            section = self.map.get(self.parent, {})
            if op in off:
                inherited = [f for f in merged if section.get(f) is not False]
                for ptr in written:
                    if self.map.get(ptr) is False:
                        continue
                    if inherited:  # deleting would bring the merged value back: say false
                        self.map.replace(ptr, False)
                    else:
                        self.map.delete(ptr)
                        self.deleted.add(ptr)
                if inherited and not written:
                    self._add(inherited[-1], False)  # overrides the merged mapping's value
            elif op.kind == "bool":
                if any(self.map.get(p) is not False for p in written):
                    continue
                if written:
                    self.map.replace(written[-1], True)
                elif not any(section.get(f) not in (False, None) for f in merged):
                    self._add(op.flag, True)
            elif written:
                ptr = written[-1]
                value = self.map.get(ptr)
                if isinstance(value, str) and "$" in value:
                    raise WritebackError(f"{self.map.where(ptr)}: `{pointer_parts(ptr)[-1]}` is the placeholder "
                                         f"{value!r}, filled by the launcher; trainlint does not rewrite it")
                self.map.replace(ptr, op.value)
            else:  # not written, or only through a merge key: an explicit key wins over the merge
                self._add(merged[-1] if merged else op.flag, op.value)

    def _add(self, flag: str, value: Any) -> None:
        groups = _groups_for(flag)
        present = [p for p in self.map.children(self.parent) if p not in self.deleted]
        best = None
        for ptr in present:
            rank = _rank(pointer_parts(ptr)[-1], groups)
            if best is None or rank <= best[0]:
                best = (rank, ptr)
        self.map.insert(self.parent, flag, value, after=best[1] if best else None)


# ============================================================================ round trip


def _verify(result: FileResult, index: int, changes: dict[str, Any], texts: _Texts, new_texts: dict[str, str],
            touched: set[str], environment: dict[str, str]) -> None:
    """Read the old and the new text through the same adapter; the changed fields must have the
    asked values and everything else must be as before."""
    before = _reload(result, texts, {}, environment)
    after = _reload(result, texts, new_texts, environment)
    if after.internal_error or len(after.specs) != len(before.specs):
        raise WritebackError(f"{result.path}: the rewritten file does not read back as the same runs "
                             f"({len(before.specs)} before, {len(after.specs)} after)")
    for code in ("TL002", "TL003", "TL004", "TL005", "TL011"):
        n_before = sum(d.code == code for d in before.diagnostics)
        found = [d for d in after.diagnostics if d.code == code]
        if len(found) > n_before:
            raise WritebackError(f"the rewritten file has a new problem ({code} at {_where(found[-1].path, found[-1].span)}: "
                                 f"{found[-1].message})")
    old, new = before.specs[index], after.specs[index]
    for key, want in changes.items():
        if key in _INFORMATIONAL:
            continue
        if result.format == "megatron" and key == "batch.grad_accum":
            continue  # derived by Megatron from the global batch, micro batch and DP
        if not _matches(key, want, new.get(key), new):
            got = new.get(key)
            raise WritebackError(f"after rewriting, {key} reads {None if got is None else got.value!r} instead of "
                                 f"{want!r}")
    _same_spec(old, new, set(changes), touched, f"the run {old.label or old.path}")
    for i, (o, n) in enumerate(zip(before.specs, after.specs)):
        if i != index:
            _same_spec(o, n, set(), set(), f"the other run {o.label or o.path} of this file")


def _reload(result: FileResult, texts: _Texts, overrides: dict[str, str], environment: dict[str, str]) -> FileResult:
    from trainlint.adapters import builtin_adapters
    from trainlint.adapters.base import LoadContext
    from trainlint.checker import check_source

    adapters = [a for a in builtin_adapters() if a.name == result.format]
    main = next((t for p, t in overrides.items() if _same_file(p, result.path)), None)
    if main is None:
        main = texts.original(result.path)
    extra = list(result.run[1:]) if result.run else []
    context = LoadContext(extra_paths=extra, read=texts.reader(overrides), environment=dict(environment))
    return check_source(SourceText(result.path, main), adapters, context, force_format=result.format)


def _matches(key: str, want: Any, got: Value | None, spec: TrainingSpec) -> bool:
    value = None if got is None else got.value
    if want is None:
        return got is None or got.provenance.origin in (Origin.DEFAULT, Origin.DERIVED) or value in (None, "none")
    if key == "parallel.virtual_pipeline" and want == 1:
        return value in (None, 1)
    if key in ("memory.recompute_method", "memory.recompute_num_layers") and value is None \
            and spec.value("memory.recompute") != "full":
        return True  # only read with full recompute (NeoX, older Megatron copies)
    return value == want


# Fields that follow others by each framework's own rules (not compared when an input changed).
_FOLLOWERS = {
    "memory.recompute": ("memory.recompute_method", "memory.recompute_num_layers"),
    "parallel.pipeline": ("parallel.pipeline_engine", "parallel.virtual_pipeline"),
    "parallel.pipeline_engine": ("parallel.pipeline",),
    "parallel.tensor": ("parallel.expert_tensor",),
}


def _same_spec(old: TrainingSpec, new: TrainingSpec, changed: set[str], touched: set[str], what: str) -> None:
    skip = set(changed)
    for key in changed:
        skip.update(_FOLLOWERS.get(key, ()))
    if old.framework != new.framework or old.dialect != new.dialect or old.entry_point != new.entry_point:
        raise WritebackError(f"after rewriting, {what} is read differently (framework, dialect or entry point changed)")
    fields = {k for k, _ in old.items()} | {k for k, _ in new.items()}
    for key in sorted(fields):
        if key in skip:
            continue
        a, b = old.get(key), new.get(key)
        if any(v is not None and v.provenance.origin is Origin.DERIVED for v in (a, b)):
            continue  # follows the changed values (DP, accumulation, derived defaults)
        if (a is None) != (b is None) or (a is not None and b is not None and not _equal(a.value, b.value)):
            raise WritebackError(f"after rewriting, {key} of {what} changed from "
                                 f"{None if a is None else a.value!r} to {None if b is None else b.value!r}")
    old_settings = _flat_settings(old.settings)
    new_settings = _flat_settings(new.settings)
    for key in sorted(set(old_settings) | set(new_settings)):
        if _is_touched(key, touched):
            continue
        if key not in old_settings or key not in new_settings or not _equal(old_settings[key], new_settings[key]):
            raise WritebackError(f"after rewriting, the setting {key} of {what} changed from "
                                 f"{old_settings.get(key, '(absent)')!r} to {new_settings.get(key, '(absent)')!r}")
    for key in sorted(set(old.unresolved) ^ set(new.unresolved)):
        if not _is_touched(key, touched):
            raise WritebackError(f"after rewriting, the setting {key} of {what} is "
                                 f"{'no longer' if key in old.unresolved else 'now'} unresolved")


def _flat_settings(settings: dict[str, Value]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, entry in settings.items():
        stack = [(key, entry.value)]
        while stack:
            name, value = stack.pop()
            if isinstance(value, dict) and value:
                stack.extend((f"{name}.{k}", v) for k, v in value.items())
            else:
                out[name] = value
    return out


def _is_touched(key: str, touched: set[str]) -> bool:
    for t in touched:
        if key == t or key.startswith(t + ".") or t.startswith(key + "."):
            return True
        # NeoX spells keys with - or _ (settings are keyed by the _ spelling)
        if key.replace("-", "_") == t or key.replace("-", "_").startswith(t + "."):
            return True
    return False


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN
    return a == b
