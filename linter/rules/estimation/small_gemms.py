"""TL305: Micro-batch GEMMs are too small for the GPU (few tokens per micro-batch, or little hidden per TP rank)."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec


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
        est = usable(spec, ctx)
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
