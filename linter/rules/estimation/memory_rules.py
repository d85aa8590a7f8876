"""TL2xx: memory per GPU against the GPU's capacity."""

from __future__ import annotations

from typing import Iterator

from trainlint.framework import CAP_DEEPSPEED_ENGINE
from trainlint.diagnostics import Applicability, Severity
from trainlint.estimator import coefficients as C
from trainlint.estimator.core import InvariantError
from trainlint.provenance import Origin, Provenance, Value
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.world_bound import memory_verdict
# The fix search (rules.estimation.fixes) is imported by a check once it has a finding to fix: the
# checks of most configs find nothing, and a start that imports it pays ~1.5 ms for nothing.
from trainlint.spec import TrainingSpec

_COMPONENTS = ("params", "grads", "optimizer", "activations", "buffers", "overhead")


def _gib(x: float) -> str:
    return f"{x / C.GIB:.1f}"


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
        verdict = memory_verdict(spec, ctx.estimate, ctx.estimator, ctx.shared)
        if verdict is None:
            return
        # With the world size unstated, the least memory over every data-parallel size the config
        # allows is judged, and the fix is searched at that size: both hold whatever the world.
        est, spec = verdict.estimate, verdict.spec
        headroom = float(ctx.options["headroom"])
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


def _gpu_assumed(est) -> bool:
    """True when no flag, project config or file named the GPU (the estimate used the default)."""
    return any(a.field == "cluster.gpu" and a.origin == Origin.ASSUMED.value for a in est.assumptions)


def _zero_stage_assumed(est) -> bool:
    """True when DeepSpeed's engine runs the step but its ZeRO stage is not known (assumed 0)."""
    return any(a.field == "engine.shard_stage" and a.origin == Origin.ASSUMED.value for a in est.assumptions)


class BuffersDominateMemory(Rule):
    """## What it does
    Warns when DeepSpeed's communication buffers (the reduce and all-gather buckets of ZeRO
    1/2, the live parameters and prefetch of ZeRO-3) take more than a share (default 20%) of
    the estimated memory per GPU, and the run is tight on memory: it uses more than ``headroom``
    (default 90%, TL201's warning level) of the GPU. A run with room to spare loses nothing to
    its buffers.

    ## Why is this bad?
    The buckets are sized in elements, not bytes, with defaults (5e8) chosen for large clusters;
    on a small model they can cost more than the model's own state, and the memory they take
    is memory a larger micro batch could use.

    ## Example
    `"reduce_bucket_size": 2e9` on a 1B-parameter model.

    ## Fix
    Smaller `reduce_bucket_size` / `allgather_bucket_size` (or `stage3_max_live_parameters`);
    the finding quotes the re-estimated memory.
    """

    code = "TL202"
    release_dependent = False
    name = "buffers-dominate-memory"
    summary = "DeepSpeed's communication buffers take more than the threshold share of GPU memory."
    default_severity = Severity.WARNING
    requires = frozenset({CAP_DEEPSPEED_ENGINE})
    needs_estimate = True
    options = {"threshold": Option(0.20, "warn when buffers exceed this share of the estimated memory"),
               "headroom": Option(0.90, "speak only when the run uses more than this fraction of the GPU's memory "
                                        "(buffers matter when memory is tight)")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        verdict = memory_verdict(spec, ctx.estimate, ctx.estimator, ctx.shared)
        if verdict is None:
            return
        threshold, headroom = float(ctx.options["threshold"]), float(ctx.options["headroom"])
        # With the world size unstated: only when the buffers are over the share and the run is
        # tight at every data-parallel size tried (the least-memory one is quoted).
        for sample in verdict.samples or (verdict.estimate,):
            if not _buffers_tight(sample, threshold, headroom):
                return
        est, spec = verdict.estimate, verdict.spec
        worst = est.worst_stage
        share = worst.buffers / worst.total if worst.total else 0.0
        used = worst.total / est.capacity_bytes if est.capacity_bytes else 0.0
        i = est.inputs
        keys: tuple[str, ...] = ("zero_optimization.reduce_bucket_size", "zero_optimization.allgather_bucket_size")
        if i.shard_stage >= 3:
            keys = ("zero_optimization.stage3_max_live_parameters", "zero_optimization.max_live_parameters",
                    "zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size")
        fix = None
        if ctx.estimator is not None:
            # the engine's buckets (the adapter's reading of reduce_bucket_size, allgather_bucket_size,
            # stage3_max_live_parameters, stage3_prefetch_bucket_size) at 5e7
            modified = spec.copy()
            smaller = Value(5e7, Provenance(Origin.ASSUMED, note="candidate fix"))
            for name in ("reduce_bucket", "allgather_bucket", "zero3_max_live", "zero3_prefetch"):
                setattr(modified.engine, name, smaller)
            try:
                result = ctx.estimator(modified)
            except InvariantError:
                result = None
            if getattr(result, "ok", False) and result.worst_stage.buffers < worst.buffers:
                fix = (f"with the bucket sizes at 5e7: buffers {_gib(result.worst_stage.buffers)} GiB, total "
                       f"{_gib(result.worst_stage.total)} of {_gib(result.capacity_bytes)} GiB")
        # file text: the finding points at the first of the bucket keys written in the JSON
        at = next((f"settings:{k}" for k in keys if k in spec.settings), "parallel.zero_stage")
        note = f" ({verdict.note})" if verdict.note else ""
        yield Finding(f"DeepSpeed buffers take {_gib(worst.buffers)} of {_gib(worst.total)} GiB per GPU ({share:.0%}), "
                      f"and the run uses {used:.0%} of the {_gib(est.capacity_bytes)} GiB GPU{note}",
                      at=at, fix=fix, applicability=Applicability.UNSAFE if fix else None)


def _buffers_tight(est, threshold: float, headroom: float) -> bool:
    """Buffers over ``threshold`` of the worst stage, and that stage over ``headroom`` of the GPU:
    buffers are worth shrinking only when memory is tight (a run at 22% of the GPU loses nothing
    to them, issue 17; one above the headroom may not start)."""
    worst = est.worst_stage
    share = worst.buffers / worst.total if worst.total else 0.0
    used = worst.total / est.capacity_bytes if est.capacity_bytes else 0.0
    return share > threshold and used > headroom


RULES: list[type] = [OomRisk, BuffersDominateMemory]
