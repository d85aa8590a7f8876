"""Hover text: what a config key means and what it contributes to the estimate.

The hovered spec field is found through the provenance spans of the spec's values (a value's
own span, and the key written before it, which the documents pair by JSON pointer); raw
settings, values trainlint cannot resolve and plain document keys come after spec fields. The
numbers come from the estimator: the micro batch shows activation memory per GPU and tokens per
step, TP / PP / ZeRO the params, grads and optimizer state per GPU and their communication time,
the model dimensions the parameter count, and so on (:data:`CONTRIBUTIONS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from trainlint.core.framework import framework_of
from trainlint.lsp.convert import same_file, span_contains
from trainlint.core.positions import Span
from trainlint.core.provenance import Origin, Value

GIB = float(1 << 30)

FIELD_DOCS: dict[str, str] = {
    "model.architecture": "Model family (GPT, BERT, T5, Mamba...), from the training script or the config.",
    "model.num_layers": "Number of transformer layers.",
    "model.hidden_size": "Hidden size (model width): the size of every token's activation vector.",
    "model.num_attention_heads": "Number of attention (query) heads.",
    "model.num_kv_heads": "Key/value heads (query groups): fewer than the attention heads means GQA / MQA.",
    "model.kv_channels": "Head dimension (channels per attention head).",
    "model.ffn_hidden_size": "Hidden size of the MLP (feed-forward) block.",
    "model.gated_mlp": "Gated MLP (SwiGLU / GeGLU): three FFN matrices instead of two.",
    "model.vocab_size": "Vocabulary size: rows of the embedding and of the output layer.",
    "model.seq_length": "Sequence length: tokens per sample.",
    "model.max_position_embeddings": "Largest sequence the position embeddings cover; must be at least the sequence length.",
    "model.tied_embeddings": "Whether the output layer shares the input embedding's weights.",
    "model.num_experts": "Number of MoE experts per MoE layer (1 or none: dense).",
    "model.moe_top_k": "Experts each token is routed to.",
    "model.moe_ffn_hidden_size": "FFN hidden size of one expert.",
    "model.param_count": "Parameter count as the config states it.",
    "parallel.tensor": "Tensor-parallel size (TP): every layer's matrices are split over this many GPUs.",
    "parallel.pipeline": "Pipeline-parallel size (PP): the layers are split into this many stages.",
    "parallel.virtual_pipeline": "Virtual pipeline stages (model chunks per pipeline rank, interleaved schedule).",
    "parallel.context": "Context-parallel size (CP): the sequence is split over this many GPUs.",
    "parallel.expert": "Expert-parallel size (EP): the experts are spread over this many GPUs.",
    "parallel.expert_tensor": "Tensor-parallel size inside each expert.",
    "parallel.data": "Data-parallel size: world size / (TP x PP x CP), the number of model replicas.",
    "parallel.sequence_parallel": "Sequence parallelism: splits the norm and dropout activations over the TP group.",
    "parallel.zero_stage": "ZeRO stage: 1 shards the optimizer state over the data-parallel group, 2 also the "
                           "gradients, 3 also the parameters.",
    "parallel.distributed_optimizer": "Megatron's distributed optimizer: shards the optimizer state (and fp32 main "
                                      "params) over the data-parallel group, like ZeRO-1.",
    "parallel.offload_optimizer": "Where the optimizer state lives: GPU (none), CPU or NVMe.",
    "parallel.offload_params": "Where the parameters live between uses (ZeRO-3): GPU (none), CPU or NVMe.",
    "parallel.pipeline_engine": "Whether DeepSpeed's PipelineEngine runs the model.",
    "batch.micro_batch": "Micro-batch size: samples each GPU runs through one forward and backward pass.",
    "batch.grad_accum": "Gradient accumulation: micro-batches per GPU per optimizer step.",
    "batch.global_batch": "Global batch: samples per optimizer step over all data-parallel replicas "
                          "(micro batch x accumulation x DP).",
    "precision.dtype": "Compute precision of the model (fp32, fp16, bf16).",
    "precision.fp16_enabled": "fp16 mixed precision.",
    "precision.bf16_enabled": "bf16 mixed precision.",
    "precision.fp8": "FP8 matmuls (Transformer Engine recipe).",
    "precision.grad_accum_dtype": "Precision gradients are accumulated in.",
    "precision.optimizer": "The optimizer: decides the bytes of optimizer state per parameter.",
    "memory.recompute": "Activation recomputation: none, selective (attention core) or full (whole layers).",
    "memory.recompute_method": "Full recomputation method: uniform (groups of layers) or block (the first N layers).",
    "memory.recompute_num_layers": "Layers per recomputation group (uniform) or recomputed layers (block).",
    "memory.flash_attention": "Fused (flash) attention: no s x s score matrix is kept.",
    "memory.partition_activations": "Checkpointed activations split over the tensor-parallel group.",
    "memory.cpu_checkpointing": "Checkpointed activations moved to CPU memory.",
    "cluster.gpu": "The GPU model the run targets.",
    "cluster.gpus_per_node": "GPUs per node.",
    "cluster.nodes": "Number of nodes.",
    "cluster.world_size": "Total number of GPUs.",
    "run.train_iters": "Optimizer steps to train for.",
    "run.train_samples": "Samples to train on.",
}

_DIMS = ("model.num_layers", "model.hidden_size", "model.num_attention_heads", "model.num_kv_heads",
         "model.kv_channels", "model.ffn_hidden_size", "model.gated_mlp", "model.vocab_size", "model.tied_embeddings",
         "model.num_experts", "model.moe_top_k", "model.moe_ffn_hidden_size", "model.param_count")

CONTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "batch.micro_batch": ("activations", "tokens"),
    "batch.grad_accum": ("tokens", "pipeline"),
    "batch.global_batch": ("tokens", "pipeline"),
    "parallel.tensor": ("states", "tp"),
    "parallel.pipeline": ("states", "pipeline"),
    "parallel.virtual_pipeline": ("pipeline", "activations"),
    "parallel.context": ("activations", "tp"),
    "parallel.expert": ("states", "tp"),
    "parallel.expert_tensor": ("states", "tp"),
    "parallel.data": ("dp", "tokens"),
    "parallel.sequence_parallel": ("activations", "tp"),
    "parallel.zero_stage": ("states", "dp"),
    "parallel.distributed_optimizer": ("states", "dp"),
    "parallel.offload_optimizer": ("states", "dp"),
    "parallel.offload_params": ("states", "dp"),
    "parallel.pipeline_engine": ("pipeline",),
    "model.seq_length": ("activations", "tokens"),
    **dict.fromkeys(_DIMS, ("params", "states")),
    "precision.dtype": ("states", "activations"),
    "precision.fp16_enabled": ("states", "activations"),
    "precision.bf16_enabled": ("states", "activations"),
    "precision.fp8": ("compute",),
    "precision.grad_accum_dtype": ("states",),
    "precision.optimizer": ("states", "dp"),
    "memory.recompute": ("activations", "recompute"),
    "memory.recompute_method": ("activations", "recompute"),
    "memory.recompute_num_layers": ("activations", "recompute"),
    "memory.flash_attention": ("activations", "compute"),
    "memory.partition_activations": ("activations",),
    "memory.cpu_checkpointing": ("activations",),
    "cluster.gpu": ("capacity",),
    "cluster.gpus_per_node": ("dp",),
    "cluster.nodes": ("dp", "tokens"),
    "cluster.world_size": ("dp", "tokens"),
    "run.train_iters": ("run",),
    "run.train_samples": ("run",),
}
"""Spec field -> the parts of the estimate its hover shows (every estimate hover ends with the
total memory, step time, throughput and MFU)."""

HOVER_FIELDS = CONTRIBUTIONS
"""Kept for callers of the first version of this module: the fields whose hover shows numbers."""

_ORDER = {name: i for i, name in enumerate(FIELD_DOCS)}


@dataclass
class Target:
    """What the cursor is on."""

    spec: Any                  # TrainingSpec | None
    field: str                 # "batch.micro_batch", "settings:NAME", "unresolved:NAME", or "" (a key only)
    value: Value | None
    region: Span
    document: Any = None       # Document holding the key, when known
    pointer: str | None = None


# ----------------------------------------------------------------------------------- finding


def _size(span: Span) -> tuple[int, int]:
    return span.end_line - span.line, span.end_column - span.column


def _partners(documents: list, path: str) -> dict[Span, list[tuple[Any, str, Span]]]:
    """Span -> [(document, pointer, other span)]: the key span for a value span and back."""
    out: dict[Span, list[tuple[Any, str, Span]]] = {}
    for doc in documents:
        if not same_file(doc.path, path):
            continue
        for ptr, value_span in doc.value_spans.items():
            key_span = doc.key_spans.get(ptr)
            out.setdefault(value_span, []).append((doc, ptr, key_span or value_span))
            if key_span is not None:
                out.setdefault(key_span, []).append((doc, ptr, value_span))
    return out


def targets_at(result, path: str, line: int, column: int) -> list[Target]:
    """Every candidate under the 1-based point, best first: the smallest region, then spec fields
    (in FIELD_DOCS order) before raw settings, unresolved values and bare document keys."""
    if result is None:
        return []
    documents = list(getattr(result, "documents", []) or [])
    partners = _partners(documents, path)
    found: list[tuple[tuple, Target]] = []

    def consider(spec, name: str, value: Value | None, span: Span | None, span_path: str | None, rank: int) -> None:
        if span is None or (span_path is not None and not same_file(span_path, path)):
            return
        regions = [(span, None, None)] + [(other, doc, ptr) for doc, ptr, other in partners.get(span, [])]
        for region, doc, ptr in regions:
            if span_contains(region, line, column):
                if doc is None and partners.get(span):
                    doc, ptr = partners[span][0][0], partners[span][0][1]
                found.append(((_size(region), rank), Target(spec, name, value, region, doc, ptr)))
                return

    for spec in getattr(result, "specs", []) or []:
        for name, value in spec.items():
            if value.provenance.origin is Origin.FILE:
                consider(spec, name, value, value.provenance.span, value.provenance.path, _ORDER.get(name, 90))
        for name, value in spec.settings.items():
            if value.provenance.origin is Origin.FILE:
                consider(spec, f"settings:{name}", value, value.provenance.span, value.provenance.path, 100)
        for name, prov in spec.unresolved.items():
            consider(spec, f"unresolved:{name}", None, prov.span, prov.path, 101)
    for doc in documents:
        if not same_file(doc.path, path):
            continue
        for ptr, key_span in doc.key_spans.items():
            if span_contains(key_span, line, column):
                found.append(((_size(key_span), 200), Target(None, "", None, key_span, doc, ptr)))
    found.sort(key=lambda item: item[0])
    return [target for _, target in found]


def target_at(result, path: str, line: int, column: int) -> Target | None:
    targets = targets_at(result, path, line, column)
    return targets[0] if targets else None


def field_at(result, path: str, line: int, column: int):
    """(spec, field name) of the spec value (or raw setting) under the 1-based point, or None."""
    target = target_at(result, path, line, column)
    if target is None or target.spec is None:
        return None
    return target.spec, target.field


# ----------------------------------------------------------------------------------- rendering


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def _seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def _count(n: float) -> str:
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f}{unit}"
    return f"{n:.0f}"


def _code(value: Any, fmt: str | None = None) -> str:
    if fmt and framework_of(fmt).values_as_json() and (value is None or isinstance(value, (bool, list, dict))):
        import json

        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return "`" + text.replace("`", "'") + "`"


def schema_entry(fmt: str | None, key: str | None, spec: Any = None) -> dict | None:
    """The schema property for a key (dotted or a JSON pointer) of a format, if the schema has it: the
    framework's one key catalog for the release ``spec`` is checked against (its ``target``)."""
    if not fmt or not key:
        return None
    try:
        return framework_of(fmt).key_catalog(getattr(spec, "target", None)).entry(key)
    except Exception:  # noqa: BLE001 - no schema, no description
        return None


