"""TL402: ZeRO-3 shards parameters over a large DP group and all-gathers them every micro-batch."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_DEEPSPEED_ENGINE
from trainlint.core.diagnostics import Severity
from trainlint.estimator.core import InvariantError
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec


class Zero3AtLargeDp(Rule):
    """## What it does
    Warns when ZeRO-3 shards parameters over a large data-parallel group (default more than
    64 ranks): every micro-batch then all-gathers each layer's parameters across the whole
    group, forward and backward, over the slowest links of the cluster.

    ## Why is this bad?
    ZeRO-3's traffic is about 1.5x that of plain data parallelism and it is paid per
    micro-batch, not per step, so gradient accumulation does not amortise it; at large DP the
    all-gathers run at inter-node bandwidth.

    ## Example
    `"stage": 3` on 32 nodes for a 7B model that fits with stage 1.

    ## Fix
    A lower ZeRO stage when the model fits without parameter sharding, or hierarchical
    partitioning (`zero_hpz_partition_size`, MiCS) inside a node; the finding quotes the
    re-estimate of the lower stage.

    ## References
    Rajbhandari et al. 2020 (ZeRO), Wang et al. 2023 (ZeRO++ hpZ).
    """

    code = "TL402"
    release_dependent = False
    name = "zero3-large-dp"
    summary = "ZeRO-3 shards parameters over a large DP group and all-gathers them every micro-batch."
    default_severity = Severity.WARNING
    requires = frozenset({CAP_DEEPSPEED_ENGINE})
    needs_estimate = True
    options = {"max_dp": Option(64, "warn above this data-parallel size with ZeRO-3"),
               "headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable(spec, ctx)
        if est is None or not est.fits:
            return
        from trainlint.rules.estimation.fixes import communication_candidates, fits

        i = est.inputs
        if i.zero < 3 or i.dp <= int(ctx.options["max_dp"]):
            return
        if ctx.estimator is None:
            return
        headroom = float(ctx.options["headroom"])
        best = None
        for candidate in communication_candidates(spec, ctx.adapters):
            if candidate.target != "parallel.zero_stage" or "stage" not in candidate.spelling:
                continue
            try:
                result = ctx.estimator(candidate.spec)
            except InvariantError:
                continue
            if getattr(result, "ok", False) and fits(result, headroom) \
                    and result.tokens_per_s > est.tokens_per_s * 1.05 \
                    and (best is None or result.tokens_per_s > best[1].tokens_per_s):
                best = (candidate, result)
        if best is None:
            return  # sharding parameters is what lets this run fit, or it costs nothing here
        candidate, result = best
        from trainlint.estimator.performance import data_parallel_traffic  # loaded by the estimate already

        traffic = data_parallel_traffic(i)
        message = (f"ZeRO-3 over DP {i.dp}: {traffic.bytes_per_gpu / 1e9:.1f} GB per GPU per step "
                   f"({i.grad_accum} micro-batch(es), each all-gathering the parameters), "
                   f"{traffic.exposed_time / est.step_time:.0%} of the step exposed")
        fix = (f"with {candidate.spelling}: {result.worst_stage.total / 2**30:.1f} GiB per GPU, "
               f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s")
        yield Finding(message, at="parallel.zero_stage", fix=fix)
