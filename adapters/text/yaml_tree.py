"""Safe YAML reading with a position for every key and value.

PyYAML's ``safe_load`` gives values without positions, and ``compose`` recurses (deep input
overflows the stack) and loses where an alias was written. So this module reads the *event*
stream (``yaml.parse`` with ``CSafeLoader`` when libyaml is present, else ``SafeLoader``; both
stream without recursion) and composes the value tree itself, with an explicit stack:

* scalars are typed exactly as ``yaml.safe_load`` types them (the SafeLoader resolver and
  constructor, YAML 1.1 rules), so values match what NeoX and Megatron read;
* every JSON pointer gets the span of its key and of its value (1-based, end exclusive,
  code-point columns; a value reached through an alias has the alias's span);
* duplicate keys in one mapping are recorded (PyYAML keeps the last one silently);
* plain scalars such as ``1e-5``, ``6e-4``, ``2e8`` or ``1.0e5`` that YAML 1.1 reads as
  *strings* (its float pattern needs a dot and a signed exponent) are recorded, so an adapter
  can report them (gpt-neox issue 171);
* input is bounded: at most :data:`MAX_DEPTH` nested collections and :data:`MAX_NODES` values
  after alias expansion (a "billion laughs" file stops at once, as sizes are counted, not
  expanded), one document per file;
* tags that would build Python objects (``!!python/tuple``) or anything the safe constructor
  does not know are refused with TL002 at the tag: nothing in a config is ever executed.

Nothing here raises on bad input: problems become diagnostics on the returned tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from trainlint.core.diagnostics import Diagnostic, Related, Severity
from trainlint.core.input_codes import input_diagnostic
from trainlint.core import cancel
from trainlint.core.numbers import read_int
from trainlint.core.positions import FILE_START, LineIndex, Span

try:  # libyaml: ~10x faster; same events and marks (code-point columns)
    _LOADER: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _LOADER = yaml.SafeLoader

MAX_DEPTH = 100
"""Nested collections allowed. Real configs nest fewer than 10 levels; the rest of trainlint
(jsonschema, rules) recurses over the tree, so the limit keeps far from Python's stack limit."""

MAX_NODES = 200_000
"""Values allowed in the tree after alias expansion. A hand-written config has a few hundred;
a "billion laughs" file claims 10^9 and is refused as soon as the count passes this."""

_MAP_TAGS = {None, "!", "tag:yaml.org,2002:map"}
_SEQ_TAGS = {None, "!", "tag:yaml.org,2002:seq"}
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SAFE_SCALAR_TAGS = {
    "tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary", _MERGE_TAG,
}
_SCI_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


@dataclass(frozen=True)
class SciString:
    """A plain scalar that looks like a number in scientific notation but is a YAML 1.1 string."""

    pointer: str
    text: str
    span: Span

    @property
    def suggestion(self) -> str:
        """The same number written so that YAML 1.1 reads a float: ``1e-5`` -> ``1.0e-5``."""
        mantissa, _, exponent = self.text.lower().partition("e")
        sign = mantissa[0] if mantissa[:1] in "+-" else ""
        digits = mantissa[len(sign):]
        if "." not in digits:
            digits += ".0"
        if digits.startswith("."):
            digits = "0" + digits
        if digits.endswith("."):
            digits += "0"
        if exponent[:1] not in "+-":
            exponent = "+" + exponent  # YAML 1.1 floats need a signed exponent
        mantissa = sign + digits
        return f"{mantissa}e{exponent}"


@dataclass(frozen=True)
class YamlDuplicate:
    pointer: str
    key: str
    first: Span
    second: Span


@dataclass(frozen=True)
class NonStringKey:
    """A mapping key YAML types as something else (``1:``, ``true:``, ``null:``)."""

    pointer: str
    value: Any
    span: Span


@dataclass
class YamlTree:
    """The result of :func:`parse_yaml`."""

    text: str
    data: Any = None
    key_spans: dict[str, Span] = field(default_factory=dict)
    value_spans: dict[str, Span] = field(default_factory=dict)
    key_text: dict[str, str] = field(default_factory=dict)
    """Each key pointer -> the key exactly as written (before any normalisation by an adapter)."""
    sci_strings: list[SciString] = field(default_factory=list)
    duplicates: list[YamlDuplicate] = field(default_factory=list)
    non_string_keys: list[NonStringKey] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    """TL001/TL002 (the file could not be read: ``data`` is what was read before the problem,
    or None) and TL003 (duplicate keys)."""
    empty: bool = False
    """The file holds no document at all (only comments or nothing)."""

    @property
    def ok(self) -> bool:
        return not any(d.code in ("TL001", "TL002") for d in self.diagnostics)


