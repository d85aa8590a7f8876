"""Text and JSON renderings of an Estimate (or of what is missing)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from trainlint.estimator import coefficients as C
from trainlint.estimator.core import Estimate, MissingInputs
from trainlint.core.escape import printable_lines

BAR = 30


def _gib(x: float) -> str:
    return f"{x / C.GIB:7.1f}"


def _bar(value: float, capacity: float) -> str:
    if capacity <= 0:
        return ""
    filled = min(BAR, round(BAR * value / capacity))
    over = value > capacity
    return "[" + "#" * filled + "." * (BAR - filled) + "]" + (" OVER" if over else "")


def _seconds(x: float) -> str:
    return f"{x * 1e3:9.1f} ms" if x < 1 else f"{x:9.2f} s "


def render_text(result: Estimate | MissingInputs) -> str:
    if isinstance(result, MissingInputs):
        lines = [f"{result.spec_label}: cannot estimate, missing:"]
        for m in result.missing:
            lines.append(f"  - {m.what} ({m.field}): {m.how}")
        assumed = [a for a in result.assumptions if a.origin == "assumed"]
        if assumed:
            lines.append("  and assumed, once those are given:")
            lines += [f"    {a.field} = {a.value}: {a.source}" for a in assumed]
        return printable_lines(lines) + "\n"
    e = result
    i = e.inputs
    worst = e.worst_stage
    cap = e.capacity_bytes
    lines = [f"{e.spec_label}",
             f"  {i.world} x {i.gpu.name} ({i.gpu.id}, {cap / C.GIB:.1f} GiB) | TP {i.tp} PP {i.pp}"
             + (f" (v{i.vpp})" if i.vpp > 1 else "") + f" DP {i.dp} CP {i.cp}" + (f" EP {i.ep}" if i.moe else "")
             + f" | ZeRO {i.zero}" + (" + distributed optimizer" if i.dist_opt else "")
             + f" | micro {i.micro} x accum {i.grad_accum} -> global {i.global_batch} x seq {i.seq}"
             + f" | {i.dtype}{' + fp8' if i.fp8 else ''} | recompute {i.recompute}",
             f"  model: {e.num_params / 1e9:.2f}B parameters, {i.layers} layers, hidden {i.hidden}, "
             f"{i.heads} heads ({i.kv_heads} KV), FFN {i.ffn}{' gated' if i.gated else ''}, vocab {i.vocab}",
             "",
             f"  Memory per GPU (GiB), worst pipeline stage = {worst.stage}:"]
    for name in ("params", "grads", "optimizer", "activations", "buffers", "overhead"):
        val = getattr(worst, name)
        lines.append(f"    {name:12}{_gib(val)}  {_bar(val, cap)}")
    verdict = "fits" if e.fits else "DOES NOT FIT"
    lines.append(f"    {'total':12}{_gib(worst.total)}  {_bar(worst.total, cap)}  {verdict} in {cap / C.GIB:.1f} GiB")
    if len(e.stages) > 1:
        per = ", ".join(f"{s.stage}: {s.total / C.GIB:.1f}" for s in e.stages)
        lines.append(f"    per stage: {per}")
    t = e.time
    lines += ["", "  Time per step:"]
    for name, val in t.as_dict().items():
        share = val / t.step_time if t.step_time else 0
        lines.append(f"    {name:12}{_seconds(val)}  {share * 100:5.1f}%")
    lines.append(f"    {'step':12}{_seconds(t.step_time)}")
    lines += ["",
              f"  Throughput: {e.tokens_per_s:,.0f} tokens/s ({e.tokens_per_s_per_gpu:,.0f} per GPU), "
              f"MFU {e.mfu * 100:.1f}% (model FLOPs {e.model_flops_per_step:.3g}/step; HFU {e.hfu * 100:.1f}%)",
              f"  Bound: {e.bound}", ""]
    if e.assumptions:
        lines.append("  Inputs not read from the config:")
        for a in e.assumptions:
            lines.append(f"    {a.field} = {a.value}  [{a.origin}] {a.source}")
    return printable_lines(lines) + "\n"


def render_json(results: Sequence[tuple[str, Estimate | MissingInputs]]) -> str:
    out: list[dict[str, Any]] = []
    for path, result in results:
        data = result.to_dict()
        data["path"] = path
        out.append(data)
    return json.dumps(out[0] if len(out) == 1 else out, indent=2) + "\n"