def _schema_lines(entry: dict | None, key: str | None = None) -> list[str]:
    if not entry:
        return []
    lines = []
    if entry.get("description"):
        lines.append(str(entry["description"]))
    if entry.get("x-deprecated"):
        lines.append(f"**Deprecated:** {entry['x-deprecated']}")
    if "default" in entry and entry["default"] is not None:
        lines.append(f"Default{f' of {key}' if key else ''}: {_code(entry['default'])}.")
    return lines


def _where(value: Value | None, target: Target) -> str | None:
    """Where the value comes from, when that is not simply next to its key."""
    if value is None:
        return None
    prov = value.provenance
    key_span = target.document.key_spans.get(target.pointer) if target.document is not None else None
    if prov.apart and key_span is not None and prov.span is not None \
            and key_span.line == prov.span.line and not prov.uncertain:
        return None
    if prov.note:
        return prov.note[0].upper() + prov.note[1:] + "."
    return None


def _format_of(target: Target) -> str | None:
    if target.document is not None:
        return getattr(target.document, "format", None)
    return getattr(target.spec, "framework", None)


def render(spec, field_name: str, estimate_fn: Callable | None, *, partial: bool = False) -> str | None:
    """Markdown for a spec field or raw setting of ``spec``, with its part of ``estimate_fn(spec)``."""
    if field_name.startswith("settings:"):
        value = spec.settings.get(field_name[len("settings:"):])
    elif field_name.startswith("unresolved:"):
        value = None
    else:
        value = spec.get(field_name)
    return render_target(Target(spec, field_name, value, Span(1, 1, 1, 1)), estimate_fn, partial=partial)