class _Problem(Exception):
    def __init__(self, message: str, span: Span, code: str = "TL002") -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.code = code


def _span(start: Any, end: Any) -> Span:
    return Span(start.line + 1, start.column + 1, end.line + 1, end.column + 1)


def node_span(node: Any) -> Span:
    """Where a node PyYAML composed is written (1-based lines and columns)."""
    return _span(node.start_mark, node.end_mark)


def compose_mapping_file(path: str, max_bytes: int) -> Any | None:
    """The root of a YAML (or JSON) file composed with the safe loader from at most ``max_bytes``, when it
    is a mapping; None when the file cannot be read or parsed, or holds something else."""
    import yaml

    from trainlint.files.sources import UnreadableSource, read_source

    try:
        root = yaml.compose(read_source(path, max_bytes=max_bytes).text, Loader=yaml.SafeLoader)
    except (UnreadableSource, OSError, yaml.YAMLError, RecursionError):
        return None
    return root if isinstance(root, yaml.MappingNode) else None


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _key_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class _Anchor:
    value: Any
    pointer: str
    size: int
    is_scalar: bool
    sci: list[tuple[str, str]]  # (pointer relative to the anchor, text)
    open: bool = True


class _Frame:
    __slots__ = (
        "anchor",
        "container",
        "is_map",
        "key",
        "key_is_merge",
        "key_span",
        "last_end",
        "merged",
        "nodes_before",
        "pointer",
        "sci_start",
        "seen",
        "start",
    )

    def __init__(self, container: Any, is_map: bool, pointer: str, start: Any, anchor: str | None,
                 sci_start: int, nodes_before: int) -> None:
        self.container = container
        self.is_map = is_map
        self.pointer = pointer
        self.start = start
        self.last_end = None
        self.key: Any = _NO_KEY
        self.key_span: Span | None = None
        self.key_is_merge = False
        self.seen: dict[Any, Span] = {}
        self.merged: list[dict] = []
        self.anchor = anchor
        self.nodes_before = nodes_before
        """The values counted before this one's own: its size (itself and everything in it, aliases
        expanded) is the count at its end less this."""
        self.sci_start = sci_start


_NO_KEY = object()


_MEMO_SIZE = 4096
_RESOLVED: dict[tuple[str, Any], str] = {}
"""(text, implicit) -> the tag PyYAML's resolver gives a plain scalar: the same text resolves the same way
in every file (``true``, ``0.1``, ``null``), and the resolver tries its patterns in Python each time."""
_MADE: dict[tuple[str, str], Any] = {}
"""(tag, text) -> the value SafeConstructor made of it, for the immutable ones (null, bool, int, float):
built once, not through a node and the constructor's machinery for every scalar."""
_IMMUTABLE = (bool, int, float, type(None))
_MISSING = object()


