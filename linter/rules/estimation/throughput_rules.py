"""TL3xx: expected throughput (MFU) and what loses it."""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Severity
from trainlint.provenance import first_span
from trainlint.rules import Finding, Option, Rule, RuleContext
import itertools

from trainlint.rules.estimation.fixes import communication_candidates, final_changes, point_at, search, throughput_candidates
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
        fix, at = None, point_at(spec, "batch.micro_batch", "batch.grad_accum", "batch.global_batch")
        if ctx.estimator is not None:
            headroom = float(ctx.options["headroom"])

            def fits(r) -> bool:
                return r.worst_stage.total <= headroom * r.capacity_bytes

            def candidates(s: TrainingSpec):
                return itertools.chain(throughput_candidates(s), communication_candidates(s))

            found = search(spec, candidates, ctx.estimator, accept=lambda r: fits(r) and r.mfu >= threshold,
                           score=lambda r: -r.mfu if fits(r) else 0.0)
            if found is None:  # nothing reaches the threshold: the best single improvement
                best = _best(spec, ctx, candidates(spec), lambda r: r.mfu, headroom)
                found = ([best[0]], best[1]) if best is not None and best[1].mfu > est.mfu * 1.05 else None
            if found is not None:
                chain, result = found
                final, spelled = final_changes(chain)
                fix = (f"with {spelled}: MFU {est.mfu:.1%} -> {result.mfu:.1%}, "
                       f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s, "
                       f"{result.worst_stage.total / 2**30:.1f} GiB per GPU")
                at = point_at(spec, *(c.target for c in final)) or at
        yield Finding(message, at=at, fix=fix)


