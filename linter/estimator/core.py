"""``estimate(spec, context)``: the Estimate, or what is missing to make one. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from trainlint.estimator import coefficients as C
from trainlint.estimator.context import EstimateContext, fill_run, fill_vocab
from trainlint.estimator.inputs import Assumption, Inputs, MissingInput, resolve
from trainlint.core.provenance import Origin
from trainlint.core.spec import TrainingSpec
from trainlint.core.numbers import long_numbers

if TYPE_CHECKING:  # pragma: no cover - memory and performance load with the first full estimate
    from trainlint.estimator.memory import StageMemory
    from trainlint.estimator.performance import TimeBreakdown


@dataclass
class MissingInputs:
    """The estimate could not be made: each item says what is missing and how to supply it."""

    spec_label: str
    missing: list[MissingInput]
    assumptions: list[Assumption] = field(default_factory=list)

    # a class constant, not a field; Literal lets a type checker tell the two results apart by it
    ok: ClassVar[Literal[False]] = False

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": None, "label": self.spec_label, "missing": [m.to_dict() for m in self.missing],
                "assumptions": [a.to_dict() for a in self.assumptions]}


@dataclass
class Estimate:
    """The estimator's result for one spec: its inputs, memory per pipeline stage, step time, FLOPs, tokens and parameters."""

    spec_label: str
    inputs: Inputs
    stages: list[StageMemory]
    time: TimeBreakdown
    model_flops_per_step: float
    hardware_flops_per_step: float
    tokens_per_step: float
    num_params: float
    capacity_bytes: float
    peak_flops_per_gpu: float
    assumptions: list[Assumption]

    ok: ClassVar[Literal[True]] = True

    @property
    def worst_stage(self) -> StageMemory:
        return max(self.stages, key=lambda s: s.total)

    @property
    def step_time(self) -> float:
        return self.time.step_time

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.step_time

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_s / self.inputs.world

    @property
    def mfu(self) -> float:
        return self.model_flops_per_step / (self.step_time * self.inputs.world * self.peak_flops_per_gpu)

    @property
    def hfu(self) -> float:
        return self.hardware_flops_per_step / (self.step_time * self.inputs.world * self.peak_flops_per_gpu)

    @property
    def fits(self) -> bool:
        return self.worst_stage.total <= self.capacity_bytes

    @property
    def verdict_assumptions(self) -> list[Assumption]:
        """The engine facts the memory verdict rests on that nothing stated, trainlint's assumption instead:
        the ZeRO stage (and with it the optimizer wrapper) of a DeepSpeed config that was not read. A "does not
        fit" on them is a verdict under an assumption, said as such (TL201 warns and names it; the accuracy
        benchmark counts it apart)."""
        return [a for a in self.assumptions if a.field in VERDICT_FACTS and a.origin == Origin.ASSUMED.value]

    @property
    def bound(self) -> str:
        """Seed 002's ceiling: which of compute (FLOPs), memory (HBM bytes) or network
        (exposed communication) takes the largest share of the step."""
        t = self.time
        shares = {"compute": t.flops_time, "memory": t.bytes_time, "network": t.net_time}
        return max(shares, key=lambda k: shares[k])

    def to_dict(self) -> dict[str, Any]:
        gib = C.GIB
        worst = self.worst_stage
        memory = {k: getattr(worst, k) / gib for k in ("params", "grads", "optimizer", "activations", "buffers", "overhead")}
        memory["total"] = worst.total / gib
        return {
            "label": self.spec_label,
            "gpu": self.inputs.gpu.id,
            "world_size": self.inputs.world,
            "memory_gib": memory,
            "capacity_gib": self.capacity_bytes / gib,
            "fits": self.fits,
            "worst_stage": worst.stage,
            "step_time_s": self.step_time,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "model_flops_per_step": self.model_flops_per_step,
            "hardware_flops_per_step": self.hardware_flops_per_step,
            "num_params": self.num_params,
            "bound": self.bound,
            "time_s": self.time.as_dict(),
            "stages": [
                {"stage": s.stage, "layers": s.layers, "microbatches_in_flight": s.in_flight,
                 **{k: getattr(s, k) / gib for k in ("params", "grads", "optimizer", "activations", "buffers", "overhead")},
                 "total": s.total / gib,
                 "detail_gib": {k: v / gib for k, v in s.detail.items()}}
                for s in self.stages
            ],
            "assumptions": [a.to_dict() for a in self.assumptions],
        }


VERDICT_FACTS = frozenset({"engine.shard_stage", "engine.optimizer_owner"})
"""Assumed engine facts that decide how much of the model state a GPU holds (:attr:`Estimate.verdict_assumptions`)."""


class InvariantError(RuntimeError):
    """An estimate broke one of its invariants (MFU in (0, 1], finite non-negative memory, a positive
    step time, tokens per step = micro x accumulation x DP x seq): an estimator bug, reported as an
    internal error (TL999) instead of a number."""


def check_invariants(est: Estimate) -> None:
    import math

    i = est.inputs
    problems = []
    mfu = est.mfu
    if not (math.isfinite(mfu) and 0.0 < mfu <= 1.0):
        problems.append(f"MFU {mfu:.3g} outside (0, 1]")
    if not (math.isfinite(est.step_time) and est.step_time > 0):
        problems.append(f"step time {est.step_time!r} s")
    for s in est.stages:
        if not math.isfinite(s.total) or min(s.params, s.grads, s.optimizer, s.activations, s.buffers, s.overhead) < 0:
            problems.append(f"memory of stage {s.stage} is {s.total!r} bytes (a component is negative or not finite)")
            break
    if est.tokens_per_step != float(i.micro * i.grad_accum * i.dp * i.seq):
        problems.append(f"tokens per step {est.tokens_per_step:g} != micro x accumulation x DP x seq "
                        f"= {i.micro * i.grad_accum * i.dp * i.seq}")
    if problems:
        raise InvariantError(f"estimate of {est.spec_label or 'the run'} broke its invariants: " + "; ".join(problems))


def estimate_inputs(inputs: Inputs, label: str = "") -> Estimate:
    # imported here: a run that lacks inputs (MissingInputs) never needs them
    from trainlint.estimator.memory import stage_memory, total_params
    from trainlint.estimator.performance import hardware_flops_per_step, model_flops_per_step, peak_flops, step_time

    stages = stage_memory(inputs)
    time = step_time(inputs)
    est = Estimate(
        spec_label=label, inputs=inputs, stages=stages, time=time,
        model_flops_per_step=model_flops_per_step(inputs),
        hardware_flops_per_step=hardware_flops_per_step(inputs),
        tokens_per_step=float(inputs.global_batch * inputs.seq),
        num_params=total_params(inputs),
        capacity_bytes=inputs.gpu.memory_bytes,
        peak_flops_per_gpu=peak_flops(inputs),
        assumptions=inputs.assumptions,
    )
    check_invariants(est)
    return est


def estimate(spec: TrainingSpec, ctx: EstimateContext) -> Estimate | MissingInputs:
    """Memory, time, throughput and MFU of one run, or the list of what is missing."""
    label = spec.label or spec.path
    # config values clamped at 4,300 digits, and their products, are formatted in messages
    with long_numbers():
        filled = fill_vocab(fill_run(spec, ctx.run_fill), ctx.vocab)
        if ctx.model is not None:  # the model presets' module only for a named model (issue 33: cold start)
            from trainlint.presets.models import fill_model

            filled = fill_model(filled, ctx.model)
        inputs, missing, assumptions = resolve(filled, ctx)
        if inputs is None:
            return MissingInputs(label, missing, assumptions)
        return estimate_inputs(inputs, label)