def render_target(target: Target, estimate_fn: Callable | None, *, partial: bool = False) -> str | None:
    spec, name, value = target.spec, target.field, target.value
    if name.startswith("unresolved:"):
        setting = name[len("unresolved:"):]
        prov = spec.unresolved.get(setting)
        key = prov.key if prov and prov.key else setting
        return "\n\n".join([f"**{key}**", f"Not known before launch: {prov.note if prov else 'unresolved'}; "
                             "trainlint does not guess it.", *_schema_lines(schema_entry(_format_of(target), setting, target.spec))])
    if not name:  # a key no spec value comes from
        entry = schema_entry(_format_of(target), target.pointer, target.spec)
        label = (target.pointer or "").rsplit("/", 1)[-1] or "(root)"
        body = _schema_lines(entry)
        if not body:
            return None
        return "\n\n".join([f"**{label}**", *body])
    key = value.provenance.key if value is not None and value.provenance.key else name
    shown = f" = {_code(value.value, _format_of(target))}" if value is not None else ""
    field = None if name.startswith("settings:") else name
    blocks = [f"**{key}**{shown}" + (f" — {field}" if field else "")]
    schema_key = name[len("settings:"):] if not field else target.pointer
    entry = schema_entry(_format_of(target), schema_key, target.spec)
    if field and field in FIELD_DOCS:
        blocks.append(FIELD_DOCS[field])
        entry = {k: v for k, v in (entry or {}).items() if k != "description"}
    blocks += _schema_lines(entry, f"`{key}`" if field else None)
    where = _where(value, target)
    if where:
        blocks.append(f"_{where}_")
    if field in CONTRIBUTIONS and estimate_fn is not None:
        estimate = _estimate_lines(spec, field, estimate_fn, partial)
        if estimate:
            blocks.append("\n".join(estimate))
    return "\n\n".join(blocks)


