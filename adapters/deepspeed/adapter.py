"""DeepSpeed config JSON (``ds_config.json``).

DeepSpeed reads its config with hjson and refuses duplicate keys (deepspeed/runtime/config.py);
:mod:`trainlint.adapters.text.json_tree` reads it the same way with positions. This adapter reports
what the reader found (TL002/TL003/TL007/TL010), the Hugging Face ``"auto"`` values (TL007),
deprecated keys (TL008), the schema check (TL004/5/6), and builds one TrainingSpec.

Other adapters read a referenced DeepSpeed JSON (Megatron's ``--deepspeed_config``) with
:func:`load_deepspeed_config`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Iterator

from trainlint.adapters.base import BY_CONTENT, BY_NAME, CERTAIN, NOT_MINE, Adapter, LoadContext, LoadResult
from trainlint.adapters.text.json_tree import parse
from trainlint.core.diagnostics import Applicability, Diagnostic, Related, Severity, code
from trainlint.core.document import Document, pointer_parts
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.positions import FILE_START
from trainlint.core.provenance import Origin, Provenance, Value, default, derived, from_file
from trainlint.files.schema_check import check_document
from trainlint.files.sources import SourceText
from trainlint.core.spec import EngineSpec, TrainingSpec
from trainlint.core.values import integral

if TYPE_CHECKING:
    from trainlint.frameworks.locate import FrameworkSettings

FORMAT = "deepspeed"
AUTO_REASON = "\"auto\": set at launch by the Hugging Face Trainer / Accelerate from TrainingArguments"

# Where "auto" is one of DeepSpeed's own values, not a Hugging Face placeholder.
NATIVE_AUTO = {
    "/pipeline/stages",
    "/zero_optimization/zenflow/select_strategy",
    "/zero_optimization/zenflow/select_interval",
    "/zero_optimization/zenflow/update_interval",
    "/expert_parallel/score_apply",
    "/expert_parallel/combine_impl",
    "/expert_parallel/score_func",
    "/expert_parallel/top_k",
    "/expert_parallel/routed_scaling_factor",
}

# Deprecated keys that DeepSpeed maps onto a replacement; giving both is an error
# ("Cannot provide deprecated parameter ... and replacing parameter ... together",
# deepspeed/runtime/config_utils.py).
REPLACED_BY = {
    "/zero_optimization/cpu_offload": ("/zero_optimization/offload_optimizer",),
    "/zero_optimization/cpu_offload_param": ("/zero_optimization/offload_param",),
    "/zero_optimization/stage3_gather_fp16_weights_on_model_save": (
        "/zero_optimization/gather_16bit_weights_on_model_save",
        "/zero_optimization/stage3_gather_16bit_weights_on_model_save",
    ),
}

# Deprecated keys that are the same option under a new name (same value, same place): the fix
# renames the key. The others in REPLACED_BY change shape (a bool becomes an offload block).
RENAMED_TO = {
    "/zero_optimization/stage3_gather_fp16_weights_on_model_save": "gather_16bit_weights_on_model_save",
    "/bfloat16": "bf16",
}

# pydantic aliases of DeepSpeedZeroConfig (populate_by_name=True accepts both spellings).
ZERO_ALIASES = ("prefetch_bucket_size", "param_persistence_threshold", "model_persistence_threshold",
                "max_live_parameters", "max_reuse_distance", "gather_16bit_weights_on_model_save",
                "module_granularity_threshold", "use_all_reduce_for_fetch_params", "allgather_sequential")

ZERO_DEFAULT = "DeepSpeed default (deepspeed/runtime/zero/config.py)"
OFFLOAD_DEFAULT = "DeepSpeed default: no offload (deepspeed/runtime/zero/config.py)"
PRECISION_DEFAULT = "DeepSpeed default (deepspeed/runtime/precision_config.py)"
ACTCKPT_DEFAULT = "DeepSpeed default (deepspeed/runtime/activation_checkpointing/config.py)"

# ---------------------------------------------------------------------------------- sniffing

# Top-level keys only DeepSpeed configs use.
DS_STRONG = frozenset({
    "train_micro_batch_size_per_gpu", "train_batch_size", "zero_optimization", "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer", "wall_clock_breakdown", "steps_per_print", "activation_checkpointing",
    "flops_profiler", "comms_logger", "compression_training", "data_efficiency", "prescale_gradients",
    "gradient_predivide_factor", "sparse_gradients", "bfloat16", "elasticity", "autotuning",
    "progressive_layer_drop", "aio", "hybrid_engine", "memory_breakdown", "dump_state",
    "communication_data_type", "csv_monitor", "quantize_training", "managed_gradient_accumulation",
})
# Of those, the keys no other program's JSON has at the top level: one of them decides for DeepSpeed
# whatever else the file holds (a config with ten keys of the user's own is still DeepSpeed's).
DS_ONLY = frozenset({
    "train_micro_batch_size_per_gpu", "zero_optimization", "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer", "wall_clock_breakdown", "flops_profiler", "comms_logger", "compression_training",
    "data_efficiency", "prescale_gradients", "gradient_predivide_factor", "sparse_gradients",
    "progressive_layer_drop", "hybrid_engine", "memory_breakdown", "dump_state", "communication_data_type",
    "csv_monitor", "quantize_training", "managed_gradient_accumulation",
})
# Keys DeepSpeed uses that other JSONs use too.
DS_WEAK = frozenset({
    "fp16", "bf16", "optimizer", "scheduler", "gradient_accumulation_steps", "gradient_clipping", "amp",
    "tensorboard", "wandb", "comet", "pipeline", "checkpoint", "data_types", "sparse_attention",
    "curriculum_learning", "compile", "tensor_parallel", "expert_parallel", "torch_autocast", "timers",
})
# GPT-NeoX configs written as JSON carry DeepSpeed keys too; these say "NeoX" (either spelling).
NEOX_KEYS = frozenset({
    "num_layers", "hidden_size", "num_attention_heads", "seq_length", "max_position_embeddings",
    "pipe_parallel_size", "model_parallel_size", "attention_config", "pos_emb", "norm", "vocab_file",
    "merge_file", "data_path", "train_data_paths", "train_iters", "lr_decay_iters", "lr_decay_style",
    "tokenizer_type", "scaled_upper_triang_masked_softmax_fusion", "bias_gelu_fusion", "no_weight_tying",
    "gpt_j_residual", "output_layer_parallelism", "init_method", "output_layer_init_method",
    "make_vocab_size_divisible_by", "checkpoint_activations", "partition_activations",
    "synchronize_each_layer", "save", "load", "launcher", "deepspeed_mpi",
})
# Other well-known JSON files.
FOREIGN_KEYS = frozenset({
    "model_type", "architectures", "_name_or_path", "transformers_version",     # HF config.json
    "dependencies", "devDependencies", "scripts", "compilerOptions",              # package.json, tsconfig
    "$schema", "cells", "nbformat", "recipe", "per_device_train_batch_size",      # notebooks, HF args
    "version_info", "tokenizer_class",
})
_NAME = re.compile(r"(^ds_config.*|.*deepspeed.*|^ds_z(ero)?.*|.*_ds_config.*)\.json$", re.IGNORECASE)


@cache
def _quoted_key() -> re.Pattern[str]:
    """Every quoted key of a text the reader could not parse (or too large to): compiled on first use."""
    return re.compile(r'"([^"\\\n]{1,100})"\s*:')


_SNIFF_PARSE_LIMIT = 512 * 1024


_BLANKS_AND_COMMENTS = re.compile(r"(?:\s+|(?://|#)[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.S)
"""hjson comments and blanks before the object; one match from the start, never a copy of the rest
(slicing after each comment line was quadratic: 81 s on 8 MB of comment lines)."""


def _object_start(text: str) -> int:
    """Where the top-level ``{`` is after leading blanks and comments, or -1 when the text does
    not start with an object. An unclosed ``/*`` is not skipped (the text is then not an object)."""
    skipped = _BLANKS_AND_COMMENTS.match(text)  # always matches (possibly nothing)
    i = skipped.end() if skipped is not None else 0
    return i if text.startswith("{", i) else -1


_JSON_SKIP = re.compile(r"(?:[ \t\r\n\ufeff]+|(?:#|//)[^\n]*|/\*.*?\*/)*", re.S)
"""What the JSON reader skips between tokens (json_tree ``_Parser.skip``: its blanks and comments,
nothing more)."""
_PLAIN_KEY = re.compile(r'"([A-Za-z0-9_.-]{1,100})"[ \t]*:')


