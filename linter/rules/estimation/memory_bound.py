"""TL304: The step is bound by HBM bandwidth rather than compute (a roofline)."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec


class MemoryBound(Rule):
    """## What it does
    Warns when the estimate is bound by HBM bandwidth rather than by compute or the network
    (the roofline of Hodge 2025, "Sizing AI Training by Cost per Memory Bandwidth": the memory rate
    is the lowest of the three): the time spent moving bytes (small GEMMs, element-wise kernels,
    unfused attention, the optimizer step) exceeds the time spent on FLOPs.

    ## Why is this bad?
    The tensor cores wait for memory; a memory-bound run gets little from a faster GPU's FLOPs
    and much from fewer bytes per FLOP.

    ## Example
    Micro batch 1 with a short sequence and no flash attention.

    ## Fix
    Larger GEMMs (a larger micro batch), flash attention, less TP; the finding quotes the
    re-estimated bound and tokens/s.
    """

    code = "TL304"
    release_dependent = False
    name = "memory-bound"
    summary = "The step is bound by HBM bandwidth rather than compute (a roofline)."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable(spec, ctx)
        if est is None or not est.fits or est.bound != "memory":
            return
        from trainlint.rules.estimation.fixes import (final_changes, fits, point_at, search_closest,
                                                      throughput_candidates)

        t = est.time
        message = (f"memory-bound: {t.bytes_time * 1e3:,.1f} ms moving bytes against {t.flops_time * 1e3:,.1f} ms of FLOPs per step "
                   f"(MFU {est.mfu:.1%})")
        fix, at = None, point_at(spec, "batch.micro_batch", "batch.grad_accum", "batch.global_batch")
        if ctx.estimator is not None:
            headroom = float(ctx.options["headroom"])


            def ratio(r) -> float:
                return r.time.bytes_time / r.time.flops_time if r.time.flops_time else float("inf")

            found = search_closest(spec, lambda s: throughput_candidates(s, ctx.adapters), ctx.estimator,
                                   accept=lambda r: fits(r, headroom) and r.bound != "memory" and r.tokens_per_s >= est.tokens_per_s,
                                   score=lambda r: ratio(r) if fits(r, headroom) and r.tokens_per_s >= est.tokens_per_s else float("inf"))
            if found is not None and fits(found[1], headroom) and found[1].tokens_per_s > est.tokens_per_s:
                chain, result, resolved = found
                final, spelled = final_changes(chain, spec, ctx.adapters)
                fix = (f"with {spelled}: bound {result.bound}, bytes {ratio(result):.0%} of FLOP time (now {ratio(est):.0%}), "
                       f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s")
                if not resolved:
                    fix = "no change tried makes it compute-bound; the closest, " + fix
                at = point_at(spec, *(c.target for c in final)) or at
        yield Finding(message, at=at, fix=fix)
