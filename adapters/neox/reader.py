"""GPT-NeoX run configs: one or several YAML files (JSON files too: NeoX reads them with PyYAML).

What NeoX does with them (megatron/neox_arguments/arguments.py, ``NeoXArgs.from_ymls``):

* each file is read with ``yaml.load`` (YAML 1.1 typing: ``6e-4`` is a *string*);
* top-level keys are merged in file order after replacing ``-`` by ``_``; a key *as written*
  that is already in the merged config raises "Conf file X has the following duplicate keys
  with previously loaded file" -- also inside one file, when ``num-layers`` is followed by
  ``num_layers``. Because the check compares the key as written with the normalised keys, a
  hyphenated key never trips it: ``num-layers`` given twice silently keeps the later value;
* two files with the same base name are refused (checkpoint saving would clash);
* ``NeoXArgs(**config)`` refuses unknown keys (TypeError), then ``validate_types`` compares
  types exactly (int allowed for float, Literal values case-insensitive, None always allowed,
  ``"auto"`` allowed when ``autotuning`` is set).

This adapter reports each of those at the key as written, checks every file against
``schemas/neox.schema.json`` and builds one TrainingSpec for the merged run, every value
with the provenance of the file that set it, or NeoX's own default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from trainlint.adapters.base import LoadContext, LoadResult
from trainlint.core.diagnostics import Applicability, Diagnostic, Related, Severity, code
from trainlint.core.document import Document, pointer_parts
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.positions import FILE_START, Span
from trainlint.core.provenance import Value, default, derived, from_file
from trainlint.files.sources import SourceText, UnreadableSource
from trainlint.core.spec import EngineSpec, TrainingSpec

from trainlint.adapters.neox.parsing import parse_once, schema as _schema

if TYPE_CHECKING:  # pragma: no cover - yaml_tree (and PyYAML) is imported when a YAML is read
    from trainlint.adapters.text.yaml_tree import YamlTree

NEOX_ARGS_PY = "megatron/neox_arguments/neox_args.py"
DEEPSPEED_ARGS_PY = "megatron/neox_arguments/deepspeed_args.py"
ARGUMENTS_PY = "megatron/neox_arguments/arguments.py"

# Keys NeoX used to accept (found in older configs): NeoX now refuses them like any unknown key,
# but the message can say what happened. From `git log -S` on neox_args.py at ea7aefd.
_REMOVED = {
    "save_interval": "renamed `checkpoint_factor` (gpt-neox #737)",
    "moe_type": "removed with the DeepSpeed MoE integration (gpt-neox #1210, dMoE); MoE is configured with moe_num_experts",
    "moe_token_dropping": "removed with the DeepSpeed MoE integration (gpt-neox #1210)",
    "enable_expert_tensor_parallelism": "removed with the DeepSpeed MoE integration (gpt-neox #1210)",
    "moe_expert_parallel_size": "removed with the DeepSpeed MoE integration (gpt-neox #1210)",
    "sparsity": "removed in 2021; sparse attention is chosen in attention_config",
}
_GATED = {"swiglu", "geglu", "reglu", "glu", "bilinear"}
_PRECISION = {"fp16": "fp16", "fp32": "fp32", "bfloat16": "bf16"}

def _against(target) -> str:
    """Short: the file's statement of its target (trainlint.frameworks.target.statement) says once
    how to state another one."""
    commit = getattr(target, "commit", None)
    what = f"upstream GPT-NeoX at {commit}" if commit else "upstream GPT-NeoX"
    return f"checked against {what}, assumed"


def _keys(target):
    """The NeoX framework's key catalog for a run checked against ``target`` (the release's own keys
    when the target carries its catalog)."""
    from trainlint.core.framework import framework_of

    return framework_of("neox").key_catalog(target)


def _elsewhere(key: str) -> str:
    from trainlint.core.framework import framework_of

    where = framework_of("neox").key_catalog().defined_by(key)
    return f" ({where})" if where else ""


def _refusal(target) -> str | None:
    """How an unknown top-level key's finding names who refuses it, against a known target."""
    if target is not None and target.known and target.complete:
        return f"not an argument of {target.describe()}, which refuses it"
    return None