def _best(spec: TrainingSpec, ctx: RuleContext, candidates, better, headroom: float):
    """The candidate whose re-estimate fits under the headroom and scores best by ``better``."""
    best = None
    if ctx.estimator is None:
        return None
    for candidate in candidates:
        result = ctx.estimator(candidate.spec)
        if getattr(result, "ok", False) and result.worst_stage.total <= headroom * result.capacity_bytes:
            value = better(result)
            if value is not None and (best is None or value > best[2]):
                best = (candidate, result, value)
    return best


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
    Narayanan et al. 2021, section 2.2; seed 000.
    """

    frameworks = ("megatron", "neox")
    code = "TL302"
    name = "large-pipeline-bubble"
    summary = "The pipeline bubble takes more than the threshold share of the step."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"threshold": Option(0.25, "warn when the bubble exceeds this share of the step"),
               "headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = ctx.estimate
        if not getattr(est, "ok", False) or not est.fits or est.inputs.pp <= 1:
            return
        share = est.time.pp_bubble / est.step_time
        if share <= float(ctx.options["threshold"]):
            return
        i = est.inputs
        message = (f"pipeline bubble {share:.0%} of the step: {i.pp} stages, {i.grad_accum} micro-batches per step"
                   + (f", {i.vpp} chunks per stage" if i.vpp > 1 else ""))
        fix, at = None, point_at(spec, "batch.micro_batch", "batch.grad_accum", "batch.global_batch")
        best = _best(spec, ctx, throughput_candidates(spec), lambda r: -r.time.pp_bubble / r.step_time,
                     float(ctx.options["headroom"]))
        if best is not None and -best[2] < share:
            candidate, result, _ = best
            fix = (f"with {candidate.spelling}: the bubble falls from {share:.0%} to {result.time.pp_bubble / result.step_time:.0%}, "
                   f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s")
            if first_span(spec.get(candidate.target))[1] is not None:
                at = candidate.target
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

    frameworks = ("megatron", "neox")
    code = "TL303"
    name = "tp-across-nodes"
    summary = "The tensor-parallel group spans nodes, so its per-layer all-reduces cross the network."
    default_severity = Severity.WARNING
    needs_estimate = True

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = ctx.estimate
        if not getattr(est, "ok", False) or est.inputs.tp <= est.inputs.gpus_per_node:
            return
        i = est.inputs
        message = (f"tensor parallel {i.tp} spans {i.tp // i.gpus_per_node} nodes of {i.gpus_per_node} GPUs: "
                   f"TP communication takes {est.time.tp_comm / est.step_time:.0%} of the step")
        fix = None
        best = _best(spec, ctx, throughput_candidates(spec), lambda r: r.tokens_per_s, 0.90)
        if best is not None and best[1].tokens_per_s > est.tokens_per_s:
            candidate, result, _ = best
            fix = f"with {candidate.spelling}: {est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s"
        yield Finding(message, at="parallel.tensor", fix=fix)


class MemoryBound(Rule):
    """## What it does
    Warns when the estimate is bound by HBM bandwidth rather than by compute or the network
    (seed 002's roofline: the memory rate is the lowest of the three): the time spent moving
    bytes (small GEMMs, element-wise kernels, unfused attention, the optimizer step) exceeds the
    time spent on FLOPs.

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
    name = "memory-bound"
    summary = "The step is bound by HBM bandwidth rather than compute (seed 002's roofline)."
    default_severity = Severity.WARNING
    needs_estimate = True

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = ctx.estimate
        if not getattr(est, "ok", False) or not est.fits or est.bound != "memory":
            return
        t = est.time
        message = (f"memory-bound: {t.bytes_time * 1e3:,.1f} ms moving bytes against {t.flops_time * 1e3:,.1f} ms of FLOPs per step "
                   f"(MFU {est.mfu:.1%})")
        fix, at = None, point_at(spec, "batch.micro_batch", "batch.grad_accum", "batch.global_batch")
        best = _best(spec, ctx, throughput_candidates(spec), lambda r: r.tokens_per_s, 0.90)
        if best is not None and best[1].tokens_per_s > est.tokens_per_s * 1.05:
            candidate, result, _ = best
            fix = (f"with {candidate.spelling}: bound {result.bound}, {est.tokens_per_s:,.0f} -> "
                   f"{result.tokens_per_s:,.0f} tokens/s")
            at = point_at(spec, candidate.target) or at
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

    frameworks = ("megatron", "neox")
    code = "TL305"
    name = "small-gemms"
    summary = "Micro-batch GEMMs are too small for the GPU (few tokens per micro-batch, or little hidden per TP rank)."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"min_tokens": Option(1024, "fewest tokens per micro-batch and GPU"),
               "min_hidden_per_tp": Option(512, "smallest hidden size per tensor-parallel rank")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = ctx.estimate
        if not getattr(est, "ok", False) or not est.fits:
            return
        i = est.inputs
        tokens = i.micro * i.seq // max(1, i.cp)
        per_rank = i.hidden // max(1, i.tp)
        small_tokens = tokens < int(ctx.options["min_tokens"])
        small_hidden = per_rank < int(ctx.options["min_hidden_per_tp"])
        if not (small_tokens or small_hidden):
            return
        parts = []
        if small_tokens:
            parts.append(f"{tokens} tokens per micro-batch and GPU (micro {i.micro} x sequence {i.seq}"
                         + (f" / CP {i.cp}" if i.cp > 1 else "") + ")")
        if small_hidden:
            parts.append(f"hidden {i.hidden} / TP {i.tp} = {per_rank} columns per rank")
        fix, at = None, ("batch.micro_batch" if small_tokens else "parallel.tensor")
        best = _best(spec, ctx, throughput_candidates(spec), lambda r: r.mfu, 0.90)
        if best is not None and best[1].mfu > est.mfu * 1.05:
            candidate, result, _ = best
            fix = f"with {candidate.spelling}: MFU {est.mfu:.1%} -> {result.mfu:.1%}"
            at = point_at(spec, candidate.target) or at
        yield Finding("small GEMMs: " + "; ".join(parts), at=at, fix=fix)


RULES: list[type] = [LowExpectedMfu, PipelineBubble, TensorParallelAcrossNodes, MemoryBound, SmallGemms]