def _estimate_lines(spec, field: str, estimate_fn: Callable, partial: bool) -> list[str]:
    if partial:
        return ["_Not estimated: the file does not parse as a whole._"]
    try:
        est = estimate_fn(spec)
    except Exception as exc:  # noqa: BLE001 - a named GPU or model that does not exist, an estimator bug
        return [f"_Not estimated: {type(exc).__name__}: {exc}_"]
    if est is None:
        return []
    if not getattr(est, "ok", False):
        missing = getattr(est, "missing", [])
        out = ["**Estimate:** not made; missing:"]
        out += [f"- {m.what}: {m.how}" for m in missing] or ["- (unknown)"]
        return out
    try:
        body = [line for part in CONTRIBUTIONS[field] for line in _PARTS[part](est, spec)]
    except Exception as exc:  # noqa: BLE001 - show the rest rather than nothing
        body = [f"- (could not break this down: {type(exc).__name__})"]
    i = est.inputs
    header = (f"**In the estimate** ({i.world} x {i.gpu.id}, TP {i.tp} PP {i.pp} DP {i.dp}"
              + (f" CP {i.cp}" if i.cp > 1 else "") + (f" EP {i.ep}" if i.moe else "") + "):")
    return [header, *body, *_summary(est)]


def _worst(est) -> tuple[Any, str]:
    stage = est.worst_stage
    where = f"stage {stage.stage} of {len(est.stages)}" if len(est.stages) > 1 else "the only stage"
    return stage, where


def _activations(est, spec) -> list[str]:
    stage, where = _worst(est)
    flight = stage.in_flight
    return [f"- activation memory per GPU: **{_gib(stage.activations)}** (worst stage: {where}; "
            f"{flight:g} micro-batch{'es' if flight != 1 else ''} in flight, recompute {est.inputs.recompute})"]


def _tokens(est, spec) -> list[str]:
    i = est.inputs
    return [f"- tokens per step: **{est.tokens_per_step:,.0f}** = global batch {i.global_batch} x sequence {i.seq} "
            f"(micro batch {i.micro} x {i.grad_accum} accumulation steps x DP {i.dp})"]


