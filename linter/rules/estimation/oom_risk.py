"""TL201: The estimated memory per GPU exceeds the GPU's memory (error) or the headroom (warning)."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.world_bound import verdict_of
from trainlint.core.spec import TrainingSpec
from trainlint.rules.estimation.memory_helpers import _gib, _gpu_assumed


_COMPONENTS = ("params", "grads", "optimizer", "activations", "buffers", "overhead")


def _zero_stage_assumed(est) -> bool:
    """True when DeepSpeed's engine runs the step but its ZeRO stage is not known (assumed 0): the estimate's
    verdict rests on an assumed engine fact (Estimate.verdict_assumptions, which the accuracy benchmark reads too)."""
    return any(a.field == "engine.shard_stage" for a in est.verdict_assumptions)


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

    When the config does not say how many GPUs it runs on (a GPT-NeoX YAML without a hostfile or
    ``num_gpus``, a launch with no GPU count), the memory per GPU is judged at its least over every
    data-parallel size the config allows (1 to 131,072; DP enters only through ZeRO / distributed
    optimizer sharding and batch members derived from DP), so an OOM reported there is one at every
    world size; the finding says so. A Megatron argument list without a launch line is not judged:
    the script that uses it decides the layout.

    ## Fix
    The finding proposes the smallest change that brings the estimate under the headroom,
    re-estimated: selective or full recompute, a smaller micro batch with more accumulation,
    the distributed optimizer, a higher ZeRO stage.

    ## References
    Korthikanti et al. 2022 (activation memory); Rajbhandari et al. 2020 (ZeRO);
    "Transformer Math 101" (EleutherAI, 2023).
    """

    code = "TL201"
    release_dependent = False
    name = "oom-risk"
    summary = "The estimated memory per GPU exceeds the GPU's memory (error) or the headroom (warning)."
    default_severity = Severity.ERROR
    needs_estimate = True
    options = {"headroom": Option(0.90, "warn above this fraction of the GPU's memory")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        headroom = float(ctx.options["headroom"])
        lazy = verdict_of(spec, ctx.estimate, ctx.estimator, ctx.shared)
        if lazy.least_within(headroom):
            return  # within the headroom (told by the first data-parallel size that is, when one is tried)
        verdict = lazy.verdict()
        if verdict is None:
            return
        # With the world size unstated, the least memory over every data-parallel size the config
        # allows is judged, and the fix is searched at that size: both hold whatever the world.
        est, spec = verdict.estimate, verdict.spec
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
        from trainlint.rules.estimation.fixes import (chain_changes, final_changes, fits, layout_sentence,
                                                      memory_candidates, point_at, search_closest, suggest_layout)

        fix, at = None, point_at(spec, "batch.micro_batch", "batch.grad_accum", "batch.global_batch")
        changes = None
        if ctx.estimator is not None:
            found = search_closest(spec, lambda s: memory_candidates(s, ctx.adapters), ctx.estimator,
                                   accept=lambda e: fits(e, headroom),
                                   score=lambda e: e.worst_stage.total)
            if found is not None and found[1].worst_stage.total < worst.total:
                chain, result, resolved = found
                final, spelled = final_changes(chain, spec, ctx.adapters)
                fix = (f"with {spelled}: {_gib(result.worst_stage.total)} of "
                       f"{_gib(result.capacity_bytes)} GiB, {result.tokens_per_s:,.0f} tokens/s "
                       f"(now {est.tokens_per_s:,.0f})")
                if resolved:  # check --fix has the run's adapter write it (unsafe: it changes the run)
                    changes = chain_changes(spec, chain)
                else:  # nothing in reach of one config file fits: say how far it gets
                    fix = (f"no change tried brings it under {headroom:.0%}; the closest, " + fix
                           + "; more GPUs or a larger GPU are needed")
                # Point at the first value the fix changes that is written somewhere; a default
                # (recompute off, TP 1) has no place in the file, the micro batch usually does.
                at = point_at(spec, *(c.target for c in final)) or at
            if found is None or not found[2]:
                # No change to one setting is enough: the whole-layout search (trainlint suggest).
                layout = suggest_layout(spec, ctx, headroom, current=est)
                if layout is not None:
                    fix = f"no single change brings it under {headroom:.0%}; {layout_sentence(layout, est)}"
        severity = Severity.ERROR if over else Severity.WARNING
        if over and _gpu_assumed(est):
            # An out-of-memory *error* against a GPU nobody named is a guess about the hardware: a
            # script written for a 96 GB GH200 is not wrong because it exceeds an assumed 80 GB H100.
            # Said as a warning that names the assumption; --gpu (or `gpu = ...`) makes it a verdict.
            severity = Severity.WARNING
            message += " (the GPU is assumed, not given: pass --gpu ID or set `gpu = ...` in [tool.trainlint])"
        elif over and _zero_stage_assumed(est):
            # The DeepSpeed config that says the ZeRO stage and the offload was not read (its path is
            # only known at launch): the estimate assumed ZeRO 0 without offload, the most memory a
            # run can take. A ZeRO-Offload example is not wrong for exceeding that guess.
            severity = Severity.WARNING
            message += (" (the ZeRO stage is assumed: the DeepSpeed config was not read statically, and ZeRO or "
                        "optimizer offload would lower this figure)")
        if verdict.note:
            message += f" ({verdict.note})"
        yield Finding(message, at=at, fix=fix, severity=severity, changes=changes)