def _first_key_says_neox(text: str, start: int) -> bool:
    """Whether the object at ``start`` opens with a key in plain double quotes that is GPT-NeoX's
    (hyphenated, or one of NEOX_KEYS). Then :func:`sniff_score` is NOT_MINE whatever the parse
    gives: parsed, that key is a top-level key; not parsed, the keys are every quoted key of the
    text (``_QUOTED_KEY``), which finds this one too (no earlier match can reach into it: a match
    ends with a quote, blanks and a colon, and the key's first character is none of those). The
    NeoX configs written as JSON-like YAML (``{`` and ``#`` comments) are passed by without the
    position-tracking parse, which is the DeepSpeed sniff's largest cost over the public configs."""
    m = _PLAIN_KEY.match(text, _JSON_SKIP.match(text, start + 1).end())  # type: ignore[union-attr]  # always matches
    if m is None:
        return False
    key = m.group(1)
    return "-" in key or _normal(key) in NEOX_KEYS


def _normal(key: str) -> str:
    return key.strip().replace("-", "_")


# The sniff parses a small candidate whole, and loading the file would parse the same text again:
# the sniff's tree (which it only reads) is kept for that text object and handed over once.
_SNIFFED: dict[int, tuple[str, Any]] = {}


def _parse_sniffed(text: str) -> Any:
    tree = parse(text)
    _SNIFFED.clear()
    _SNIFFED[id(text)] = (text, tree)
    return tree


def _parse_once(text: str) -> Any:
    entry = _SNIFFED.pop(id(text), None)
    return entry[1] if entry is not None and entry[0] is text else parse(text)


def _top_level_keys(text: str) -> list[str] | None:
    """Top-level keys (parsing the file for real), or every quoted key when parsing fails.

    A large file is parsed only when a DeepSpeed key is written as a key somewhere in it (one
    search): a 12 MB vocabulary is passed by quickly, and a config padded past its first 64 KB
    (a long string, blank lines) is still read by its keys, wherever they are."""
    if len(text) > _SNIFF_PARSE_LIMIT and _any_deepspeed_key().search(text) is None:
        return _quoted_key().findall(text[:65536])
    tree = _parse_sniffed(text)
    if tree.ok:
        return list(tree.value) if isinstance(tree.value, dict) else None
    return _quoted_key().findall(text)


@cache
def _any_deepspeed_key() -> re.Pattern[str]:
    """A DeepSpeed key (either spelling) written as a JSON key; compiled for the first large file."""
    words = sorted(DS_STRONG | DS_WEAK, key=len, reverse=True)
    return re.compile('"(?:' + "|".join(re.escape(w).replace("_", "[_-]") for w in words) + r')"\s*:')


