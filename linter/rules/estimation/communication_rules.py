"""TL4xx: data-parallel and ZeRO communication against compute."""

from __future__ import annotations

from typing import Iterator

from trainlint.framework import CAP_DEEPSPEED_ENGINE
from trainlint.diagnostics import Severity
from trainlint.estimator.core import InvariantError
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.memory_rules import _gpu_assumed
from trainlint.rules.estimation.scope import usable_estimate
# The fix search (rules.estimation.fixes) is imported by a check that has an estimate to judge (see memory_rules).
from trainlint.spec import TrainingSpec


class NetworkBoundDp(Rule):
    """## What it does
    Estimates the gradient all-reduce (or ZeRO reduce-scatter / all-gather) traffic of one
    step over the data-parallel group's links and compares it with compute. Warns when the
    exposed part (what the backward pass does not hide) exceeds a share of the step (default
    10%); errs when the communication alone takes longer than the compute on a GPU the config
    or the project names (against an assumed GPU, and so an assumed network, it warns and says so).

    ## Why is this bad?
    Hodge 2025 ("Sizing AI Training by Cost per Memory Bandwidth"): when the network rate is below
    both the compute and the memory rate, the run is network-bound: more GPUs add cost and little speed.

    ## Example
    A 7B model with DP 64 across nodes on 100 Gb/s Ethernet and one micro-batch per step.

    ## Fix
    Fewer, larger steps (more gradient accumulation, a larger global batch), fewer DP replicas
    (more TP or PP), overlap of the reduction with the backward pass, another ZeRO stage. The
    finding re-estimates these and quotes the best.
    """

    code = "TL401"
    release_dependent = False
    name = "network-bound-dp"
    summary = "Data-parallel / ZeRO communication is not hidden by compute (error when it alone exceeds compute)."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"exposed_fraction": Option(0.10, "warn when exposed DP communication exceeds this share of the step"),
               "headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable_estimate(spec, ctx.estimate)
        if est is None or not est.fits:
            return
        from trainlint.estimator.performance import data_parallel_traffic  # loaded by the estimate already
        from trainlint.rules.estimation.fixes import communication_candidates, final_changes, fits, point_at, search_closest

        traffic = data_parallel_traffic(est.inputs)
        compute = est.time.compute
        exposed_share = traffic.exposed_time / est.step_time
        alone = traffic.raw_time > compute
        if not alone and exposed_share <= float(ctx.options["exposed_fraction"]):
            return
        message = (f"data-parallel traffic {traffic.bytes_per_gpu / 1e9:.1f} GB per GPU per step over "
                   f"{traffic.link_bytes_per_s / 1e9:.0f} GB/s links (DP {est.inputs.dp}"
                   f"{', across nodes' if est.inputs.tp * est.inputs.cp * est.inputs.dp > est.inputs.gpus_per_node else ''}) "
                   f"takes {traffic.raw_time:.2f} s against {compute:.2f} s of compute; "
                   f"{traffic.exposed_time:.2f} s ({exposed_share:.0%} of the step) is not hidden")
        fix, at = None, point_at(spec, "batch.global_batch", "batch.grad_accum", "batch.micro_batch")
        if ctx.estimator is not None:
            headroom = float(ctx.options["headroom"])
            limit = float(ctx.options["exposed_fraction"])


            def share(r) -> float:
                return r.time.dp_comm / r.step_time

            # A fix must not buy a smaller share with a slower step (more TP makes compute
            # longer and the share smaller): it has to keep or raise the throughput.
            def faster(r) -> bool:
                return r.tokens_per_s >= est.tokens_per_s

            found = search_closest(spec, lambda s: communication_candidates(s, ctx.adapters), ctx.estimator,
                                   accept=lambda r: fits(r, headroom) and faster(r) and share(r) <= limit,
                                   score=lambda r: share(r) if fits(r, headroom) and faster(r) else 1.0)
            if found is not None and fits(found[1], headroom) and faster(found[1]) and share(found[1]) < exposed_share:
                chain, result, resolved = found
                final, spelled = final_changes(chain, spec, ctx.adapters)
                fix = (f"with {spelled}: exposed DP communication {exposed_share:.0%} -> "
                       f"{share(result):.0%} of the step, {est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s")
                if not resolved:
                    fix = f"no change tried brings it under {limit:.0%}; the closest, " + fix
                at = point_at(spec, *(c.target for c in final)) or at
        severity = Severity.ERROR if alone else Severity.WARNING
        if alone and _gpu_assumed(est):
            # The links are the assumed GPU's reference system (DGX H100: 50 GB/s per GPU): a verdict
            # about hardware nobody named is a warning that says so, as TL201's out-of-memory error is.
            severity = Severity.WARNING
            message += (" (the GPU and its network are assumed, not given: pass --gpu ID or set `gpu = ...` "
                        "in [tool.trainlint])")
        yield Finding(message, at=at, fix=fix, severity=severity)


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
        est = usable_estimate(spec, ctx.estimate)
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


RULES: list[type] = [NetworkBoundDp, Zero3AtLargeDp]
