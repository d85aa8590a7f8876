"""TL3xx: expected throughput (MFU) and what loses it."""

from __future__ import annotations

import itertools
from typing import Iterator

from trainlint.framework import CAP_MEGATRON_MODEL
from trainlint.diagnostics import Applicability, Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable_estimate
# The fix search (rules.estimation.fixes) is imported by a check that has an estimate to judge (see memory_rules).
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
        est = usable_estimate(spec, ctx.estimate)
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
        est = usable_estimate(spec, ctx.estimate)
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


class TensorParallelAcrossNodes(Rule):
    """## What it does
    Warns when the tensor-parallel group is larger than a node, so its all-reduces (two per
    layer in the forward pass, two in the backward) cross the network instead of NVLink.

    ## Why is this bad?
    Per-GPU network bandwidth is an order of magnitude below NVLink; TP across nodes usually
    costs more than it saves.

    ## Example
    TP 16 on nodes of 8 GPUs.

    ## Fix
    Keep TP within a node (TP <= GPUs per node) and use pipeline or data parallelism across
    nodes; the finding quotes the re-estimated throughput.
    """

    requires = frozenset({CAP_MEGATRON_MODEL})
    code = "TL303"
    release_dependent = False
    name = "tp-across-nodes"
    summary = "The tensor-parallel group spans nodes, so its per-layer all-reduces cross the network."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable_estimate(spec, ctx.estimate)
        if est is None or est.inputs.tp <= est.inputs.gpus_per_node:
            return
        from trainlint.rules.estimation.fixes import final_changes, fits, search_closest, throughput_candidates

        i = est.inputs
        message = (f"tensor parallel {i.tp} spans {i.tp // i.gpus_per_node} nodes of {i.gpus_per_node} GPUs: "
                   f"TP communication takes {est.time.tp_comm / est.step_time:.0%} of the step")
        fix = None
        if ctx.estimator is not None:
            headroom = float(ctx.options["headroom"])


            # Halve TP until the group fits in a node (DP grows to keep the world size).
            found = search_closest(spec, lambda s: (c for c in throughput_candidates(s, ctx.adapters) if c.target == "parallel.tensor"),
                                   ctx.estimator, accept=lambda r: fits(r, headroom) and r.inputs.tp <= r.inputs.gpus_per_node,
                                   score=lambda r: r.inputs.tp)
            if found is not None and found[2]:
                chain, result, _ = found
                _, spelled = final_changes(chain, spec, ctx.adapters)
                fix = (f"with {spelled}: TP communication {est.time.tp_comm / est.step_time:.0%} -> "
                       f"{result.time.tp_comm / result.step_time:.0%} of the step, "
                       f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s, "
                       f"{result.worst_stage.total / 2**30:.1f} GiB per GPU")
            elif found is not None:  # a narrower TP does not fit: say so with its numbers
                chain, result, _ = found
                _, spelled = final_changes(chain, spec, ctx.adapters)
                fix = (f"with {spelled} the run would need {result.worst_stage.total / 2**30:.1f} of "
                       f"{result.capacity_bytes / 2**30:.1f} GiB per GPU; add pipeline stages to keep TP in a node")
        yield Finding(message, at="parallel.tensor", fix=fix)


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
        est = usable_estimate(spec, ctx.estimate)
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


class SmallGemms(Rule):
    """## What it does
    Warns when the matrix multiplications of a micro-batch are too small to keep the tensor
    cores busy: fewer tokens per micro-batch and GPU than ``min_tokens`` (micro batch x
    sequence / CP), or a hidden size per tensor-parallel rank below ``min_hidden_per_tp``.

    ## Why is this bad?
    GEMM efficiency falls steeply below a few thousand rows or a few hundred columns; the
    estimator's kernel model shows it as lost MFU.

    ## Example
    Hidden 4096 with TP 16 (256 columns per rank), or micro batch 1 at sequence 512.

    ## Fix
    A larger micro batch (with less accumulation), or less tensor parallelism.
    """

    requires = frozenset({CAP_MEGATRON_MODEL})
    code = "TL305"
    release_dependent = False
    name = "small-gemms"
    summary = "Micro-batch GEMMs are too small for the GPU (few tokens per micro-batch, or little hidden per TP rank)."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"min_tokens": Option(1024, "fewest tokens per micro-batch and GPU"),
               "min_hidden_per_tp": Option(512, "smallest hidden size per tensor-parallel rank"),
               "headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable_estimate(spec, ctx.estimate)
        if est is None or not est.fits:
            return
        from trainlint.rules.estimation.fixes import (final_changes, fits, point_at, search_closest,
                                                      throughput_candidates)

        i = est.inputs
        min_tokens, min_hidden = int(ctx.options["min_tokens"]), int(ctx.options["min_hidden_per_tp"])
        tokens = i.micro * i.seq // max(1, i.cp)
        per_rank = i.hidden // max(1, i.tp)
        small_tokens = tokens < min_tokens
        small_hidden = per_rank < min_hidden
        if not (small_tokens or small_hidden):
            return
        parts = []
        if small_tokens:
            parts.append(f"{tokens} tokens per micro-batch and GPU (micro {i.micro} x sequence {i.seq}"
                         + (f" / CP {i.cp}" if i.cp > 1 else "") + ")")
        if small_hidden:
            parts.append(f"hidden {i.hidden} / TP {i.tp} = {per_rank} columns per rank")
        fix, at = None, ("batch.micro_batch" if small_tokens else "parallel.tensor")
        if ctx.estimator is not None:
            headroom = float(ctx.options["headroom"])


            def resolved_by(r) -> bool:
                n = r.inputs
                return (n.micro * n.seq // max(1, n.cp) >= min_tokens) and n.hidden // max(1, n.tp) >= min_hidden

            # Larger micro-batches (same global batch) and narrower TP: the two ways to larger GEMMs.
            def candidates(s: TrainingSpec):
                return (c for c in throughput_candidates(s, ctx.adapters)
                        if c.target == "parallel.tensor" or (c.target == "batch.micro_batch" and "more micro-batches" not in c.spelling))

            found = search_closest(spec, candidates, ctx.estimator, accept=lambda r: fits(r, headroom) and resolved_by(r),
                                   score=lambda r: -r.mfu if fits(r, headroom) else 0.0)
            if found is not None and fits(found[1], headroom) and (found[2] or found[1].mfu > est.mfu * 1.05):
                chain, result, resolved = found
                final, spelled = final_changes(chain, spec, ctx.adapters)
                n = result.inputs
                fix = (f"with {spelled}: {n.micro * n.seq // max(1, n.cp)} tokens per micro-batch, "
                       f"{n.hidden // max(1, n.tp)} columns per rank, MFU {est.mfu:.1%} -> {result.mfu:.1%}, "
                       f"{result.worst_stage.total / 2**30:.1f} GiB per GPU")
                if not resolved:
                    fix = "no change tried makes them large enough; the closest, " + fix
                at = point_at(spec, *(c.target for c in final)) or at
        yield Finding("small GEMMs: " + "; ".join(parts), at=at, fix=fix)


RULES: list[type] = [LowExpectedMfu, PipelineBubble, TensorParallelAcrossNodes, MemoryBound, SmallGemms]