def sniff_score(path: str, text: str) -> int:
    start = _object_start(text)
    if start < 0:
        return NOT_MINE
    if len(text) <= _SNIFF_PARSE_LIMIT and _first_key_says_neox(text, start):
        return NOT_MINE  # what the parse below concludes, without it (a GPT-NeoX config: ~1 ms each)
    keys = _top_level_keys(text)
    if keys is None:
        return NOT_MINE
    normal = {_normal(k) for k in keys}
    if any("-" in k for k in keys) or normal & NEOX_KEYS:
        return NOT_MINE  # GPT-NeoX (hyphenated keys or model keys): the NeoX adapter's
    if normal & FOREIGN_KEYS:
        return NOT_MINE
    strong = normal & DS_STRONG
    weak = normal & DS_WEAK
    known = len(strong) + len(weak)
    unknown = len(normal) - known
    by_name = bool(_NAME.match(PurePath(path).name))
    if strong or ("gradient_accumulation_steps" in weak and len(weak) >= 2):
        if unknown > 4 and unknown > known and not strong & DS_ONLY:
            return BY_NAME if by_name else NOT_MINE  # mostly someone else's keys
        score = BY_CONTENT + 5 * min(known, 6) + (5 if by_name else 0)
        return min(score, CERTAIN - 5)
    if by_name and unknown <= known + 2:
        return BY_NAME + 5 * min(len(weak), 3)
    return NOT_MINE


# ---------------------------------------------------------------------------------- loading




def _judged(diags: list[Diagnostic], target) -> list[Diagnostic]:
    """Unknown keys judged against the DeepSpeed version the config targets.

    trainlint's table places every key in its section, but the catalog of a version (its config
    models and constants, read statically) only says which key names that version reads. So: a key
    a known target defines is a warning (it exists there; trainlint cannot check where); against an
    assumed upstream, a key some shipped release defines is a warning naming those releases (the
    config may be written for one of them); a key no version defines stays an error."""
    if not any(d.code == "TL004" and d.severity is Severity.ERROR for d in diags):
        return diags  # the usual case: nothing to judge, nothing more to import
    from dataclasses import replace

    from trainlint.frameworks.removed_keys import reads_it

    keys = _key_catalog(target)  # with the checked release's key names, when the target carries them

    out = []
    for d in diags:
        if d.code != "TL004" or d.severity is not Severity.ERROR or not d.subject:
            out.append(d)
            continue
        key = pointer_parts(d.subject)[-1]
        release = keys.release()
        legacy = keys.removed(d.subject)
        if legacy is not None and (target is None or not target.known or release is None):
            out.append(_removed_unknown_target(d, legacy, target))
            continue
        if legacy is not None and reads_it(legacy, getattr(target, "version", None)) is False:
            d = replace(d, message=f"{d.message}; DeepSpeed {legacy.removed} removed it (read by {legacy.first} "
                                   f"to {legacy.last}); on {legacy.removed} and later write {legacy.replacement}")
        if target is not None and target.known and release is not None:
            if keys.defines(key):
                d = replace(d, severity=Severity.WARNING,
                            message=f"{d.message}; {target.describe()} reads a key of that name (where is not "
                                    "checked against it)", applicability=None, edits=())
            else:
                d = replace(d, message=f"{d.message}; not a key of {target.describe()}")
        else:
            where = keys.defined_by(key)
            if where:
                commit = getattr(target, "commit", None)
                what = f"upstream DeepSpeed at {commit}" if commit else "upstream DeepSpeed"
                d = replace(d, severity=Severity.WARNING,
                            message=f"{d.message} ({where}); checked against {what}, assumed",
                            # renaming a key another release reads may break the run on that release
                            applicability=Applicability.UNSAFE if d.applicability is Applicability.SAFE else d.applicability)
        out.append(d)
    return out


def _removed_unknown_target(d: Diagnostic, legacy, target) -> Diagnostic:
    """A key that old DeepSpeed releases read and later ones refuse, checked with no known DeepSpeed
    version: the config may be written for a release that reads it, so a warning that says which
    releases do (TL008), without a rename edit (the key the suggestion names may not exist there)."""

    commit = getattr(target, "commit", None)
    what = f"upstream DeepSpeed at {commit}" if commit else "upstream DeepSpeed"
    return input_diagnostic(
        "TL008",
        f"`{_dotted(legacy.pointer)}` was removed in DeepSpeed {legacy.removed}: releases {legacy.first} to "
        f"{legacy.last} read it, {legacy.removed} and later refuse the config; checked against {what}, assumed",
        d.span, path=d.path, severity=Severity.WARNING,
        fix=f"on DeepSpeed {legacy.removed} or later write {legacy.replacement}", subject=d.subject)


def load_deepspeed_config(source: SourceText, frameworks: FrameworkSettings | None = None) -> LoadResult:
    """Read one DeepSpeed JSON: diagnostics, its Document and one TrainingSpec.

    Used by :class:`DeepSpeedAdapter` and by adapters that reference a DeepSpeed JSON
    (Megatron-DeepSpeed's ``--deepspeed_config``). Never raises on bad input."""
    path = source.path
    tree = _parse_once(source.text)
    diagnostics = tree.diagnostics(path)
    result = LoadResult(FORMAT, diagnostics=diagnostics)
    if not tree.ok:
        return result
    if not isinstance(tree.value, dict):
        kind = "an array" if isinstance(tree.value, list) else f"a {type(tree.value).__name__}"
        diagnostics.append(input_diagnostic(
            "TL005", f"a DeepSpeed config must be a JSON object, got {kind}",
            tree.value_spans.get("", FILE_START), path=path))
        return result

    doc = Document(path, FORMAT, source.text, tree.value, dict(tree.key_spans), dict(tree.value_spans),
                   dict(tree.unresolved))
    diagnostics.extend(_auto_values(doc))
    schema = _key_catalog().schema()
    assert schema is not None  # the DeepSpeed framework ships its schema
    diagnostics.extend(_deprecations(doc, schema))
    diagnostics.extend(_alias_conflicts(doc))
    from trainlint.frameworks.locate import read_note, resolve

    target = resolve("deepspeed", path, frameworks)
    note = read_note(target, FILE_START, path)
    if note is not None:
        diagnostics.append(note)
    # `"_comment": "..."`: the JSON comment convention; DeepSpeed ignores unknown top-level keys
    diagnostics.extend(_judged(check_document(doc, schema, comment_prefix="_"), target))
    result.documents.append(doc)
    spec = build_spec(doc, target)
    result.specs.append(spec)
    result.diagnostics = sorted(diagnostics, key=lambda d: (d.span, d.code, d.message))
    return result