class _Composer:
    def __init__(self, text: str, tree: YamlTree, max_nodes: int, max_depth: int) -> None:
        self.text = text
        self.tree = tree
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.nodes = 0
        self.stack: list[_Frame] = []
        self.anchors: dict[str, _Anchor] = {}
        self.documents = 0
        self.has_root = False
        self.sci: list[tuple[str, str, Span]] = []
        # One SafeLoader serves as resolver and scalar constructor (no parsing happens in it).
        self.loader = yaml.SafeLoader("")

    # -- placing values ---------------------------------------------------------------------
    def child_pointer(self) -> str:
        if not self.stack:
            return ""
        frame = self.stack[-1]
        if frame.is_map:
            return frame.pointer + "/" + _escape(_key_string(frame.key))
        return frame.pointer + "/" + str(len(frame.container))

    def count(self, n: int, span: Span, through_alias: bool = False) -> None:
        if (self.nodes & 255) + n > 255:
            cancel.check()  # a lint the language server no longer wants stops here
        self.nodes += n
        if self.nodes > self.max_nodes:
            if through_alias:
                raise _Problem(
                    f"YAML alias expansion exceeds {self.max_nodes} values (a file with anchors that multiply, "
                    "such as a \"billion laughs\" file); not read further", span, code="TL001")
            raise _Problem(f"more than {self.max_nodes} values: far larger than any training config; not read further",
                           span, code="TL001")

    def place(self, value: Any, span: Span, end_mark: Any) -> str:
        """Put a finished value into the open container (or make it the root); return its pointer."""
        stack = self.stack
        if not stack:
            self.tree.value_spans[""] = span
            self.tree.data = value
            self.has_root = True
            return ""
        frame = stack[-1]  # the pointer as child_pointer() gives it, written out: this runs for every value
        frame.last_end = end_mark
        if not frame.is_map:
            ptr = frame.pointer + "/" + str(len(frame.container))
            self.tree.value_spans[ptr] = span
            frame.container.append(value)
            return ptr
        key = frame.key
        ptr = frame.pointer + "/" + _escape(key if type(key) is str else _key_string(key))
        self.tree.value_spans[ptr] = span
        if frame.key_is_merge:
            self.merge(frame, value, span)
        else:
            frame.container[frame.key] = value
        frame.key = _NO_KEY
        frame.key_is_merge = False
        return ptr

    def merge(self, frame: _Frame, value: Any, span: Span) -> None:
        """``<<: *base`` or ``<<: [*a, *b]``: keys merged in, explicit keys win (as in PyYAML)."""
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(s, dict) for s in sources):
            raise _Problem("the value of a merge key `<<` must be a mapping or a list of mappings", span)
        # Earlier sources win over later ones, explicit keys over all (applied at mapping end).
        frame.merged.extend(sources)
        self.tree.value_spans.pop(frame.pointer + "/" + _escape("<<"), None)

    def set_key(self, frame: _Frame, key: Any, span: Span, written: str, is_merge: bool) -> None:
        if isinstance(key, (dict, list)):
            raise _Problem("a mapping or sequence used as a mapping key is not supported", span)
        try:
            hash(key)
        except TypeError:
            raise _Problem("a mapping key that cannot be hashed", span) from None
        frame.key = key
        frame.key_span = span
        frame.key_is_merge = is_merge
        if is_merge:
            return
        ptr = frame.pointer + "/" + _escape(_key_string(key))
        if not isinstance(key, str):
            self.tree.non_string_keys.append(NonStringKey(ptr, key, span))
        if key in frame.seen:
            self.tree.duplicates.append(YamlDuplicate(ptr, _key_string(key), frame.seen[key], span))
        frame.seen[key] = span
        self.tree.key_spans[ptr] = span
        self.tree.key_text[ptr] = written

    def expecting_key(self) -> bool:
        return bool(self.stack) and self.stack[-1].is_map and self.stack[-1].key is _NO_KEY

    # -- events -----------------------------------------------------------------------------
    def scalar(self, event: Any) -> None:
        start, end = event.start_mark, event.end_mark
        span = Span(start.line + 1, start.column + 1, end.line + 1, end.column + 1)
        tag = event.tag
        text = event.value
        if tag is None or tag == "!":
            written = (text, event.implicit)
            tag = _RESOLVED.get(written)
            if tag is None:
                tag = self.loader.resolve(yaml.ScalarNode, text, event.implicit)
                if len(_RESOLVED) >= _MEMO_SIZE:
                    _RESOLVED.clear()
                _RESOLVED[written] = tag
        if tag == _STR_TAG:
            value: Any = text  # what SafeConstructor.construct_yaml_str returns, without the per-node machinery
        elif tag not in _SAFE_SCALAR_TAGS:
            raise _Problem(_tag_message(event.tag or tag), span)
        elif tag == _MERGE_TAG:
            value = "<<"
        else:
            value = _MADE.get((tag, text), _MISSING)
            if value is _MISSING:
                value = self.construct(tag, event, span)
        stack = self.stack
        if stack:
            frame = stack[-1]
            if frame.is_map and frame.key is _NO_KEY:
                if type(value) is not str or tag == _MERGE_TAG:
                    self.set_key(frame, value, span, text, tag == _MERGE_TAG)
                    return
                # set_key for a string key (nearly every key), written out
                frame.key = value
                frame.key_span = span
                frame.key_is_merge = False
                ptr = frame.pointer + "/" + value.replace("~", "~0").replace("/", "~1")
                seen = frame.seen
                if value in seen:
                    self.tree.duplicates.append(YamlDuplicate(ptr, value, seen[value], span))
                seen[value] = span
                self.tree.key_spans[ptr] = span
                self.tree.key_text[ptr] = text
                return
        self.count(1, span)
        ptr = self.place(value, span, end)
        if tag == _STR_TAG and event.style in (None, "") and _SCI_NUMBER.fullmatch(text):
            self.sci.append((ptr, text, span))
        if event.anchor is not None:
            sci = [(ptr_[len(ptr):], text_) for ptr_, text_, _ in self.sci if ptr_ == ptr]
            self.anchors[event.anchor] = _Anchor(value, ptr, 1, True, sci, open=False)

    def construct(self, tag: str, event: Any, span: Span) -> Any:
        """The value SafeConstructor makes of a scalar with a safe tag other than str and merge (null,
        bool, int, float, timestamp, binary), remembered when immutable."""
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            value = self.loader.construct_object(node, deep=True)
        except ValueError as exc:  # an int of over 4,300 digits (PyYAML's int() refuses it)
            if tag != _INT_TAG or not re.fullmatch(r"[-+]?[0-9_]+", event.value):
                raise _Problem(f"cannot read the value: {exc}", span) from None
            value = read_int(event.value)
            self.loader.constructed_objects.clear()
        except yaml.YAMLError as exc:
            raise _Problem(f"cannot read the value {event.value!r}: {getattr(exc, 'problem', exc)}", span) from None
        self.loader.constructed_objects.clear()
        if type(value) in _IMMUTABLE:
            if len(_MADE) >= _MEMO_SIZE:
                _MADE.clear()
            _MADE[(tag, event.value)] = value
        return value

    def alias(self, event: Any) -> None:
        span = _span(event.start_mark, event.end_mark)
        anchor = self.anchors.get(event.anchor)
        if anchor is None:  # the parser reports undefined aliases itself; be safe anyway
            raise _Problem(f"alias *{event.anchor} refers to no anchor", span)
        if anchor.open:
            raise _Problem(f"alias *{event.anchor} is used inside its own anchor (a recursive structure)", span)
        if self.expecting_key():
            if not anchor.is_scalar:
                raise _Problem("a mapping or sequence used as a mapping key is not supported", span)
            self.set_key(self.stack[-1], anchor.value, span, "*" + event.anchor, False)
            return
        self.count(anchor.size, span, through_alias=True)
        ptr = self.place(anchor.value, span, event.end_mark)
        for rel, text in anchor.sci:
            self.sci.append((ptr + rel, text, span))

    def start_collection(self, event: Any, is_map: bool) -> None:
        span = _span(event.start_mark, event.end_mark)
        allowed = _MAP_TAGS if is_map else _SEQ_TAGS
        if event.tag not in allowed:
            raise _Problem(_tag_message(event.tag), span)
        if self.expecting_key():
            raise _Problem("a mapping or sequence used as a mapping key is not supported", span)
        if len(self.stack) >= self.max_depth:
            raise _Problem(f"nesting too deep (more than {self.max_depth} levels of mappings and sequences)", span)
        nodes_before = self.nodes
        self.count(1, span)
        container: Any = {} if is_map else []
        ptr = self.place(container, span, event.end_mark)
        frame = _Frame(container, is_map, ptr, event.start_mark, event.anchor, len(self.sci), nodes_before)
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchor(container, ptr, 0, False, [], open=True)
        self.stack.append(frame)

    def end_collection(self, event: Any) -> None:
        frame = self.stack.pop()
        if frame.is_map and frame.merged:
            explicit = dict(frame.container)
            frame.container.clear()
            for source in frame.merged:
                for k, v in source.items():
                    frame.container.setdefault(k, v)
            frame.container.update(explicit)
            self._merged_spans(frame, explicit)
        end = event.end_mark if _is_flow_end(event) or frame.last_end is None else frame.last_end
        self.tree.value_spans[frame.pointer] = _span(frame.start, end)
        if self.stack:
            self.stack[-1].last_end = end
        if frame.anchor is not None:
            anchor = self.anchors[frame.anchor]
            anchor.size = self.nodes - frame.nodes_before
            anchor.open = False
            anchor.sci = [(p[len(frame.pointer):], t) for p, t, _ in self.sci[frame.sci_start:]]

    def _merged_spans(self, frame: _Frame, explicit: dict) -> None:
        """A key merged in from an anchor (``<<: *base``) is written at the anchor's key: its key
        and value get those spans (the first source that has it, as the value is taken)."""
        pointers = {id(a.value): a.pointer for a in self.anchors.values() if not a.is_scalar}
        done = set(explicit)
        key_spans, value_spans = self.tree.key_spans, self.tree.value_spans
        for source in frame.merged:
            base = pointers.get(id(source))
            if base is None:
                continue
            for k in source:
                if k in done:
                    continue
                done.add(k)
                name = "/" + _escape(_key_string(k))
                if base + name in key_spans:
                    key_spans[frame.pointer + name] = key_spans[base + name]
                if base + name in value_spans:
                    value_spans[frame.pointer + name] = value_spans[base + name]

    def run(self) -> None:
        # yaml.parse's loop without its generator (a frame resumed per event), the dispatch inline
        loader = _LOADER(self.text)
        scalar, alias, start_collection, end_collection = self.scalar, self.alias, self.start_collection, self.end_collection
        ScalarEvent, MappingStartEvent, SequenceStartEvent = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
        MappingEndEvent, SequenceEndEvent, AliasEvent = yaml.MappingEndEvent, yaml.SequenceEndEvent, yaml.AliasEvent
        DocumentStartEvent = yaml.DocumentStartEvent
        try:
            check_event, get_event = loader.check_event, loader.get_event
            while check_event():
                event = get_event()
                kind = type(event)
                if kind is ScalarEvent:
                    scalar(event)
                elif kind is MappingStartEvent:
                    start_collection(event, True)
                elif kind is SequenceStartEvent:
                    start_collection(event, False)
                elif kind is MappingEndEvent or kind is SequenceEndEvent:
                    end_collection(event)
                elif kind is AliasEvent:
                    alias(event)
                elif kind is DocumentStartEvent:
                    self.documents += 1
                    if self.documents > 1:
                        raise _Problem("a second YAML document (`---`) in the file; the framework reads exactly one "
                                       "(yaml.load: \"expected a single document in the stream\")",
                                       _span(event.start_mark, event.end_mark))
        finally:
            loader.dispose()
        if self.tree.duplicates:
            self.drop_overwritten()
        for ptr, text, span in self.sci:
            self.tree.sci_strings.append(SciString(ptr, text, span))

    def drop_overwritten(self) -> None:
        """After a duplicate key, forget the positions inside the value that was overwritten.

        Done once at the end (not at each duplicate) so that a file of many duplicates stays linear."""
        data = self.tree.data

        def exists(ptr: str) -> bool:
            node = data
            for part in ptr.split("/")[1:]:
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict):
                    match = next((k for k in (part,) if k in node), _NO_KEY)
                    if match is _NO_KEY:
                        match = next((k for k in node if _key_string(k) == part), _NO_KEY)
                    if match is _NO_KEY:
                        return False
                    node = node[match]
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    return False
            return True

        for table in (self.tree.key_spans, self.tree.value_spans, self.tree.key_text):
            for ptr in [p for p in table if not exists(p)]:
                del table[ptr]
        self.sci = [s for s in self.sci if exists(s[0])]


