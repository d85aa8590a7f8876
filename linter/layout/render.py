"""Text and JSON renderings of a layout search."""

from __future__ import annotations

import json
from typing import Any, Sequence

from trainlint.core.framework import framework_of
from trainlint.estimator import coefficients as C
from trainlint.estimator.core import Estimate
from trainlint.layout.search import SearchResult, Suggestion
from trainlint.layout.space import Layout
from trainlint.core.escape import printable_lines
from trainlint.core.spec import TrainingSpec


def _layout_of(e: Estimate) -> Layout:
    i = e.inputs
    return Layout(i.tp, i.pp, i.vpp, i.cp, i.dp, i.micro, i.grad_accum, i.global_batch, i.recompute, i.zero, i.dist_opt, i.sp)


def layout_text(layout: Layout, spec: TrainingSpec) -> str:
    """A layout of ``spec``'s run in a few words: \"TP 8 PP 4 VP 2 DP 8 micro 1 GA 32 recompute selective
    dist-opt SP\"; ZeRO and SP where the run's framework writes them (ZeRO also when it is on)."""
    framework = framework_of(spec)
    text = layout.short()
    if framework.shows_zero or layout.zero:
        text += f" ZeRO {layout.zero}"
    if layout.dist_opt:
        text += " dist-opt"
    if layout.sp and framework.sequence_parallel_switch(spec):
        text += " SP"
    return text


def _seconds(x: float) -> str:
    return f"{x * 1e3:.0f} ms" if x < 1 else f"{x:.2f} s"


def _numbers(e: Estimate, headroom: float) -> str:
    worst = e.worst_stage
    cap = e.capacity_bytes
    flag = "" if worst.total <= headroom * cap else (" OVER" if worst.total > cap else " above headroom")
    return (f"{worst.total / C.GIB:6.1f} GiB ({worst.total / cap:4.0%}){flag:<15} MFU {e.mfu:6.1%}  step {_seconds(e.step_time):>8}  "
            f"{e.tokens_per_s:>12,.0f} tokens/s  {e.bound}")


def render_text(results: Sequence[tuple[str, SearchResult]]) -> str:
    blocks = []
    for path, r in results:
        blocks.append(_one_text(path, r))
    return "\n".join(blocks)


def _one_text(path: str, r: SearchResult) -> str:
    spec, o = r.spec, r.options
    lines = [f"{spec.label or path} ({spec.framework})"]
    cur = r.current
    if not cur.ok and not r.suggestions:
        lines.append("  cannot estimate the config, missing:")
        lines += [f"    - {m.what} ({m.field}): {m.how}" for m in cur.missing]
        return printable_lines(lines) + "\n"
    ref = cur if cur.ok else r.suggestions[0].estimate
    i = ref.inputs
    cap = ref.capacity_bytes
    s = r.stats
    batch = f"global batch held at {i.global_batch:d}" if o.batch_tolerance is None else \
        f"global batch {i.global_batch} +/- {o.batch_tolerance:.0%}"
    lines.append(f"  {i.world} x {i.gpu.id} ({cap / C.GIB:.1f} GiB), headroom {o.headroom:.0%}, {batch}; "
                 f"{s.space_points:,} layouts, {s.feasible:,} fit, {s.checked} checked with the estimator and "
                 f"the TL1xx rules, in {s.seconds.get('total', 0.0):.2f} s")
    ranking = "cost per token" if o.price_per_gpu_hour is not None else "tokens/s"
    lines.append(f"  ranked by {ranking}")
    lines.append("")
    if cur.ok:
        lines.append(f"  now  {layout_text(_layout_of(cur), spec)}")
        lines.append(f"       {_numbers(cur, o.headroom)}" + _cost(cur, o.price_per_gpu_hour))
    else:
        lines.append("  now  cannot be estimated: " + "; ".join(m.what for m in cur.missing))
    if not r.suggestions:
        lines.append("")
        lines.append("  no layout fits under the headroom and passes the launch-time rules"
                     + ("" if o.batch_tolerance is not None else " (try --allow-batch-change)"))
    for sg in r.suggestions:
        e = sg.estimate
        lines.append("")
        tag = " (the config as it is)" if sg.is_current else ""
        lines.append(f"  {sg.rank:>3}  {layout_text(sg.layout, spec)}{tag}")
        speed = f"  {e.tokens_per_s / cur.tokens_per_s:.2f}x" if cur.ok else ""
        lines.append(f"       {_numbers(e, o.headroom)}{speed}" + _cost(e, o.price_per_gpu_hour))
        if sg.spelled:
            lines.append("       change: " + "  ".join(sg.spelled))
    for note in r.notes:
        lines.append(f"  note: {note}")
    return printable_lines(lines) + "\n"


def _cost(e: Estimate, price: float | None) -> str:
    if price is None:
        return ""
    cost = price * e.inputs.world / 3600.0 / e.tokens_per_s * 1e6
    return f"  {cost:,.4g} per 1M tokens"


def _estimate_dict(e: Estimate, headroom: float, price: float | None) -> dict[str, Any]:
    worst = e.worst_stage
    out = {
        "memory_gib": worst.total / C.GIB,
        "capacity_gib": e.capacity_bytes / C.GIB,
        "memory_fraction": worst.total / e.capacity_bytes,
        "fits_headroom": worst.total <= headroom * e.capacity_bytes,
        "worst_stage": worst.stage,
        "mfu": e.mfu,
        "step_time_s": e.step_time,
        "tokens_per_s": e.tokens_per_s,
        "bound": e.bound,
    }
    if price is not None:
        out["cost_per_million_tokens"] = price * e.inputs.world / 3600.0 / e.tokens_per_s * 1e6
    return out


def suggestion_dict(sg: Suggestion, r: SearchResult) -> dict[str, Any]:
    o = r.options
    base = r.current.tokens_per_s if r.current.ok else None
    return {
        "rank": sg.rank,
        "is_current": sg.is_current,
        "layout": sg.layout.as_dict(),
        "changes": sg.changes,
        "diff": sg.spelled,
        **_estimate_dict(sg.estimate, o.headroom, o.price_per_gpu_hour),
        "speedup": sg.estimate.tokens_per_s / base if base else None,
    }


def result_dict(path: str, r: SearchResult) -> dict[str, Any]:
    o = r.options
    cur = r.current
    out: dict[str, Any] = {"path": path, "label": r.spec.label, "framework": r.spec.framework}
    if cur.ok:
        out.update({"gpu": cur.inputs.gpu.id, "world_size": cur.inputs.world,
                    "current": {"layout": _layout_of(cur).as_dict(), **_estimate_dict(cur, o.headroom, o.price_per_gpu_hour)}})
    else:
        if r.suggestions:
            ref = r.suggestions[0].estimate.inputs
            out.update({"gpu": ref.gpu.id, "world_size": ref.world})
        out["current"] = None
        out["missing"] = [m.to_dict() for m in cur.missing]
    out.update({
        "headroom": o.headroom,
        "ranking": "cost_per_token" if o.price_per_gpu_hour is not None else "tokens_per_s",
        "global_batch": "fixed" if o.batch_tolerance is None else {"tolerance": o.batch_tolerance},
        "suggestions": [suggestion_dict(sg, r) for sg in r.suggestions],
        "search": r.stats.as_dict(),
        "notes": list(r.notes),
    })
    return out


def render_json(results: Sequence[tuple[str, SearchResult]]) -> str:
    data = [result_dict(path, r) for path, r in results]
    return json.dumps(data[0] if len(data) == 1 else data, indent=2) + "\n"
