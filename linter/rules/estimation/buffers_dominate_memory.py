"""TL202: DeepSpeed's communication buffers take more than the threshold share of GPU memory."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_DEEPSPEED_ENGINE
from trainlint.core.diagnostics import Applicability, Severity
from trainlint.estimator.core import InvariantError
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.world_bound import verdict_of
from trainlint.core.spec import TrainingSpec
from trainlint.rules.estimation.memory_helpers import _gib


def _buffers_tight(est, threshold: float, headroom: float) -> bool:
    """Buffers over ``threshold`` of the worst stage, and that stage over ``headroom`` of the GPU:
    buffers are worth shrinking only when memory is tight (a run at 22% of the GPU loses nothing
    to them, issue 17; one above the headroom may not start)."""
    worst = est.worst_stage
    share = worst.buffers / worst.total if worst.total else 0.0
    used = worst.total / est.capacity_bytes if est.capacity_bytes else 0.0
    return share > threshold and used > headroom


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
        lazy = verdict_of(spec, ctx.estimate, ctx.estimator, ctx.shared)
        if not lazy.exists():
            return
        threshold, headroom = float(ctx.options["threshold"]), float(ctx.options["headroom"])
        # With the world size unstated: only when the buffers are over the share and the run is
        # tight at every data-parallel size tried (the least-memory one is quoted); the sizes are
        # estimated as they are asked for, so the first that is not tight ends it.
        for sample in lazy.iter_samples():
            if not _buffers_tight(sample, threshold, headroom):
                return
        verdict = lazy.verdict()
        assert verdict is not None  # lazy.exists()
        if not verdict.samples and not _buffers_tight(verdict.estimate, threshold, headroom):
            return  # the world size stated: its own estimate
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