def _is_flow_end(event: Any) -> bool:
    # A flow collection ends at its `}` / `]` (a one-character event); a block collection's end
    # event sits at the next token, often lines later, so the last child's end is used instead.
    return (event.end_mark.index - event.start_mark.index) == 1


def _tag_message(tag: str | None) -> str:
    shown = str(tag).replace("tag:yaml.org,2002:", "!!")
    if "python/" in shown:
        return (f"tag {shown} asks to build a Python object; trainlint reads YAML safely and never does that "
                "(write a plain value instead)")
    return f"tag {shown} is not a plain YAML type; trainlint reads only plain mappings, lists and scalars"


_TOKEN_WORDS = {
    "<scalar>": "a value",
    "<block mapping start>": "the start of an indented mapping",
    "<block sequence start>": "the start of an indented list",
    "<block end>": "the end of an indented block",
    "<stream end>": "the end of the file",
    "<document start>": "`---`",
    "<document end>": "`...`",
    "<flow mapping start>": "'{'",
    "<flow sequence start>": "'['",
    "<block mapping end>": "the end of a mapping",
}


def readable_problem(exc: yaml.YAMLError, text: str = "") -> str:
    """PyYAML's problem text, with token names in words and a hint for the common mistakes."""
    problem = str(getattr(exc, "problem", None) or exc).strip()
    pmark = getattr(exc, "problem_mark", None)
    at = text[pmark.index] if pmark is not None and 0 <= pmark.index < len(text) else ""
    at_end = pmark is not None and not text[pmark.index:].strip()
    for token, words in _TOKEN_WORDS.items():
        problem = problem.replace(f"'{token}'", words).replace(token, words)
    problem = problem.replace("but found", "but found").replace("but got", "but found")
    context = getattr(exc, "context", None)
    hint = ""
    if at == "\t" or "'\\t'" in problem:
        hint = "; a tab: YAML does not allow tabs for indentation, use spaces"
    elif at_end and ("expected ',' or '}'" in problem or "expected ',' or ']'" in problem):
        hint = "; the file ends before the bracket is closed"
    elif "expected ',' or '}'" in problem or "expected ',' or ']'" in problem:
        hint = "; is a comma missing at the end of the previous entry?"
    elif "mapping values are not allowed" in problem:
        hint = "; a `key: value` where a value was expected (check the indentation, or quote a value that contains ': ')"
    elif "could not find expected ':'" in problem:
        hint = "; a line without `key: value` inside a mapping (check the indentation)"
    elif "found undefined alias" in problem:
        hint = "; an alias `*name` needs an anchor `&name` earlier in the file"
    where = ""
    cmark = getattr(exc, "context_mark", None)
    if context and cmark is not None and pmark is not None and (cmark.line, cmark.column) != (pmark.line, pmark.column):
        for token, words in _TOKEN_WORDS.items():
            context = context.replace(token, words)
        where = f" ({context} at line {cmark.line + 1}, column {cmark.column + 1})"
    return f"YAML syntax error: {problem}{where}{hint}"