def _states(est, spec) -> list[str]:
    stage, where = _worst(est)
    return [f"- per GPU ({where}): params **{_gib(stage.params)}**, grads **{_gib(stage.grads)}**, "
            f"optimizer state **{_gib(stage.optimizer)}** ({_count(stage.local_params)} parameters held"
            + (f", ZeRO {est.inputs.zero}" if est.inputs.zero else "")
            + (", distributed optimizer" if est.inputs.dist_opt else "") + ")"]


def _share(part: float, est) -> str:
    return f"{part / est.step_time * 100:.1f}% of the step" if est.step_time else ""


def _tp(est, spec) -> list[str]:
    t = est.time
    return [f"- tensor/context/expert-parallel communication: **{_seconds(t.tp_comm)}** per step exposed "
            f"({_share(t.tp_comm, est)})"]


def _pipeline(est, spec) -> list[str]:
    i, t = est.inputs, est.time
    if i.pp <= 1:
        return ["- pipeline: 1 stage, no bubble"]
    layers = ", ".join(str(s.layers) for s in est.stages)
    return [f"- pipeline: {i.pp} stages ({layers} layers){f', {i.vpp} virtual' if i.vpp > 1 else ''}; bubble "
            f"**{_seconds(t.pp_bubble)}** ({_share(t.pp_bubble, est)}), point-to-point {_seconds(t.pp_comm)}"]


def _dp(est, spec) -> list[str]:
    from trainlint.estimator.performance import data_parallel_traffic

    i, t = est.inputs, est.time
    if i.dp <= 1 and i.cp <= 1:
        return [f"- data parallel: 1 replica, no gradient exchange; optimizer step {_seconds(t.optimizer)}"]
    traffic = data_parallel_traffic(i)
    transfer = traffic.bytes_per_gpu / traffic.link_bytes_per_s if traffic.link_bytes_per_s else 0.0
    return [f"- data-parallel / ZeRO communication: {traffic.bytes_per_gpu / 1e9:.2f} GB per GPU per step over "
            f"{traffic.link_bytes_per_s / 1e9:.0f} GB/s links ({_seconds(transfer)} of transfer), "
            f"**{_seconds(t.dp_comm)}** of it exposed (not hidden behind compute); "
            f"optimizer step {_seconds(t.optimizer)}"]


def _params(est, spec) -> list[str]:
    stage, _ = _worst(est)
    return [f"- parameters: **{_count(est.num_params)}** in the model; {_count(stage.local_params)} on the GPU "
            f"holding the most"]


def _recompute(est, spec) -> list[str]:
    return [f"- recompute {est.inputs.recompute}: hardware FLOPs utilisation {est.hfu * 100:.1f}% vs MFU "
            f"{est.mfu * 100:.1f}% (the difference is recomputation); compute {_seconds(est.time.compute)} per step"]


def _compute(est, spec) -> list[str]:
    return [f"- compute {_seconds(est.time.compute)} per step ({_share(est.time.compute, est)}), "
            f"{est.bound}-bound"]


def _capacity(est, spec) -> list[str]:
    gpu = est.inputs.gpu
    return [f"- {gpu.name}: {_gib(est.capacity_bytes)} per GPU, {est.peak_flops_per_gpu / 1e12:.0f} TFLOP/s peak "
            f"({est.inputs.dtype})"]


def _run(est, spec) -> list[str]:
    iters = spec.value("run.train_iters")
    samples = spec.value("run.train_samples")
    i = est.inputs
    if not isinstance(iters, int) and isinstance(samples, (int, float)) and i.global_batch:
        iters = int(samples // i.global_batch)
    if not isinstance(iters, int) or iters <= 0:
        return []
    seconds = iters * est.step_time
    return [f"- {iters:,} steps x {_seconds(est.step_time)} = **{seconds / 86400:.1f} days** on {i.world} GPUs "
            f"({iters * est.tokens_per_step / 1e9:,.1f}B tokens, {seconds * i.world / 3600:,.0f} GPU-hours)"]


def _summary(est) -> list[str]:
    stage, where = _worst(est)
    verdict = "fits" if est.fits else "**does not fit**"
    return [f"- total per GPU: **{_gib(stage.total)}** of {_gib(est.capacity_bytes)} ({where}), {verdict}; "
            f"step {_seconds(est.step_time)}, {est.tokens_per_s:,.0f} tokens/s, MFU {est.mfu * 100:.1f}%"]


_PARTS: dict[str, Callable[[Any, Any], list[str]]] = {
    "activations": _activations, "tokens": _tokens, "states": _states, "tp": _tp, "pipeline": _pipeline,
    "dp": _dp, "params": _params, "recompute": _recompute, "compute": _compute, "capacity": _capacity, "run": _run,
}
