"""TL302: The pipeline bubble takes more than the threshold share of the step."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec


class PipelineBubble(Rule):
    """## What it does
    Warns when the pipeline bubble takes more than a share of the step (default 25%). With
    1F1B the bubble is (p - 1) / (m + p - 1) of the step for p stages and m micro-batches per
    step; interleaving divides it by the number of model chunks per stage.

    ## Why is this bad?
    During the bubble the GPUs of a stage wait: that share of the paid GPU time does nothing.

    ## Example
    PP 8 with global batch 64, micro batch 4 and DP 2: 8 micro-batches per step, bubble 7/15.

    ## Fix
    More micro-batches per step (a smaller micro batch, or a larger global batch), interleaved
    stages (virtual pipeline), or fewer stages; the finding quotes the re-estimated bubble.

    ## References
    Narayanan et al. 2021, section 2.2; "Estimation as Discipline" (a capacity-planning tutorial).
    """

    requires = frozenset({CAP_MEGATRON_MODEL})
    code = "TL302"
    release_dependent = False
    name = "large-pipeline-bubble"
    summary = "The pipeline bubble takes more than the threshold share of the step."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"threshold": Option(0.25, "warn when the bubble exceeds this share of the step"),
               "headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable(spec, ctx)
        if est is None or not est.fits or est.inputs.pp <= 1:
            return
        from trainlint.rules.estimation.fixes import (final_changes, fits, point_at, search_closest,
                                                      throughput_candidates)

        share = est.time.pp_bubble / est.step_time
        if share <= float(ctx.options["threshold"]):
            return
        i = est.inputs
        message = (f"pipeline bubble {share:.0%} of the step: {i.pp} stages, {i.grad_accum} micro-batches per step"
                   + (f", {i.vpp} chunks per stage" if i.vpp > 1 else ""))
        fix, at = None, point_at(spec, "batch.micro_batch", "batch.grad_accum", "batch.global_batch")
        if ctx.estimator is not None:
            headroom, threshold = float(ctx.options["headroom"]), float(ctx.options["threshold"])


            def bubble(r) -> float:
                return r.time.pp_bubble / r.step_time

            # Only changes that aim at the bubble: a larger micro batch or less TP would be
            # chosen for their speed, not because they shrink it.
            found = search_closest(spec, lambda s: (c for c in throughput_candidates(s, ctx.adapters) if c.target != "parallel.tensor"
                                                    and "fewer, larger" not in c.spelling),
                                   ctx.estimator, accept=lambda r: fits(r, headroom) and bubble(r) <= threshold,
                                   score=lambda r: bubble(r) if fits(r, headroom) else 1.0)
            if found is not None and fits(found[1], headroom) and bubble(found[1]) < share:
                chain, result, resolved = found
                final, spelled = final_changes(chain, spec, ctx.adapters)
                r = result.inputs
                fix = (f"with {spelled} ({r.grad_accum} micro-batches per step"
                       + (f", {r.vpp} chunks per stage" if r.vpp > 1 else "")
                       + f"): the bubble falls from {share:.0%} to {bubble(result):.0%}, "
                       f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s")
                if not resolved:
                    fix = f"no change tried brings it under {threshold:.0%}; the closest, " + fix
                at = point_at(spec, *(c.target for c in final)) or at
        yield Finding(message, at=at, fix=fix)