def parse_yaml(
    text: str,
    path: str | None = None,
    *,
    max_nodes: int = MAX_NODES,
    max_depth: int = MAX_DEPTH,
    duplicate_severity: Severity = Severity.WARNING,
    duplicate_note: str = "PyYAML keeps the last value silently",
) -> YamlTree:
    """Read ``text`` (decoded, BOM stripped) into a :class:`YamlTree`. Never raises on bad input.

    ``duplicate_severity``/``duplicate_note`` say how the caller's framework treats a key given
    twice in one mapping (NeoX and Megatron load with PyYAML, which keeps the last one)."""
    tree = YamlTree(text)
    composer = _Composer(text, tree, max_nodes, max_depth)
    try:
        composer.run()
    except _Problem as problem:
        tree.diagnostics.append(input_diagnostic(problem.code, problem.message, problem.span, path=path))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        span = Span.point(mark.line + 1, mark.column + 1) if mark is not None else FILE_START
        tree.diagnostics.append(input_diagnostic("TL002", readable_problem(exc, text), span, path=path))
    except yaml.reader.ReaderError as exc:
        line, column = LineIndex(text).position(exc.position)
        tree.diagnostics.append(input_diagnostic(
            "TL002", f"YAML cannot contain the character U+{exc.character:04X}"
            if isinstance(exc.character, int) else f"YAML cannot read this text: {exc.reason}",
            Span.point(line, column), path=path))
    except yaml.YAMLError as exc:  # any other PyYAML failure: still a diagnostic, never a traceback
        tree.diagnostics.append(input_diagnostic("TL002", f"YAML error: {exc}", FILE_START, path=path))
    except RecursionError:  # pragma: no cover - the composer is iterative; belt and braces
        tree.diagnostics.append(input_diagnostic("TL002", "YAML nesting too deep", FILE_START, path=path))
    tree.empty = not composer.has_root and tree.ok
    for dup in tree.duplicates:
        tree.diagnostics.append(input_diagnostic(
            "TL003",
            f"duplicate key `{dup.key}` (first at line {dup.first.line}); {duplicate_note}",
            dup.second, path=path, severity=duplicate_severity,
            related=(Related(f"first `{dup.key}` here", dup.first, path),)))
    return tree
