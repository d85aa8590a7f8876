"""Hover text: what a config value contributes to the estimate.

The hovered spec field is found through the provenance spans of the spec's values (and the
key spans of the documents that hold them); the text comes from the estimator.
"""

from __future__ import annotations

from typing import Callable

from trainlint.positions import Span
from trainlint.provenance import first_span

GIB = float(1 << 30)

# spec field -> which part of the estimate the hover shows
HOVER_FIELDS: dict[str, str] = {
    "batch.micro_batch": "micro_batch",
    "batch.grad_accum": "tokens",
    "batch.global_batch": "tokens",
    "parallel.tensor": "sharding",
    "parallel.pipeline": "sharding",
    "parallel.zero_stage": "sharding",
    "parallel.data": "sharding",
    "parallel.distributed_optimizer": "sharding",
    "model.seq_length": "seq_length",
    "model.num_layers": "params",
    "model.hidden_size": "params",
    "model.ffn_hidden_size": "params",
    "model.num_attention_heads": "params",
    "model.vocab_size": "params",
    "memory.recompute": "micro_batch",
}


def _contains(span: Span, line: int, column: int) -> bool:
    return (span.line, span.column) <= (line, column) <= (span.end_line, span.end_column)


def _key_span(documents: list, path: str, value_span: Span) -> Span | None:
    """The key written before a value: the document address whose value span is ``value_span``."""
    for doc in documents:
        if doc.path != path:
            continue
        for pointer, span in doc.value_spans.items():
            if span == value_span and pointer in doc.key_spans:
                return doc.key_spans[pointer]
    return None


def field_at(result, path: str, line: int, column: int):
    """(spec, field name) of the spec value under the 1-based point, or None."""
    for spec in result.specs:
        for field_name in HOVER_FIELDS:
            value = spec.get(field_name)
            value_path, span = first_span(value)
            if span is None or value.provenance.span is None:  # derived values have no place of their own
                continue
            if value_path is not None and value_path != path:
                continue
            key_span = _key_span(result.documents, path, span)
            if _contains(span, line, column) or (key_span is not None and _contains(key_span, line, column)):
                return spec, field_name
    return None


def _gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def _seconds(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def _params(n: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return f"{n:.0f}"


def render(spec, field_name: str, estimate_fn: Callable) -> str | None:
    """Markdown for the hovered field, from ``estimate_fn(spec)`` (Estimate | MissingInputs)."""
    value = spec.get(field_name)
    title = f"**{field_name}** = `{value.value}`" if value is not None else f"**{field_name}**"
    est = estimate_fn(spec)
    if not getattr(est, "ok", False):
        missing = getattr(est, "missing", [])
        lines = [title, "", "trainlint cannot estimate this run; missing:"]
        lines += [f"- {m.what} (`{m.field}`): {m.how}" for m in missing] or ["- (unknown)"]
        return "\n".join(lines)
    stage = est.worst_stage
    kind = HOVER_FIELDS[field_name]
    lines = [title, ""]
    if kind == "micro_batch":
        lines.append(f"activation memory per GPU (worst stage): {_gib(stage.activations)} "
                     f"of {_gib(stage.total)} total ({_gib(est.capacity_bytes)} capacity)")
        lines.append(f"tokens per step: {est.tokens_per_step:,.0f}")
    elif kind == "sharding":
        lines.append(f"per GPU (worst stage): params {_gib(stage.params)}, grads {_gib(stage.grads)}, "
                     f"optimizer {_gib(stage.optimizer)}, activations {_gib(stage.activations)}; "
                     f"total {_gib(stage.total)} of {_gib(est.capacity_bytes)}")
        lines.append(f"step time: {_seconds(est.step_time)} ({est.tokens_per_s:,.0f} tokens/s, MFU {est.mfu:.0%})")
    elif kind == "seq_length":
        lines.append(f"activation memory per GPU (worst stage): {_gib(stage.activations)} of {_gib(stage.total)} total")
        lines.append(f"tokens per step: {est.tokens_per_step:,.0f}")
    elif kind == "tokens":
        lines.append(f"tokens per step: {est.tokens_per_step:,.0f}; step time {_seconds(est.step_time)}")
    else:
        lines.append(f"parameters: {_params(est.num_params)} "
                     f"(params {_gib(stage.params)} per GPU on the worst stage)")
    return "\n".join(lines)