def _older_release_types(diags: list[Diagnostic], target) -> list[Diagnostic]:
    """NeoX checks the type of every value (NeoXArgs.validate_types, gpt-neox 8350c1d, 2021-04);
    before that its ConfigMonster passed each value to Megatron's argparse as text (``str(v)``), which
    read "2e-05" as a float. With the version assumed, a config whose own keys upstream removed or
    lacks (two or more, none a misspelling: `save_interval`, `sparsity`) is written for another
    release or a fork, so the type findings that rest on that check (TL009 at the top level, TL005)
    are warnings that say so."""
    if target is not None and target.known:
        return diags
    foreign = sorted({_top_level_key(d) or "" for d in diags
                      if d.severity is Severity.WARNING and d.code in ("TL004", "TL008") and d.subject is not None
                      and d.applicability is not Applicability.SAFE} - {""})
    if len(foreign) < 2:
        return diags
    from dataclasses import replace

    shown = ", ".join(code(k) for k in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
    out = []
    for d in diags:
        if d.severity is Severity.ERROR and d.code in ("TL005", "TL009") and "type" in d.message:
            d = replace(d, severity=Severity.WARNING,
                        message=f"{d.message} (GPT-NeoX since 8350c1d, 2021-04; before it the value reached argparse "
                                f"as text); this config's own keys ({shown}) are no options of upstream GPT-NeoX "
                                f"either: it is written for another release or a fork; {_against(target)}")
        out.append(d)
    return out


def _fork_beside(target, path: str | None):
    """The fork beside the config when the project config names another target (None otherwise)."""
    from trainlint.frameworks.locate import fork_beside
    from trainlint.frameworks.target import TargetOrigin

    if target is None or target.origin is not TargetOrigin.PROJECT_CONFIG:
        return None
    fork = fork_beside("neox", path)
    return fork if fork is not None and fork.path != target.path else None


def _top_level_key(d: Diagnostic) -> str | None:
    """The key of an unknown-key finding (TL004) at the top level of the config, else None."""
    if d.subject is None or d.subject.count("/") != 1:
        return None
    return d.subject[1:].replace("~1", "/").replace("~0", "~")


def _judged(diags: list[Diagnostic], target, path: str | None = None) -> list[Diagnostic]:
    """Unknown keys and values outside upstream's choices are errors only against a known target:
    assumed upstream, a fork may define them (Stability's `mlp_type`, `hybrid_cosine_inv_sqrt_2`).
    Against a target the project config names, a key the fork beside the config defines is a
    warning naming that fork (the config is the fork's; the target lacks the key)."""
    from dataclasses import replace

    known = target is not None and target.known and target.complete
    fork = _fork_beside(target, path) if any(d.code == "TL004" for d in diags) else None
    out = []
    unlisted: list[tuple[Diagnostic, str]] = []
    for d in diags:
        top = _top_level_key(d) if fork is not None and d.code == "TL004" else None
        if fork is not None and top is not None and _keys(fork).defines(top):
            out.append(replace(d, severity=Severity.WARNING, applicability=None, edits=(), fix=None,
                               message=f"{d.message.split('; did you mean')[0]}; {fork.describe()}, found beside the "
                                       "config, defines it"))
            continue
        if not known and d.code == "TL004" and d.applicability is Applicability.SAFE:
            out.append(d)  # a misspelling of an upstream key (two letters at most): no fork is needed to explain it
            continue
        if d.severity is Severity.ERROR and (d.code == "TL004" or (d.code == "TL006" and d.choices)):
            top_key = _top_level_key(d) if d.code == "TL004" else None
            if not known:  # against a known target the schema check has said who refuses it (_refusal)
                extra = _elsewhere(top_key) if top_key is not None else ""
                if top_key is not None and not _likely_misspelling(top_key, d):
                    unlisted.append((d, f"`{top_key}`{extra}"))
                    continue
                d = replace(d, severity=Severity.WARNING, message=f"{d.message}{extra}; {_against(target)}")
        out.append(d)
    return out + _unlisted_summary(unlisted, target)


def _likely_misspelling(key: str, d: Diagnostic) -> bool:
    """A did-you-mean two letters away at most (`num_atention_heads`): it keeps a finding of its own."""
    import re

    from trainlint.files.key_edits import is_misspelling

    hint = re.search(r"did you mean `([^`]+)`", d.message)
    return hint is not None and is_misspelling(key.replace("-", "_"), hint.group(1).replace("-", "_"))


def _unlisted_summary(unlisted: list[tuple[Diagnostic, str]], target) -> list[Diagnostic]:
    """The top-level keys the assumed upstream lacks and that misspell none it has: one warning per
    file listing them (a fork's or another release's keys), at the first, the others related, as the
    Megatron reader does for flags (issue 28: no warning per name nobody can act on)."""
    if not unlisted:
        return []
    from dataclasses import replace

    from trainlint.core.diagnostics import Related
    from trainlint.frameworks.target import how_to_point

    first = unlisted[0][0]
    names = ", ".join(shown for _, shown in unlisted[:8]) + (f" and {len(unlisted) - 8} more" if len(unlisted) > 8 else "")
    what = f"{len(unlisted)} unknown top-level keys" if len(unlisted) > 1 else "unknown top-level key"
    related = tuple(Related(f"{shown} here", d.span, d.path) for d, shown in unlisted[1:20])
    return [replace(first, severity=Severity.WARNING, fix=None, applicability=None, edits=(), related=related,
                    message=f"{what} {names}: no options of upstream GPT-NeoX, {_against(target)}; "
                            f"a fork or another release may define them: {how_to_point('neox')}")]


def _default_note(key: str) -> str:
    prop = _schema()["properties"].get(key, {})
    where = DEEPSPEED_ARGS_PY if prop.get("x-neox-class", "").startswith("NeoXArgsDeepspeed") else NEOX_ARGS_PY
    return f"GPT-NeoX default ({where})"


@dataclass
class _Entry:
    """One top-level key of the merged config, with where it was written."""

    key: str           # normalised (underscores)
    written: str       # as in the file
    value: Any
    path: str
    key_span: Span
    value_span: Span | None
    raw_pointer: str   # pointer of the key as written in its file's tree
    tree: YamlTree


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class NeoXReader:
    """Reads the files :class:`~trainlint.adapters.neox.detect.NeoXAdapter` claims."""

    name = "neox"

    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        result = LoadResult(format=self.name)
        sources = [source]
        for extra in context.extra_paths:
            try:
                sources.append(context.read(extra))
            except UnreadableSource as exc:
                result.diagnostics.append(exc.diagnostic)
        merged: dict[str, _Entry] = {}
        basenames: dict[str, str] = {}
        per_file: list[tuple[SourceText, YamlTree, Document]] = []
        for src in sources:
            tree = parse_once(src.text, src.path)
            result.diagnostics.extend(tree.diagnostics)
            if not tree.ok:
                continue
            if not isinstance(tree.data, dict):
                got = "nothing (the file is empty)" if tree.empty else type(tree.data).__name__
                result.diagnostics.append(input_diagnostic(
                    "TL005", f"a NeoX config must be a mapping of keys to values at the top level, got {got}; "
                             "NeoX fails on it (conf.items())", tree.value_spans.get("", FILE_START), path=src.path))
                continue
            self._check_basename(src.path, basenames, result.diagnostics)
            doc = self._merge_file(src, tree, merged, result.diagnostics)
            result.documents.append(doc)
            per_file.append((src, tree, doc))
        autotuning = "autotuning" in merged and merged["autotuning"].value is not None
        from trainlint.frameworks.locate import read_note, resolve

        target = resolve("neox", source.path, context.frameworks)
        note = read_note(target, FILE_START, source.path)
        if note is not None:
            result.diagnostics.append(note)
        for src, tree, doc in per_file:
            result.diagnostics.extend(self._check_file(doc, tree, src.path, autotuning, target))
        spec = _SpecBuilder(merged, source.path, [s.path for s in sources]).build()
        spec.target = target
        spec.named = context.named or len(sources) > 1
        result.specs.append(spec)
        order = {s.path: i for i, s in enumerate(sources)}
        result.diagnostics.sort(key=lambda d: (order.get(d.path or "", len(order)), d.span, d.code))
        return result

    @staticmethod
    def _check_basename(path: str, seen: dict[str, str], out: list[Diagnostic]) -> None:
        name = os.path.basename(path)
        if name in seen:
            out.append(input_diagnostic(
                "TL006", f"two config files named {name} ({seen[name]} and {path}); NeoX refuses this: \"At least "
                         "two config files have the same filename\" (it saves them side by side with checkpoints)",
                FILE_START, path=path, related=(Related("the other file", FILE_START, seen[name]),)))
        else:
            seen[name] = path

    def _merge_file(self, src: SourceText, tree: YamlTree, merged: dict[str, _Entry],
                    out: list[Diagnostic]) -> Document:
        """Merge one file's top-level keys as from_ymls does; return the file's normalised Document."""
        data: dict[str, Any] = {}
        rename: dict[str, str] = {}  # raw top-level pointer -> normalised pointer
        for raw_key, value in tree.data.items():
            raw_ptr = "/" + _escape(str(raw_key) if not isinstance(raw_key, str) else raw_key)
            key_span = tree.key_spans.get(raw_ptr, FILE_START)
            if not isinstance(raw_key, str):
                out.append(input_diagnostic(
                    "TL005", f"the key {raw_key!r} is read by YAML as a {type(raw_key).__name__}, not a string; NeoX "
                             "fails on it (it calls key.replace); quote it", key_span, path=src.path))
                continue
            key = raw_key.replace("-", "_")
            entry = _Entry(key, raw_key, value, src.path, key_span, tree.value_spans.get(raw_ptr), raw_ptr, tree)
            previous = merged.get(key)
            if previous is not None:
                out.append(self._repeat_diagnostic(previous, entry, raw_key in merged))
            merged[key] = entry
            data[key] = value
            rename[raw_ptr] = "/" + _escape(key)
        return self._document(src, tree, data, rename)

    @staticmethod
    def _repeat_diagnostic(previous: _Entry, entry: _Entry, refused: bool) -> Diagnostic:
        same_file = previous.path == entry.path
        related = (Related(f"`{previous.written}` first given here", previous.key_span, previous.path),)
        where = f"line {previous.key_span.line}" if same_file else f"{previous.path}:{previous.key_span.line}"
        if refused:
            # NeoX raises ValueError: the key as written is already in the merged config.
            message = (f"`{entry.written}` is already set (as `{previous.written}` at {where}); NeoX refuses the config: "
                       f"\"Conf file {os.path.basename(entry.path)} has the following duplicate keys with previously "
                       f"loaded file: {entry.written}\"")
            code = "TL011" if same_file and previous.written != entry.written else "TL003"
            return input_diagnostic(code, message, entry.key_span, path=entry.path, severity=Severity.ERROR,
                                    related=related)
        spelled = "spelled differently" if previous.written != entry.written else "again"
        return input_diagnostic(
            "TL011",
            f"`{entry.written}` sets `{entry.key}` {spelled} (first `{previous.written}` at {where}); NeoX replaces "
            "- with _ and silently keeps this later value", entry.key_span, path=entry.path, related=related)

    @staticmethod
    def _document(src: SourceText, tree: YamlTree, data: dict, rename: dict[str, str]) -> Document:
        key_spans: dict[str, Span] = {}
        value_spans: dict[str, Span] = {}
        for table, target in ((tree.key_spans, key_spans), (tree.value_spans, value_spans)):
            # each pointer under its top-level key's new name (a pointer under no renamed key is dropped);
            # written out, not a function per pointer: every key and value of the file passes here
            for ptr, span in table.items():
                if not ptr:
                    target[""] = span
                    continue
                slash = ptr.find("/", 1)
                new = rename.get(ptr if slash == -1 else ptr[:slash])
                if new is not None:
                    target[new if slash == -1 else new + ptr[slash:]] = span
        return Document(src.path, "neox", src.text, data, key_spans, value_spans)

    # -- checks -----------------------------------------------------------------------------
    def _check_file(self, doc: Document, tree: YamlTree, path: str, autotuning: bool,
                    target=None) -> list[Diagnostic]:
        from trainlint.files.schema_check import check_document

        props = _schema()["properties"]
        keys = _keys(target)  # the framework's one key catalog, with the checked release's keys
        out: list[Diagnostic] = []
        unresolved: dict[str, str] = {}
        for sci in tree.sci_strings:
            parts = pointer_parts(sci.pointer)
            if not parts:
                continue
            key = parts[0].replace("-", "_")
            ptr = "/" + "/".join(_escape(p) for p in [key] + parts[1:])
            unresolved[ptr] = "YAML 1.1 scientific-notation string (TL009)"
            diag = self._sci_diagnostic(sci, key, parts, props, path, doc.text)
            if diag is not None:
                out.append(diag)
        for key in doc.data:
            if key in _REMOVED and key not in props and not keys.defines(key):
                unresolved["/" + _escape(key)] = "removed option (TL008)"
                if keys.release() is None:
                    # Upstream removed it; the config may be written for a release or a fork that has it.
                    out.append(input_diagnostic(
                        "TL008", f"`{key}` is no longer a GPT-NeoX option: {_REMOVED[key]}{_elsewhere(key)}; "
                                 f"{_against(target)}", doc.locate_key("/" + _escape(key)), path=path,
                        severity=Severity.WARNING, subject="/" + _escape(key)))
                    continue
                out.append(input_diagnostic(
                    "TL008", f"`{key}` is no longer a GPT-NeoX option: {_REMOVED[key]}; {target.describe()} refuses "
                             "the config (unexpected keyword argument)", doc.locate_key("/" + _escape(key)), path=path,
                    severity=Severity.ERROR if target.complete else Severity.WARNING))
        out.extend(self._zero_stage_check(doc, path, autotuning, unresolved))
        if autotuning:
            for ptr, value in _walk(doc.data, ""):
                if value == "auto":
                    unresolved[ptr] = "\"auto\", filled in by DeepSpeed autotuning"
                    out.append(input_diagnostic(
                        "TL007", f"`{ptr[1:].replace('/', '.')}` is \"auto\": DeepSpeed autotuning fills it in at launch; "
                                 "its value is not checked", doc.locate(ptr), path=path))
        check_doc = Document(doc.path, doc.format, doc.text, _canonical_literals(doc.data, props),
                             doc.key_spans, doc.value_spans, unresolved)
        schema = keys.schema() or _schema()
        out.extend(_judged(check_document(check_doc, schema, refusal=_refusal(target)), target, path))
        out.extend(self._exact_integer_check(check_doc, props, path))
        return _older_release_types(out, target)

    @staticmethod
    def _zero_stage_check(doc: Document, path: str, autotuning: bool, unresolved: dict[str, str]) -> Iterator[Diagnostic]:
        zero = doc.data.get("zero_optimization")
        if not isinstance(zero, dict) or "stage" not in zero:
            return
        stage = zero["stage"]
        if type(stage) is int and stage in (0, 1, 2, 3):
            return
        ptr = "/zero_optimization/stage"
        unresolved[ptr] = "ZeRO stage for autotuning"
        if autotuning:
            yield input_diagnostic(
                "TL007", f"zero_optimization.stage is {stage!r}: DeepSpeed autotuning picks the stage; it is not checked",
                doc.locate(ptr), path=path)
        else:
            yield input_diagnostic(
                "TL006", f"zero_optimization.stage is {stage!r}; NeoX: \"Zero Stage must be an integer unless you are "
                         "doing autotuning\" (0, 1, 2 or 3)", doc.locate(ptr), path=path)

    @staticmethod
    def _sci_diagnostic(sci, key: str, parts: list[str], props: dict, path: str, text: str) -> Diagnostic | None:
        written = ".".join(parts)
        fix = sci.suggestion
        base = (f"`{written}: {sci.text}` is the string \"{sci.text}\", not a number: PyYAML (YAML 1.1) reads "
                f"scientific notation as a float only with a dot and a signed exponent (gpt-neox issue 171). "
                f"Write {fix}")
        prop = props.get(key)
        if len(parts) == 1:
            types = _types(prop) if prop is not None else set()
            if prop is not None and not types & {"number", "integer"}:
                return None  # a string-valued key: the string may be meant
            diag = input_diagnostic("TL009", base + "; NeoX's type check refuses the config",
                                    sci.span, path=path, fix=fix)
            return _number_written(diag, sci, text, Applicability.SAFE)
        if key in ("optimizer", "scheduler"):
            diag = input_diagnostic("TL009", base + f"; NeoX passes `{key}` params to the optimizer as they are",
                                    sci.span, path=path, fix=fix)
            return _number_written(diag, sci, text, Applicability.SAFE)
        diag = input_diagnostic("TL009", base + f"; `{key}` is passed to DeepSpeed, which may refuse or misread it",
                                sci.span, path=path, fix=fix, severity=Severity.WARNING)
        return _number_written(diag, sci, text, Applicability.UNSAFE)

    @staticmethod
    def _exact_integer_check(doc: Document, props: dict, path: str) -> Iterator[Diagnostic]:
        # jsonschema accepts 24.0 as an integer; NeoX's validate_types compares type() exactly.
        for key, value in (doc.data or {}).items():
            prop = props.get(key)
            if prop is None or not isinstance(value, float) or "/" + _escape(key) in doc.unresolved:
                continue
            types = _types(prop)
            if "integer" in types and "number" not in types:
                yield input_diagnostic(
                    "TL005", f"`{key}` must be integer, got number {value!r}; NeoX compares types exactly "
                             f"(write {int(value) if value.is_integer() else value})",
                    doc.locate("/" + _escape(key)), path=path)


def _number_written(diag: Diagnostic, sci, text: str, applicability: Applicability) -> Diagnostic:
    """The TL009 finding with its fix as an edit of the scalar's own token (``2e-5`` -> ``2.0e-5``,
    the number that was meant, written so that YAML 1.1 reads it). Safe where the string makes
    NeoX refuse the config or the optimizer fail (nothing that runs can change); unsafe where
    DeepSpeed gets the value (it may have read the string some way). A value reached through an
    alias, or a token that is not exactly the text read, keeps the hint only."""
    from dataclasses import replace

    from trainlint.core.diagnostics import Edit
    from trainlint.files.key_edits import span_text

    if span_text(text, sci.span) != sci.text:
        return replace(diag, applicability=Applicability.DISPLAY)
    return replace(diag, applicability=applicability, edits=(Edit(sci.span, sci.suggestion),))


def _types(prop: dict | None) -> set[str]:
    if not prop:
        return set()
    t = prop.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return set(t)
    found: set[str] = set()
    for sub in prop.get("anyOf", []):
        found |= _types(sub)
    if "enum" in prop:
        found |= {"string"} if any(isinstance(v, str) for v in prop["enum"]) else set()
    return found


def _canonical_literals(data: dict, props: dict) -> dict:
    """NeoX compares Literal values case-insensitively: give the schema the canonical spelling."""
    out = dict(data)
    for key, value in data.items():
        choices = (props.get(key) or {}).get("enum")
        if choices and isinstance(value, str) and value not in choices:
            for choice in choices:
                if isinstance(choice, str) and choice.lower() == value.lower():
                    out[key] = choice
                    break
    return out


def _walk(node: Any, ptr: str) -> Iterator[tuple[str, Any]]:
    stack = [(ptr, node)]
    while stack:
        p, n = stack.pop()
        yield p, n
        if isinstance(n, dict):
            stack.extend((p + "/" + _escape(str(k)), v) for k, v in n.items())
        elif isinstance(n, list):
            stack.extend((p + "/" + str(i), v) for i, v in enumerate(n))


def _number(value: Any) -> Any:
    """A YAML 1.1 scientific-notation string as the number the author meant (TL009 is reported)."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and "." not in value else number
    return value


class _SpecBuilder:
    """The merged config -> one TrainingSpec, NeoX defaults where the files say nothing."""

    def __init__(self, merged: dict[str, _Entry], path: str, sources: list[str]) -> None:
        self.m = merged
        self.spec = TrainingSpec(framework="neox", path=path, sources=sources)

    # -- values -----------------------------------------------------------------------------
    def file(self, key: str) -> Value | None:
        entry = self.m.get(key)
        if entry is None:
            return None
        return from_file(_number(entry.value), entry.path, entry.value_span or entry.key_span, entry.written)

    def get(self, key: str) -> Value | None:
        """The file's value, else NeoX's default (None when the default is None)."""
        found = self.file(key)
        if found is not None:
            return found
        prop = _schema()["properties"].get(key, {})
        if prop.get("default") is None:
            return None
        return default(prop["default"], _default_note(key))

    def nested(self, key: str, *parts: str) -> Value | None:
        entry = self.m.get(key)
        if entry is None:
            return None
        node = entry.value
        for part in parts:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        ptr = entry.raw_pointer + "".join("/" + _escape(p) for p in parts)
        span = entry.tree.value_spans.get(ptr) or entry.tree.key_spans.get(ptr) or entry.key_span
        return from_file(_number(node), entry.path, span, ".".join([entry.written, *parts]))

    @staticmethod
    def bare(value: Value | None, fallback: Any = None) -> Any:
        return fallback if value is None else value.value

    # -- build ------------------------------------------------------------------------------
    def build(self) -> TrainingSpec:
        self.model()
        self.parallel()
        self.batch()
        self.precision()
        self.memory()
        self.cluster()
        self.settings()
        self.spec.run.fine_tuning = _fine_tuning(self.spec.settings)
        self.engine()
        return self.spec

    def engine(self) -> None:
        set_engine(self.spec)

    def model(self) -> None:
        s = self.spec
        attention = self.file("attention_config")
        kinds = _attention_kinds(self.bare(attention))
        if kinds:
            arch = ("mamba" if kinds == {"mamba"} else "other" if kinds == {"rwkv"} or kinds == {"gmlp"}
                    else "hybrid" if kinds & {"mamba", "rwkv"} else "gpt")
            s.model.architecture = derived(arch, "from the attention types in attention_config", attention)
        else:
            s.model.architecture = default("gpt", "GPT-NeoX trains decoder-only GPT models (attention_config default: global)")
        for name in ("num_layers", "hidden_size", "num_attention_heads", "seq_length", "max_position_embeddings"):
            setattr(s.model, name, self.get(name))
        heads = s.model.num_attention_heads
        s.model.num_kv_heads = self.file("num_kv_heads") or (
            derived(heads.value, "num_kv_heads not set: multi-head attention (one KV head per query head)", heads)
            if heads is not None else None)
        hidden = s.model.hidden_size
        if hidden is not None and heads is not None and isinstance(heads.value, int) and heads.value > 0 \
                and isinstance(hidden.value, int) and hidden.value % heads.value == 0:
            s.model.kv_channels = derived(hidden.value // heads.value, "hidden_size / num_attention_heads", hidden, heads)
        activation = self.get("activation")
        act = str(self.bare(activation, "gelu")).lower()
        s.model.gated_mlp = (derived(act in _GATED, f"activation {act} is {'gated' if act in _GATED else 'not gated'}",
                                     activation) if activation is not None else None)
        s.model.ffn_hidden_size = self.ffn(act in _GATED, activation)
        no_tying = self.get("no_weight_tying")
        if no_tying is not None:
            s.model.tied_embeddings = derived(not bool(no_tying.value), "not no_weight_tying", no_tying)
        s.model.hidden_dropout = self.file("hidden_dropout")  # not given: NeoX's default 0.1 keeps a mask
        s.model.num_experts = self.get("moe_num_experts")
        s.model.moe_top_k = self.get("moe_top_k")
        padded = self.file("padded_vocab_size")
        if padded is not None:
            s.model.vocab_size = padded
        else:
            s.model.vocab_size = self.vocab()
            s.model.vocab_pad_multiple = self.get("make_vocab_size_divisible_by")

    def vocab(self) -> Value | None:
        """The tokenizer's size (tokenizer_type, default GPT2BPETokenizer; vocab_file), which NeoX pads
        to make_vocab_size_divisible_by x model_parallel_size (_vocab_size_with_padding,
        megatron/tokenizer/tokenizer.py; the estimator pads). None when the tokenizer is not
        identified (the estimator then states an assumed vocabulary)."""
        from trainlint.adapters.hf.tokenizer_vocab import GPT2_BPE, Vocab, known_file, local_file

        kind_v, file_v = self.get("tokenizer_type"), self.file("vocab_file")
        kind = self.bare(kind_v, "GPT2BPETokenizer")
        ref = self.bare(file_v)
        found = None
        if isinstance(ref, str) and ref:
            assert file_v is not None  # ref is its value
            found = known_file(ref) or local_file(ref, file_v.provenance.path or self.spec.path)
        if found is None and kind == "GPT2BPETokenizer":
            found = Vocab(GPT2_BPE, "GPT2BPETokenizer: the GPT-2 BPE vocabulary (50,257 tokens)")
        if found is None:
            return None
        return derived(found.size, f"{found.note} (tokenizer_type {kind})", kind_v, file_v)

    def ffn(self, gated: bool, activation: Value | None) -> Value | None:
        """The FFN width as ParallelMLP builds it (megatron/model/transformer.py): intermediate_size,
        else expansion_factor x h, else 4h; gated activations take 2/3 of it, split in two; rounded
        up to mlp_multiple_of."""
        hidden = self.spec.model.hidden_size
        size, factor = self.file("intermediate_size"), self.file("expansion_factor")
        multiple = self.get("mlp_multiple_of")
        mult = self.bare(multiple, 1)
        if not isinstance(mult, int) or mult < 1:
            return None
        if size is not None and isinstance(size.value, int) and size.value > 0:
            base, source, how = size.value, size, "intermediate_size"
        elif factor is not None and isinstance(factor.value, (int, float)) and hidden is not None and isinstance(hidden.value, int):
            base, source, how = int(factor.value * hidden.value), factor, "expansion_factor x hidden_size"
        elif hidden is not None and isinstance(hidden.value, int):
            base, source, how = 4 * hidden.value, hidden, "4 x hidden_size (NeoX default)"
        else:
            return None
        width = int(base * 2 / 3) // 2 if gated else base
        width = mult * ((width + mult - 1) // mult)
        note = f"{how}" + (", x 2/3 and halved for the gated activation" if gated else "") + \
            (f", rounded up to mlp_multiple_of {mult}" if mult > 1 else "") + " (ParallelMLP, megatron/model/transformer.py)"
        return derived(width, note, source, activation, multiple)

    def parallel(self) -> None:
        p = self.spec.parallel
        p.tensor = self.get("model_parallel_size")
        pp = self.get("pipe_parallel_size")
        pp_value = self.bare(pp, 0)
        if isinstance(pp_value, int):
            p.pipeline = pp if pp_value >= 1 else derived(
                1, "pipe_parallel_size 0: no pipeline, one stage (NeoX clamps it to 1)", pp)
            p.pipeline_engine = derived(
                pp_value >= 1, "NeoX wraps the model in DeepSpeed's PipelineEngine when pipe_parallel_size >= 1 "
                               f"(is_pipe_parallel, {ARGUMENTS_PY})", pp)
        p.sequence_parallel = self.get("sequence_parallel")
        stage = self.nested("zero_optimization", "stage")
        if stage is not None and not (type(stage.value) is int and 0 <= stage.value <= 3):
            stage = None  # autotuning candidates or a bad value (reported): nothing to say
        if stage is None and "zero_optimization" not in self.m:
            stage = default(0, f"GPT-NeoX default (ZERO_DEFAULTS, {ARGUMENTS_PY})")
        p.zero_stage = stage
        p.offload_optimizer = self.offload("offload_optimizer", legacy="cpu_offload")
        p.offload_params = self.offload("offload_param")
        world = self.file("global_num_gpus")
        if world is not None and isinstance(world.value, int) and p.tensor is not None and isinstance(p.tensor.value, int) \
                and p.pipeline is not None and isinstance(p.pipeline.value, int):
            tp, stages = max(p.tensor.value, 1), max(p.pipeline.value, 1)
            if world.value % (tp * stages) == 0:
                p.data = derived(world.value // (tp * stages),
                                 "global_num_gpus / pipeline stages / model_parallel_size", world, p.pipeline, p.tensor)

    def offload(self, section: str, legacy: str | None = None) -> Value | None:
        device = self.nested("zero_optimization", section, "device")
        if device is not None:
            return device
        if legacy is not None:
            flag = self.nested("zero_optimization", legacy)
            if flag is not None:
                return derived("cpu" if flag.value is True else "none", f"zero_optimization.{legacy} (old spelling)", flag)
        return default("none", f"DeepSpeed default: no offload (zero_optimization.{section}.device none)")

    def batch(self) -> None:
        b = self.spec.batch
        b.micro_batch = self.file("train_micro_batch_size_per_gpu")
        b.grad_accum = self.get("gradient_accumulation_steps")
        b.global_batch = self.file("train_batch_size")

    def precision(self) -> None:
        pr = self.spec.precision
        fp16_on = self.nested("fp16", "enabled")
        bf16_on = self.nested("bf16", "enabled")
        pr.fp16_enabled, pr.bf16_enabled = fp16_on, bf16_on
        written = self.file("precision")
        fp16_type = self.nested("fp16", "type")
        if written is not None and isinstance(written.value, str) and written.value.lower() in _PRECISION:
            pr.dtype = derived(_PRECISION[written.value.lower()], "the precision key", written)
        elif fp16_on is not None and fp16_on.value is True:
            is_bf16 = fp16_type is not None and str(fp16_type.value).lower() in ("bfloat16", "bf16")
            pr.dtype = derived("bf16" if is_bf16 else "fp16",
                               "fp16.enabled with fp16.type bfloat16 (DeeperSpeed trains in bf16)" if is_bf16
                               else "fp16.enabled (NeoX sets precision fp16)", fp16_on, fp16_type)
        elif bf16_on is not None and bf16_on.value is True:
            pr.dtype = derived("bf16", "bf16.enabled (NeoX sets precision bfloat16)", bf16_on)
        else:
            pr.dtype = default("fp32", f"GPT-NeoX: precision fp32 when neither precision nor fp16/bf16 is set ({ARGUMENTS_PY})")
        pr.grad_accum_dtype = self.nested("data_types", "grad_accum_dtype")
        fp8 = self.file("te_fp8_format")
        if fp8 is not None and any(self.bare(self.file(k)) for k in ("te_columnparallel", "te_rowparallel",
                                                                         "te_layernorm_mlp", "te_mha")):
            pr.fp8 = fp8
        kind = self.nested("optimizer", "type")
        if kind is not None:
            pr.optimizer = derived(str(kind.value).lower(), "optimizer.type, lower case", kind)
        elif "optimizer" not in self.m:
            pr.optimizer = default("adam", f"GPT-NeoX default optimizer Adam (OPT_DEFAULT, {ARGUMENTS_PY})")

    def memory(self) -> None:
        mem = self.spec.memory
        ckpt = self.get("checkpoint_activations")
        if ckpt is not None:
            on = bool(ckpt.value)
            mem.recompute = derived("full" if on else "none", "checkpoint_activations", ckpt)
            if on:
                mem.recompute_num_layers = self.get("checkpoint_num_layers")
        mem.partition_activations = self.get("partition_activations")
        mem.cpu_checkpointing = self.get("checkpoint_in_cpu")
        attention = self.file("attention_config")
        kinds = _attention_kinds(self.bare(attention))
        if attention is not None:
            mem.flash_attention = derived("flash" in kinds, "attention_config names flash", attention)
        else:
            mem.flash_attention = default(False, f"GPT-NeoX default attention_config: global ({NEOX_ARGS_PY})")

    def cluster(self) -> None:
        c = self.spec.cluster
        c.world_size = self.file("global_num_gpus")
        c.gpus_per_node = self.file("num_gpus")
        nodes = self.file("num_nodes")
        if nodes is not None and isinstance(nodes.value, int) and nodes.value > 0:
            c.nodes = nodes
        elif c.world_size is None and self.file("hostfile") is None and self.file("include") is None:
            # Without a hostfile NeoX trains on the machine it is launched on: global_num_gpus =
            # torch.cuda.device_count() (NeoXArgs.calculate_derived, megatron/neox_arguments/arguments.py)
            c.nodes = default(1, "one node: without a hostfile GPT-NeoX trains on the GPUs of the machine it is "
                                 "launched on (global_num_gpus = torch.cuda.device_count(), neox_arguments/arguments.py)")
        self.spec.run.train_iters = self.file("train_iters")

    def settings(self) -> None:
        props = _schema()["properties"]
        for key, entry in self.m.items():
            self.spec.settings[key] = from_file(entry.value, entry.path, entry.value_span or entry.key_span, entry.written)
            if isinstance(entry.value, dict) and props.get(key, {}).get("x-neox-class") == "NeoXArgsDeepspeedConfig":
                for dotted, ptr, value in _leaves(entry.value, key, entry.raw_pointer):
                    span = entry.tree.value_spans.get(ptr) or entry.key_span
                    written = entry.written + dotted[len(key):]
                    self.spec.settings[dotted] = from_file(value, entry.path, span, written)


def _fine_tuning(settings: dict[str, Value]) -> Value | None:
    """Why the run starts from trained weights: ``finetune: true`` (NeoX loads the weights of
    ``load`` and starts the iteration count and optimizer anew), or ``load`` with ``no_load_optim``.
    A bare ``load`` is how pre-training resumes: not a sign."""
    def on(key: str) -> Value | None:
        entry = settings.get(key)
        return entry if entry is not None and entry.value not in (None, False, "", 0, "false", "False") else None

    for key in ("finetune", "pretrained_checkpoint", "sft"):
        entry = on(key)
        if entry is not None:
            return Value("finetune: true", entry.provenance)
    load, no_optim = on("load"), on("no_load_optim")
    if load is not None and no_optim is not None:
        return derived("--load with --no-load-optim", "weights without the optimizer: a new run", load, no_optim)
    return None


def _leaves(node: dict, dotted: str, ptr: str) -> Iterator[tuple[str, str, Any]]:
    stack = [(node, dotted, ptr)]
    while stack:
        current, name, p = stack.pop()
        for k, v in current.items():
            child = (f"{name}.{k}", f"{p}/{_escape(str(k))}")
            if isinstance(v, dict) and v:
                stack.append((v, *child))
            else:
                yield child[0], child[1], v


def _attention_kinds(config: Any) -> set[str]:
    """attention_config is [[["flash", "global"], 12], ...] or [[["flash"], "all"]]: the type names used."""
    kinds: set[str] = set()
    if not isinstance(config, list):
        return kinds
    for item in config:
        if isinstance(item, list) and item:
            names = item[0]
            if isinstance(names, list):
                kinds.update(str(n).lower() for n in names)
            elif isinstance(names, str):
                kinds.add(names.lower())
    return kinds


def set_engine(spec: TrainingSpec) -> None:
    """GPT-NeoX trains with DeepSpeed's engine (its PipelineEngine when pipe_parallel_size >= 1):
    DeepSpeed's optimizer rules, NeoX's own model code for attention and MoE, NeoX's batch rules."""
    from trainlint.adapters.deepspeed.adapter import deepspeed_engine

    spec.engine = EngineSpec()
    pipe = spec.parallel.pipeline_engine
    deepspeed_engine(spec, pipeline=bool(pipe is not None and pipe.value))
    e = spec.engine
    flash = spec.memory.flash_attention
    if flash is not None:
        e.attention = Value("flash" if flash.value else "unfused", flash.provenance)
    interval = spec.settings.get("moe_expert_interval")
    if interval is not None and type(interval.value) is int and interval.value >= 1:
        e.moe_layer_interval = interval
    else:
        e.moe_layer_interval = default(1, _default_note("moe_expert_interval"))
    e.batch_owner = default("neox", f"GPT-NeoX: gradient_accumulation_steps defaults to 1 and the triple is "
                                    f"asserted (calculate_batch_parameters / check_batch_parameters, {ARGUMENTS_PY})")
