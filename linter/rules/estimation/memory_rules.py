"""TL2xx: memory per GPU against the GPU's capacity."""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Severity
from trainlint.estimator import coefficients as C
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.fixes import final_changes, memory_candidates, point_at, search
from trainlint.spec import TrainingSpec

_COMPONENTS = ("params", "grads", "optimizer", "activations", "buffers", "overhead")


def _gib(x: float) -> str:
    return f"{x / C.GIB:.1f}"


class OomRisk(Rule):
    """## What it does
    Estimates the memory of every pipeline stage on one GPU (parameters, gradients, optimizer
    states, activations with the micro-batches in flight, DeepSpeed buffers, CUDA context, NCCL
    and allocator fragmentation) and compares the worst stage with the GPU's memory.

    ## Why is this bad?
    A run over capacity dies with `CUDA out of memory` in its first steps, after waiting in the
    queue; one just under capacity dies later, when fragmentation or a longer batch tips it over.

    ## Example
    A Megatron 70B run with TP 4, PP 4, micro batch 4 and no recompute on 80 GB GPUs.

    ## Fix
    The finding proposes the smallest change that brings the estimate under the headroom,
    re-estimated: selective or full recompute, a smaller micro batch with more accumulation,
    the distributed optimizer, a higher ZeRO stage.

    ## References
    Korthikanti et al. 2022 (activation memory); Rajbhandari et al. 2020 (ZeRO); seed 001.
    """

    code = "TL201"
    name = "oom-risk"
    summary = "The estimated memory per GPU exceeds the GPU's memory (error) or the headroom (warning)."
    default_severity = Severity.ERROR
    needs_estimate = True
    options = {"headroom": Option(0.90, "warn above this fraction of the GPU's memory")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = ctx.estimate
        if not getattr(est, "ok", False):
            return
        headroom = float(ctx.options["headroom"])
        worst = est.worst_stage
        capacity = est.capacity_bytes
        if worst.total <= headroom * capacity:
            return
        over = worst.total > capacity
        parts = sorted(((getattr(worst, k), k) for k in _COMPONENTS), reverse=True)[:3]
        where = f" on pipeline stage {worst.stage} of {len(est.stages)}" if len(est.stages) > 1 else ""
        message = (f"estimated {_gib(worst.total)} GiB per GPU{where} "
                   f"{'exceeds' if over else 'is above ' + format(headroom, '.0%') + ' of'} the {_gib(capacity)} GiB of "
                   f"{est.inputs.gpu.id} ({worst.total / capacity:.0%}); largest: "
                   + ", ".join(f"{name} {_gib(value)}" for value, name in parts))
        fix, at = None, point_at(spec, "batch.micro_batch", "batch.grad_accum", "batch.global_batch")
        if ctx.estimator is not None:
            found = search(spec, memory_candidates, ctx.estimator,
                           accept=lambda e: e.worst_stage.total <= headroom * e.capacity_bytes,
                           score=lambda e: e.worst_stage.total)
            if found is not None:
                chain, result = found
                final, spelled = final_changes(chain)
                fix = (f"with {spelled}: {_gib(result.worst_stage.total)} of "
                       f"{_gib(result.capacity_bytes)} GiB, {result.tokens_per_s:,.0f} tokens/s "
                       f"(now {est.tokens_per_s:,.0f})")
                # Point at the first value the fix changes that is written somewhere; a default
                # (recompute off, TP 1) has no place in the file, the micro batch usually does.
                at = point_at(spec, *(c.target for c in final)) or at
        yield Finding(message, at=at, fix=fix, severity=Severity.ERROR if over else Severity.WARNING)


RULES: list[type] = [OomRisk]