def _walk(data: Any) -> Iterator[tuple[list[str], Any]]:
    """Every (path parts, value) of a tree, parents before children; iterative."""
    stack: list[tuple[list[str], Any]] = [([], data)]
    while stack:
        parts, node = stack.pop()
        yield parts, node
        if isinstance(node, dict):
            stack.extend((parts + [str(k)], v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((parts + [str(i)], v) for i, v in reversed(list(enumerate(node))))


def _walk_parents(data: Any) -> Iterator[tuple[list[str], Any, Any]]:
    """``_walk`` with each value's parent container (None for the root): what ``doc.get`` of the
    parent's pointer gives, without walking down from the root again for every value."""
    stack: list[tuple[list[str], Any, Any]] = [([], data, None)]
    while stack:
        parts, node, parent = stack.pop()
        yield parts, node, parent
        if isinstance(node, dict):
            stack.extend((parts + [str(k)], v, node) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((parts + [str(i)], v, node) for i, v in reversed(list(enumerate(node))))


def _ptr(parts: list[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _dotted(ptr: str) -> str:
    return ".".join(pointer_parts(ptr))


def _auto_values(doc: Document) -> list[Diagnostic]:
    out = []
    for parts, node in _walk(doc.data):
        if node != "auto" or not isinstance(node, str):
            continue
        ptr = _ptr(parts)
        if ptr in NATIVE_AUTO:
            continue
        doc.unresolved[ptr] = AUTO_REASON
        out.append(input_diagnostic(
            "TL007",
            f"`{_dotted(ptr)}` is \"auto\"{_AUTO_TAIL}",
            doc.locate(ptr), path=doc.path, subject=ptr))
    return out


def merge_auto_notes(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The TL007 notes of a file's Hugging Face ``"auto"`` values as one, at the first, listing the
    keys (issue 28: an info line per "auto", 15 in a ZeRO-3 template, said nothing the first did not).
    Made after the launch path has dropped the notes of the values the Trainer fills (their
    ``subject`` names each)."""
    autos = [d for d in diagnostics if d.code == "TL007" and d.message.endswith(_AUTO_TAIL)]
    if len(autos) < 2:
        return diagnostics
    from dataclasses import replace

    from trainlint.core.diagnostics import Related

    first = autos[0]
    keys = [d.message.split("`")[1] for d in autos]
    shown = ", ".join(code(k) for k in keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
    merged = replace(first, message=f"{len(keys)} values are \"auto\" ({shown}){_AUTO_TAIL}",
                     related=tuple(Related(f"{code(k)} here", d.span, d.path) for k, d in zip(keys[1:20], autos[1:20], strict=True)))
    out = []
    for d in diagnostics:
        if d is first:
            out.append(merged)
        elif d not in autos:
            out.append(d)
    return out


_AUTO_TAIL = ": set at launch by the Hugging Face Trainer / Accelerate from TrainingArguments; trainlint does not guess it"


def _schema_at(schema: dict, parts: list[str]) -> dict | None:
    node: Any = schema
    for part in parts:
        props = node.get("properties") if isinstance(node, dict) else None
        if not props or part not in props:
            return None
        node = props[part]
    return node if isinstance(node, dict) else None


def _deprecations(doc: Document, schema: dict) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    data = doc.data
    for parts, _node, parent in _walk_parents(data):
        if not parts or not isinstance(parent, dict):
            continue
        sub = _schema_at(schema, parts)
        if sub is None or "x-deprecated" not in sub:
            continue
        ptr = _ptr(parts)
        note = sub["x-deprecated"]
        severity = None
        related: tuple[Related, ...] = ()
        tail = ""
        for replacement in REPLACED_BY.get(ptr, ()):
            if doc.get(replacement) is not None or replacement in doc.key_spans:
                severity = Severity.ERROR
                tail = (f"; `{_dotted(replacement)}` is given too, and DeepSpeed refuses both together "
                        "(\"Cannot provide deprecated parameter ... and replacing parameter ... together\")")
                related = (Related(f"`{_dotted(replacement)}` here", doc.locate_key(replacement), doc.path),)
                break
        if ptr == "/bfloat16" and "bf16" in data:
            tail = "; `bf16` is given too, so DeepSpeed ignores `bfloat16`"
            related = (Related("`bf16` here", doc.locate_key("/bf16"), doc.path),)
        diag = input_diagnostic("TL008", f"`{_dotted(ptr)}` is {note}{tail}", doc.locate_key(ptr),
                                path=doc.path, severity=severity, related=related)
        if ptr in RENAMED_TO and not related:
            from dataclasses import replace

            from trainlint.core.diagnostics import Applicability
            from trainlint.files.key_edits import rename_key

            edits = rename_key(doc, ptr, RENAMED_TO[ptr])
            if edits:
                diag = replace(diag, fix=f"rename `{parts[-1]}` to `{RENAMED_TO[ptr]}`",
                               applicability=Applicability.SAFE, edits=edits)
        out.append(diag)
    zero = data.get("zero_optimization")
    if isinstance(zero, bool):
        out.append(input_diagnostic(
            "TL008",
            f"`zero_optimization: {str(zero).lower()}` is the deprecated boolean form (true means stage 1); "
            "write `\"zero_optimization\": {\"stage\": N}`",
            doc.locate("/zero_optimization"), path=doc.path))
    return out


def _alias_conflicts(doc: Document) -> list[Diagnostic]:
    zero = doc.data.get("zero_optimization")
    if not isinstance(zero, dict):
        return []
    out = []
    for name in ZERO_ALIASES:
        alias = "stage3_" + name
        if name in zero and alias in zero:
            a, b = f"/zero_optimization/{name}", f"/zero_optimization/{alias}"
            first, second = sorted([a, b], key=lambda p: doc.locate_key(p))
            out.append(input_diagnostic(
                "TL011",
                f"`zero_optimization.{name}` and its alias `{alias}` are both given; DeepSpeed uses only one of them",
                doc.locate_key(second), path=doc.path,
                related=(Related("the other spelling", doc.locate_key(first), doc.path),)))
    return out


# ---------------------------------------------------------------------------------- spec


class _Reader:
    """Reads values from the document with provenance; unresolved values read as missing."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def has(self, ptr: str) -> bool:
        return ptr in self.doc.key_spans or (ptr == "" and self.doc.data is not None)

    def raw(self, ptr: str) -> Any:
        return self.doc.get(ptr)

    def known(self, ptr: str) -> bool:
        return self.has(ptr) and not any(ptr == u or ptr.startswith(u + "/") for u in self.doc.unresolved)

    def value(self, ptr: str, convert=None) -> Value | None:
        if not self.known(ptr):
            return None
        raw = self.doc.get(ptr)
        if convert is not None:
            raw = convert(raw)
            if raw is None:
                return None
        return from_file(raw, self.doc.path, self.doc.locate(ptr), _dotted(ptr))


def _as_bool(raw: Any) -> bool | None:
    return raw if isinstance(raw, bool) else None


def _as_str(raw: Any) -> str | None:
    return raw if isinstance(raw, str) else None


def _lower(raw: Any) -> str | None:
    return raw.lower() if isinstance(raw, str) else None


def build_spec(doc: Document, target: Any = None) -> TrainingSpec:
    spec = TrainingSpec(framework=FORMAT, path=doc.path, sources=[doc.path])
    spec.target = target  # the engine's choices depend on the DeepSpeed release (deepspeed_optimizer)
    r = _Reader(doc)
    _batch(spec, r)
    _parallel(spec, r)
    _precision(spec, r)
    _memory(spec, r)
    _model(spec, r)
    _settings(spec, doc)
    set_engine(spec)
    return spec


def _batch(spec: TrainingSpec, r: _Reader) -> None:
    tbs = r.value("/train_batch_size", integral)
    mbs = r.value("/train_micro_batch_size_per_gpu", integral)
    gas = r.value("/gradient_accumulation_steps", integral)
    spec.batch.global_batch, spec.batch.micro_batch, spec.batch.grad_accum = tbs, mbs, gas
    # DeepSpeed derives the missing member of the triple from the data-parallel size, which a
    # JSON does not give (DeepSpeedConfig._set_batch_related_parameters). Only two cases are
    # exact without it: a lone train_batch_size or a lone micro batch means GAS = 1.
    unresolved_gas = r.has("/gradient_accumulation_steps")
    if gas is None and not unresolved_gas and (tbs is None) != (mbs is None):
        given = "train_batch_size" if tbs is not None else "train_micro_batch_size_per_gpu"
        spec.batch.grad_accum = derived(
            1, f"DeepSpeed sets gradient_accumulation_steps = 1 when only {given} of the batch triple is given "
               "(deepspeed/runtime/config.py)", tbs or mbs)
    if tbs is not None and mbs is not None and gas is not None and mbs.value > 0 and gas.value > 0:
        per_replica = mbs.value * gas.value
        if tbs.value % per_replica == 0 and tbs.value >= per_replica:
            spec.parallel.data = derived(
                tbs.value // per_replica,
                "data-parallel size implied by train_batch_size / (train_micro_batch_size_per_gpu x "
                "gradient_accumulation_steps)", tbs, mbs, gas)


def _parallel(spec: TrainingSpec, r: _Reader) -> None:
    zero = r.raw("/zero_optimization")
    if isinstance(zero, dict):
        stage = r.value("/zero_optimization/stage", integral)
        if stage is None and not r.has("/zero_optimization/stage"):
            stage = default(0, ZERO_DEFAULT)
        spec.parallel.zero_stage = stage
    elif isinstance(zero, bool):
        spec.parallel.zero_stage = derived(
            1 if zero else 0, "deprecated boolean form of zero_optimization (true means stage 1)",
            r.value("/zero_optimization"))
    elif not r.has("/zero_optimization"):
        spec.parallel.zero_stage = default(0, ZERO_DEFAULT)
    spec.parallel.offload_optimizer = _offload(r, "offload_optimizer", "cpu_offload")
    spec.parallel.offload_params = _offload(r, "offload_param", "cpu_offload_param")

    stages = r.value("/pipeline/stages", integral)
    if stages is not None:
        spec.parallel.pipeline = stages
    autotp = r.value("/tensor_parallel/autotp_size", integral)
    if autotp is not None:
        spec.parallel.tensor = autotp if autotp.value > 0 else derived(
            1, "tensor_parallel.autotp_size 0 disables AutoTP training", autotp)
    if r.raw("/expert_parallel/enabled") is True:
        size = r.value("/expert_parallel/autoep_size", integral)
        spec.parallel.expert = size or default(1, "DeepSpeed default autoep_size (deepspeed/module_inject/auto_ep_config.py)")


def _offload(r: _Reader, section: str, legacy: str) -> Value | None:
    base = f"/zero_optimization/{section}"
    raw = r.raw(base)
    if isinstance(raw, dict):
        if not r.has(base + "/device"):
            return default("none", "DeepSpeed default device (deepspeed/runtime/zero/offload_config.py)")
        return r.value(base + "/device", _lower)
    if r.has(base) and raw is not None:
        return None  # "auto" or a wrong type: unknown
    old_ptr = f"/zero_optimization/{legacy}"
    old = r.value(old_ptr, _as_bool)
    if old is not None and old.value:
        return derived("cpu", f"legacy zero_optimization.{legacy}: true means device cpu", old)
    if r.has(old_ptr) and old is None:
        return None
    if not r.has("/zero_optimization") or isinstance(r.raw("/zero_optimization"), (dict, bool)):
        return default("none", OFFLOAD_DEFAULT)
    return None


def _enabled(r: _Reader, section: str) -> Value | None:
    """``<section>.enabled`` as written, DeepSpeed's default False when absent, None when unknown."""
    if not r.has(f"/{section}/enabled"):
        return default(False, PRECISION_DEFAULT)
    return r.value(f"/{section}/enabled", _as_bool)


def _precision(spec: TrainingSpec, r: _Reader) -> None:
    p = spec.precision
    p.fp16_enabled = _enabled(r, "fp16")
    bf16_section = "bf16" if r.has("/bf16") or not r.has("/bfloat16") else "bfloat16"
    p.bf16_enabled = _enabled(r, bf16_section)
    amp = r.value("/amp/enabled", _as_bool)
    fp16, bf16 = p.fp16_enabled, p.bf16_enabled
    if bf16 is not None and bf16.value:
        p.dtype = derived("bf16", f"{bf16_section}.enabled is true", bf16)
    elif fp16 is not None and fp16.value:
        p.dtype = derived("fp16", "fp16.enabled is true", fp16)
    elif amp is not None and amp.value:
        p.dtype = derived("fp16", "apex AMP (amp.enabled) trains in mixed fp16", amp)
    elif bf16 is not None and fp16 is not None:
        p.dtype = derived("fp32", "neither fp16 nor bf16 is enabled", fp16, bf16)
    p.grad_accum_dtype = r.value("/data_types/grad_accum_dtype", _lower)
    p.optimizer = r.value("/optimizer/type", _lower)


def _memory(spec: TrainingSpec, r: _Reader) -> None:
    for name in ("partition_activations", "cpu_checkpointing"):
        ptr = f"/activation_checkpointing/{name}"
        value = r.value(ptr, _as_bool) if r.has(ptr) else default(False, ACTCKPT_DEFAULT)
        setattr(spec.memory, name, value)


def _model(spec: TrainingSpec, r: _Reader) -> None:
    spec.model.vocab_size = r.value("/vocabulary_size", integral)
    # The autotuner's model_info is the only model description a DeepSpeed JSON carries.
    spec.model.param_count = r.value("/autotuning/model_info/num_params", integral)
    spec.model.hidden_size = r.value("/autotuning/model_info/hidden_size", integral)
    spec.model.num_layers = r.value("/autotuning/model_info/num_layers", integral)


def _settings(spec: TrainingSpec, doc: Document) -> None:
    """Every leaf by its dotted path (arrays and empty objects count as leaves)."""
    for parts, node, parent in _walk_parents(doc.data):
        if not parts:
            continue
        if isinstance(node, dict) and node:
            continue
        if isinstance(parent, list):
            continue  # inside an array: the array itself is the leaf
        ptr = _ptr(parts)
        spec.settings[".".join(parts)] = from_file(node, doc.path, doc.locate(ptr), ".".join(parts))


class DeepSpeedAdapter(Adapter):
    name = FORMAT
    extensions = (".json",)

    def sniff(self, path: str, text: str) -> int:
        return sniff_score(path, text)

    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        result = load_deepspeed_config(source, context.frameworks)
        result.diagnostics = merge_auto_notes(result.diagnostics)
        return result

    def spell_changes(self, spec: TrainingSpec, changes: dict[str, Any], base: Any) -> list[str]:
        from trainlint.adapters.deepspeed.writer import spell_changes

        return spell_changes(changes)

    def expressible(self, spec: TrainingSpec) -> frozenset[str]:
        # TP and PP only where the config already uses AutoTP / the pipeline engine
        # (and, for fix hints, the global batch and zero_optimization.overlap_comm)
        return frozenset({"micro", "zero", "global-batch", "overlap"}
                         | ({"tp"} if "tensor_parallel.autotp_size" in spec.settings else set())
                         | ({"pp"} if "pipeline.stages" in spec.settings else set()))

    def writer(self, texts, result, spec, changes, index):
        from trainlint.adapters.deepspeed.writer import DeepSpeedWriter

        return DeepSpeedWriter(texts, result, spec, changes)


# ------------------------------------------------------------------------------------ engine

DS_ENGINE_PY = "deepspeed/runtime/engine.py"
DS_BF16_PY = "deepspeed/runtime/bf16_optimizer.py"
DS_ZERO_CONFIG_PY = "deepspeed/runtime/zero/config.py"
_DTYPES = {"fp32": "fp32", "float32": "fp32", "float": "fp32", "fp16": "fp16", "float16": "fp16", "half": "fp16",
           "bf16": "bf16", "bfloat16": "bf16"}


NON_ZERO_BF16_DEFAULT_CHANGED = (0, 17, 6)
"""DeepSpeed PR #7515 ("Enable non-ZeRO mode", Aug 2025, first in v0.17.6): ``get_data_types`` no longer
defaults bf16 without ZeRO to fp32 gradient accumulation (engine.py at v0.17.5: ``if model_dtype ==
torch.bfloat16 and not self.zero_optimization(): grad_accum_dtype = torch.float32``; at v0.17.6:
``grad_accum_dtype = model_dtype``)."""


def _release(version: str | None) -> tuple[int, ...] | None:
    """``"0.17.6"`` / ``"v0.14.0"`` as a tuple; None when it names no release."""
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", str(version or "").strip())
    return tuple(int(x or 0) for x in m.groups()) if m else None


def deepspeed_optimizer(dtype: str, zero: int, grad_accum_dtype: str | None, pipeline: bool, *,
                        offload: bool = False, version: str | None = None) -> tuple[str, int, str, str]:
    """(optimizer owner, shard stage, gradient dtype, why) as DeepSpeed's engine picks its optimizer
    wrapper (engine.py ``get_data_types`` and ``_do_optimizer_sanity_check``):

    * ZeRO stage >= 1: the ZeRO optimizer; gradients in ``data_types.grad_accum_dtype``, else the
      model dtype. Except bf16 at ZeRO stage 1 with ``grad_accum_dtype: fp32`` and no CPU offload:
      ``BF16_Optimizer`` ("if model_dtype == torch.bfloat16 and grad_accum_dtype == torch.float32 and
      self.zero_optimization_stage() == 1 and not self.zero_cpu_offload(): return BFLOAT16", every
      release since PR #2742, v0.8.1, through v0.19).
    * ZeRO 0 in bf16: gradients accumulate in fp32 unless ``grad_accum_dtype`` says otherwise, up to
      DeepSpeed 0.17.5; from 0.17.6 (PR #7515) in bf16 (``version``: the DeepSpeed release the
      config is judged against; unknown, the older default, which every Megatron-DeepSpeed and
      GPT-NeoX pin uses). bf16 params with fp32 accumulation select ``BF16_Optimizer``, and so does
      bf16 accumulation on the pipeline engine. BF16_Optimizer keeps a full fp32 gradient buffer and shards the fp32
      master weights and the optimizer states over DP (bf16_optimizer.py: the fp32 partition of
      the flat bf16 group, ``fp32_groups_gradients_flat`` the size of the whole group).
    * ZeRO 0 in fp16: FP16_Optimizer (fp16 grads, fp32 master and states, nothing sharded).
    """
    acc = _DTYPES.get(str(grad_accum_dtype).lower()) if grad_accum_dtype is not None else None
    if zero == 1 and dtype == "bf16" and acc == "fp32" and not offload:
        return ("deepspeed-bf16", 1, "fp32",
                f"bf16 with ZeRO stage 1 and data_types.grad_accum_dtype fp32 selects BF16_Optimizer, not the ZeRO "
                f"optimizer ({DS_ENGINE_PY} _do_optimizer_sanity_check), which keeps a full fp32 gradient buffer and "
                f"shards the fp32 master weights and optimizer states over data parallel ({DS_BF16_PY})")
    if zero >= 1:
        grads = acc or (dtype if dtype in ("bf16", "fp16") else "fp32")
        what = {1: "optimizer states", 2: "optimizer states and gradients", 3: "optimizer states, gradients and parameters"}
        return ("deepspeed-zero", min(zero, 3), grads,
                f"ZeRO stage {zero} shards the {what[min(zero, 3)]} over data parallel; gradients in {grads} "
                f"({'data_types.grad_accum_dtype' if acc else 'the model dtype'}; {DS_ENGINE_PY} get_data_types)")
    if dtype == "bf16":
        release = _release(version)
        new_default = release is not None and release >= NON_ZERO_BF16_DEFAULT_CHANGED
        acc = acc or ("bf16" if new_default else "fp32")
        if acc == "fp32" or pipeline:
            return ("deepspeed-bf16", 1, acc,
                    f"bf16 with ZeRO 0 and {acc} gradient accumulation selects BF16_Optimizer ({DS_ENGINE_PY} "
                    f"get_data_types / _do_optimizer_sanity_check), which keeps a full {acc} gradient buffer and "
                    f"shards the fp32 master weights and optimizer states over data parallel ({DS_BF16_PY})")
        why = (f"DeepSpeed {version} accumulates bf16 gradients without ZeRO by default (PR #7515, from 0.17.6)"
               if new_default and grad_accum_dtype is None else "bf16 gradient accumulation")
        return ("deepspeed", 0, "bf16", f"{why} with ZeRO 0 outside the pipeline engine: "
                                        f"no sharding (DDP_BFLOAT16, {DS_ENGINE_PY})")
    if dtype == "fp16":
        return ("deepspeed", 0, acc or "fp16", f"fp16 with ZeRO 0: FP16_Optimizer, nothing sharded ({DS_ENGINE_PY})")
    return ("deepspeed", 0, acc or "fp32", f"fp32 with ZeRO 0: the optimizer itself, nothing sharded ({DS_ENGINE_PY})")


def _ds_setting(spec: TrainingSpec, prefix: str, key: str) -> Value | None:
    entry = spec.settings.get(prefix + key)
    if entry is None or entry.value is None or isinstance(entry.value, str):
        return None
    return entry


def _number_setting(spec: TrainingSpec, prefix: str, key: str, fallback: float) -> Value:
    entry = _ds_setting(spec, prefix, key)
    if entry is not None and isinstance(entry.value, (int, float)) and not isinstance(entry.value, bool) \
            and 0 <= entry.value < 1e15:
        return entry
    return default(fallback, f"DeepSpeed default {key} ({DS_ZERO_CONFIG_PY})")


def deepspeed_engine(spec: TrainingSpec, *, prefix: str = "", pipeline: bool = False) -> None:
    """Sets ``spec.engine``'s optimizer, gradient and data-parallel fields as DeepSpeed's engine runs
    the step. ``prefix`` is how the spec's settings name the DeepSpeed JSON's keys (``deepspeed:``
    when a Megatron-DeepSpeed script merged it); ``pipeline``: DeepSpeed's PipelineEngine runs it."""
    e = spec.engine
    dtype_v, zero_v = spec.precision.dtype, spec.parallel.zero_stage
    dtype = str(dtype_v.value) if dtype_v is not None and dtype_v.value in ("fp32", "fp16", "bf16") else None
    zero = zero_v.value if zero_v is not None and type(zero_v.value) is int and 0 <= zero_v.value <= 3 else None
    acc_v = _ds_setting_str(spec, prefix, "data_types.grad_accum_dtype")
    sources = (dtype_v, zero_v, acc_v)
    off_v = spec.parallel.offload_optimizer
    offload = off_v is not None and str(off_v.value).lower() in ("cpu", "nvme")
    target = getattr(spec, "target", None)
    version = target.version if target is not None and getattr(target, "family", None) == "deepspeed" else None
    if dtype is None or zero is None:
        unknown = [what for what, v in (("ZeRO stage", zero), ("precision", dtype)) if v is None]
        taken = [f"ZeRO {zero}" if zero is not None else "ZeRO 0 assumed",
                 f"{dtype}" if dtype is not None else "bf16 assumed"]
        assumed = Provenance(Origin.ASSUMED, note=f"{' and '.join(unknown)} not known statically: "
                                                  f"{', '.join(taken)} for the engine")
        dtype = dtype or "bf16"
        zero = 0 if zero is None else zero
        owner, stage, grads, why = deepspeed_optimizer(dtype, zero, acc_v.value if acc_v else None, pipeline,
                                                     offload=offload, version=version)
        e.optimizer_owner, e.shard_stage, e.grad_dtype = (Value(x, assumed) for x in (owner, stage, grads))
    else:
        owner, stage, grads, why = deepspeed_optimizer(dtype, zero, acc_v.value if acc_v else None, pipeline,
                                                     offload=offload, version=version)
        e.optimizer_owner = derived(owner, why, *sources)
        e.shard_stage = derived(stage, why, *sources)
        e.grad_dtype = derived(grads, why, *sources)
    uly = spec.settings.get("ds_sequence_parallel_size")
    if uly is not None and type(uly.value) is int and uly.value > 1:
        # with DeepSpeed-Ulysses ZeRO partitions over the sequence-data-parallel group (DP x SP):
        # engine.py "self.seq_data_parallel_group = groups._get_sequence_data_parallel_group()", the
        # dp_process_group of every ZeRO optimizer
        e.shard_group = derived("dp_cp", f"DeepSpeed-Ulysses: ZeRO shards over data x sequence parallel "
                                         f"(seq_data_parallel_group, {DS_ENGINE_PY})", uly)
    else:
        e.shard_group = default("dp", f"DeepSpeed shards over its data-parallel group ({DS_ENGINE_PY})")
    e.offload_optimizer = spec.parallel.offload_optimizer
    e.offload_params = spec.parallel.offload_params
    overlap = _ds_setting(spec, prefix, "zero_optimization.overlap_comm")
    if stage == 0 or owner == "deepspeed-bf16":
        e.dp_overlap = derived(False, "without ZeRO the engine all-reduces the gradients at the accumulation "
                                      f"boundary, after the backward pass (allreduce_gradients, {DS_ENGINE_PY})",
                               e.optimizer_owner)
    elif overlap is not None and isinstance(overlap.value, bool):
        e.dp_overlap = overlap
    else:
        e.dp_overlap = derived(stage >= 3, f"DeepSpeed default overlap_comm: true at stage 3 only ({DS_ZERO_CONFIG_PY})",
                               e.shard_stage)
    e.reduce_bucket = _number_setting(spec, prefix, "zero_optimization.reduce_bucket_size", 5e8)
    e.allgather_bucket = _number_setting(spec, prefix, "zero_optimization.allgather_bucket_size", 5e8)
    e.zero3_max_live = _number_setting(spec, prefix, "zero_optimization.stage3_max_live_parameters", 1e9)
    e.zero3_prefetch = _number_setting(spec, prefix, "zero_optimization.stage3_prefetch_bucket_size", 5e7)
    e.tp_overlap = default(False, "DeepSpeed's engine does not overlap tensor-parallel communication")


def _ds_setting_str(spec: TrainingSpec, prefix: str, key: str) -> Value | None:
    entry = spec.settings.get(prefix + key)
    if entry is None or not isinstance(entry.value, str) or entry.value.lower() not in _DTYPES:
        return None
    return entry


def set_engine(spec: TrainingSpec) -> None:
    """A DeepSpeed JSON on its own: DeepSpeed's engine, its batch settings; the model code (and so
    the attention kernel and MoE layout) is not in the file."""
    spec.engine = EngineSpec()
    pipeline = spec.parallel.pipeline is not None and isinstance(spec.parallel.pipeline.value, int) \
        and spec.parallel.pipeline.value > 1
    deepspeed_engine(spec, pipeline=pipeline)
    spec.engine.batch_owner = default("deepspeed", "DeepSpeed derives the missing member of the batch triple "
                                                   "(_set_batch_related_parameters, deepspeed/runtime/config.py)")


def _key_catalog(target=None):
    """The DeepSpeed framework's one key catalog (schema, shipped releases, removed keys; with
    ``target``, the names the checked release reads)."""
    from trainlint.core.framework import framework_of

    return framework_of("deepspeed").key_catalog(target)
