"""TL3xx: expected throughput (MFU) and what loses it."""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Severity
from trainlint.provenance import first_span
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.fixes import throughput_candidates
from trainlint.spec import TrainingSpec


def losses(est) -> dict[str, float]:
    """Shares of the step lost to each cause (fractions of the step time)."""
    t, step = est.time, est.step_time
    recompute = 0.0
    if est.hardware_flops_per_step > 0:
        recompute = (1 - est.model_flops_per_step / est.hardware_flops_per_step) * t.compute / step
    kernels = max(0.0, t.compute / step - est.mfu - recompute)
    return {
        "pipeline bubble": t.pp_bubble / step,
        "exposed TP communication": t.tp_comm / step,
        "exposed DP/ZeRO communication": t.dp_comm / step,
        "recompute": recompute,
        "small or memory-bound kernels": kernels,
        "pipeline sends, optimizer and per-step overhead": (t.pp_comm + t.optimizer + t.overhead) / step,
    }


class LowExpectedMfu(Rule):
    """## What it does
    Warns when the estimated model FLOPs utilisation is below a threshold (default 0.35) and
    names the largest loss: pipeline bubble, exposed TP communication (TP across nodes), exposed
    DP communication, recompute, or GEMMs too small for the GPU (micro batch x sequence small
    against hidden / TP).

    ## Why is this bad?
    A run at low MFU pays for GPUs it does not use. Seed 001 calls less than about 115
    TFLOP/s per A100 (~37%) a sign that something in the layout is wrong.

    ## Example
    PP 8 with 8 micro-batches per step: the bubble alone takes 7/15 of the step.

    ## Fix
    The finding re-estimates the obvious changes (more micro-batches, interleaving, selective
    instead of full recompute, TP inside a node, a larger micro batch) and quotes the best one
    that still fits in memory.
    """

    code = "TL301"
    name = "low-expected-mfu"
    summary = "The expected MFU is below the threshold; names the dominant loss and a re-estimated fix."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"threshold": Option(0.35, "warn below this expected MFU"),
               "headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = ctx.estimate
        if not getattr(est, "ok", False) or not est.fits:
            return  # an OOM is TL201's; its MFU means nothing
        threshold = float(ctx.options["threshold"])
        if est.mfu >= threshold:
            return
        shares = losses(est)
        cause, share = max(shares.items(), key=lambda kv: kv[1])
        message = (f"expected MFU {est.mfu:.1%} on {est.inputs.gpu.id} (threshold {threshold:.0%}); largest loss: "
                   f"{cause}, {share:.0%} of the {est.step_time:.2f} s step")
        fix, at = None, "batch.micro_batch"
        if ctx.estimator is not None:
            headroom = float(ctx.options["headroom"])
            best = None
            for candidate in throughput_candidates(spec):
                result = ctx.estimator(candidate.spec)
                if getattr(result, "ok", False) and result.worst_stage.total <= headroom * result.capacity_bytes \
                        and result.mfu > est.mfu * 1.05 and (best is None or result.mfu > best[1].mfu):
                    best = (candidate, result)
            if best is not None:
                candidate, result = best
                fix = (f"with {candidate.spelling}: MFU {est.mfu:.1%} -> {result.mfu:.1%}, "
                       f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s, "
                       f"{result.worst_stage.total / 2**30:.1f} GiB per GPU")
                if first_span(spec.get(candidate.target))[1] is not None:
                    at = candidate.target
        yield Finding(message, at=at, fix=fix)


RULES: list[type] = [LowExpectedMfu]
