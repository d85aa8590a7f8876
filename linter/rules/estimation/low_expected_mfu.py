"""TL301."""

from __future__ import annotations

import itertools
from typing import Iterator

from trainlint.core.diagnostics import Applicability, Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec


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
    Compares the config's expected MFU with the best layout ``trainlint suggest`` finds for the
    same model, the same GPUs and the same global batch (TP, PP, interleaving, CP, micro batch,
    recompute and ZeRO / distributed optimizer together, under the memory headroom, with no new
    launch-time finding), and warns when the config leaves more than ``max_gap`` (default 15%) of
    that throughput on the table. It names the largest loss and the faster layout.

    An absolute floor is available as an option (``threshold``, off by default): an MFU below it is
    reported even when no layout does better (then the model or the GPU is the limit, not the
    layout).

    ## Why is this bad?
    A run slower than its own best layout pays for GPU hours it does not need. A fixed MFU
    threshold says little: a small model on many GPUs cannot reach 40%, and a well-tuned published
    run may sit below it; the distance to the best layout for the same job is what can be won.

    ## Example
    PP 8 with 8 micro-batches per step: the bubble alone takes 7/15 of the step, while TP 4 PP 2
    fits in memory with the same global batch.

    ## Fix
    The finding quotes the best single change (more micro-batches, interleaving, selective instead
    of full recompute, TP inside a node, a larger micro batch) when it gets within ``max_gap`` of
    the best layout, else the whole layout, each re-estimated. These fixes change how the run is
    laid out, not what it learns: the global batch and the tokens per step stay as written. A fix
    that changes the global batch (only with ``allow_batch_change = true``) is labelled as
    changing the training recipe. Every fix is *unsafe* in ruff's sense: it changes the run.
    """

    code = "TL301"
    release_dependent = False
    name = "low-expected-mfu"
    summary = ("The config leaves more than a set share of throughput on the table against the best layout for "
               "the same model, GPUs and global batch.")
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"max_gap": Option(0.15, "warn when the best layout for the same model, GPUs and global batch is "
                                       "faster by more than this share of its tokens/s"),
               "threshold": Option(0.0, "absolute floor: also warn below this expected MFU (0: off)"),
               "allow_batch_change": Option(False, "fixes may change the global batch (the training recipe)"),
               "headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable(spec, ctx)
        if est is None or not est.fits:
            return  # an OOM is TL201's; its MFU means nothing
        from trainlint.rules.estimation.fixes import (communication_candidates, final_changes, fits, layout_sentence,
                                                      point_at, search_closest, suggest_layout,
                                                      throughput_candidates)

        max_gap, floor = float(ctx.options["max_gap"]), float(ctx.options["threshold"] or 0.0)
        allow_batch = bool(ctx.options["allow_batch_change"])
        headroom = float(ctx.options["headroom"])
        below_floor = floor > 0 and est.mfu < floor
        # Without the floor, only a layout more than max_gap faster matters (gap > max_gap <=> its
        # tokens/s > ours / (1 - max_gap)): the search may stop at once when no layout can be.
        worth = est.tokens_per_s / (1 - max_gap) if 0 <= max_gap < 1 and not below_floor else None
        best = suggest_layout(spec, ctx, headroom, current=est, worth=worth)
        gap = 1 - est.tokens_per_s / best.estimate.tokens_per_s if best is not None and best.estimate.tokens_per_s > 0 else 0.0
        if gap <= max_gap and not below_floor:
            return
        shares = losses(est)
        cause, share = max(shares.items(), key=lambda kv: kv[1])
        loss = f"largest loss: {cause}, {share:.0%} of the {est.step_time:.2f} s step"
        at = point_at(spec, "batch.micro_batch", "batch.grad_accum", "batch.global_batch")
        if gap <= max_gap:
            # Only the absolute floor speaks: no layout of this job does much better.
            ceiling = (f"; the best layout for the same model, GPUs and global batch reaches {best.estimate.mfu:.1%}, "
                       "so the model and the GPU set the limit, not the layout") if best is not None else ""
            yield Finding(f"expected MFU {est.mfu:.1%} on {est.inputs.gpu.id} is below the floor {floor:.0%}{ceiling}; "
                          f"{loss}", at=at)
            return
        if best is None or ctx.estimator is None:
            return  # no best layout (it needs the estimator): the gap is 0, so only a max_gap below 0 gets here
        message = (f"expected MFU {est.mfu:.1%} on {est.inputs.gpu.id}, while the best layout for the same model, GPUs "
                   f"and global batch reaches {best.estimate.mfu:.1%}: this one leaves {gap:.0%} of the throughput on "
                   f"the table (limit {max_gap:.0%}); {loss}")
        fix = f"{layout_sentence(best, est)}; the global batch and tokens per step stay as written"
        target = best.estimate.tokens_per_s * (1 - max_gap)
        global_batch = est.inputs.global_batch

        def candidates(s: TrainingSpec):
            return itertools.chain(throughput_candidates(s, ctx.adapters), communication_candidates(s, ctx.adapters))

        def same_recipe(r) -> bool:
            return allow_batch or r.inputs.global_batch == global_batch

        found = search_closest(spec, candidates, ctx.estimator,
                               accept=lambda r: fits(r, headroom) and same_recipe(r) and r.tokens_per_s >= target,
                               score=lambda r: -r.tokens_per_s if fits(r, headroom) and same_recipe(r) else 0.0)
        if found is not None and found[2]:
            chain, result, _ = found
            final, spelled = final_changes(chain, spec, ctx.adapters)
            fix = (f"with {spelled}: MFU {est.mfu:.1%} -> {result.mfu:.1%}, "
                   f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s, "
                   f"{result.worst_stage.total / 2**30:.1f} GiB per GPU (the best layout: {layout_sentence(best, est)})")
            if result.inputs.global_batch != global_batch:
                seq = est.inputs.seq
                fix = (f"changes the training recipe (global batch {global_batch} -> {result.inputs.global_batch} "
                       f"sequences, {global_batch * seq:,} -> {result.inputs.global_batch * seq:,} tokens per step): "
                       + fix)
            at = point_at(spec, *(c.target for c in final)) or at
        yield Finding(message, at=at, fix=fix, applicability=Applicability.UNSAFE)
