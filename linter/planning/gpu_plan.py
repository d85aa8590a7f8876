"""One plan on one GPU kind (``trainlint plan``, ``plan --compare-gpus``): the model's size, the
budget / time / MFU triangle solved on the GPU's peak, and what the plan says about itself
(an MFU out of reach, over budget or time, too few GPUs to hold the static memory).

C = 6 * P * D; time = C / (gpus * peak * MFU); cost = gpus * hours * price per GPU-hour
(:mod:`trainlint.planning.budget`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from trainlint.planning.budget import SECONDS_PER_DAY, Plan, PlanError, solve
from trainlint.planning.sizing import min_gpus_for_static_memory, mfu_verdict, per_gpu_tokens_per_s, usd_per_tbps_hour

if TYPE_CHECKING:  # pragma: no cover - the catalog loads with the command
    from trainlint.presets.catalog import GPU
    from trainlint.presets.models import ModelPreset


class PlanInputError(ValueError):
    """Inputs that describe no model or no plan (``--layers`` without ``--hidden``...)."""


@dataclass
class Model:
    params: float  # active parameters: the FLOPs of a token (6 P)
    total: float  # all parameters: the memory (16 bytes each)
    label: str
    note: str = ""


def si(x: float, unit: str = "") -> str:
    """1.3e9 -> "1.3B": how planning writes counts."""
    for f, s in ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= f:
            return f"{x / f:.3g}{s}{unit}"
    return f"{x:.3g}{unit}"


def model_from_preset(preset: ModelPreset) -> Model:
    """A model preset's active and total parameters (they differ for a mixture of experts)."""
    count = preset.params()
    moe = count.active != count.total
    return Model(float(count.active), float(count.total), preset.id,
                 f"{si(count.active)} active of {si(count.total)}" if moe else "")


def model_from_shape(layers: int, hidden: int | None, vocab: int) -> Model:
    """P = 12 L H^2 + 2 V H (a GPT decoder: attention and a 4H MLP per layer, embeddings and output)."""
    if not hidden or layers < 1 or hidden < 1 or vocab < 0:
        raise PlanInputError("--layers needs --hidden (positive), and --vocab must not be negative")
    params = 12.0 * layers * hidden ** 2 + 2.0 * vocab * hidden
    return Model(params, params, f"{si(params)}", f"12 x {layers} x {hidden}^2 + 2 x {vocab} x {hidden}")


def model_from_count(text: str) -> Model:
    """``--params 30B``."""
    from trainlint.planning.budget import parse_count

    try:
        params = parse_count(text)
    except ValueError as exc:
        raise PlanInputError(f"--params: {exc}") from None
    if params <= 0:
        raise PlanInputError("--params must be > 0")
    return Model(params, params, si(params))


@dataclass(frozen=True)
class PlanRequest:
    """What the user fixed (None: solved): any two of days (or a throughput), budget and MFU."""

    dtype: str = "bf16"
    gpus: int | None = None
    days: float | None = None
    target_tokens_per_s: float | None = None
    budget: float | None = None
    mfu: float | None = None
    round_gpus: int = 8


NO_LAYOUT_BASIS = ("6PD arithmetic: no layout given, so the time is 6 P D over the GPUs' peak at the utilisation "
                   "given or solved, and memory the static floor; give the run's config (trainlint plan CONFIG ...) "
                   "to size it with the estimator")


@dataclass
class Solved:
    """One GPU kind's plan and the figures derived from it."""

    gpu: GPU
    peak_t: float
    plan: Plan
    price_source: str
    static_gpus: int
    notes: list[str] = field(default_factory=list)
    estimate: Any = None
    """The estimator's Estimate of the layout the plan sizes (None: no layout, 6PD arithmetic)."""

    @property
    def per_gpu_tokens_per_s(self) -> float:
        if self.estimate is not None:
            return float(self.estimate.tokens_per_s_per_gpu)
        return per_gpu_tokens_per_s(self.plan.params, self.plan.peak_flops_per_gpu, self.plan.mfu)

    @property
    def basis(self) -> str:
        if self.estimate is None:
            return NO_LAYOUT_BASIS
        return ("the estimator, as `trainlint estimate` (the layout's step time and memory per GPU; "
                "MFU counted with the estimator's model FLOPs)")

    @property
    def infeasible(self) -> bool:
        if self.estimate is not None:
            return self.plan.over_budget or self.plan.over_days or not self.estimate.fits
        return self.plan.mfu > 1.0 or self.plan.over_budget or self.plan.over_days or self.plan.gpus < self.static_gpus

    def to_dict(self) -> dict[str, Any]:
        d = self.plan.to_dict()
        price = self.plan.price_per_gpu_hour
        d.update(gpu=self.gpu.id, name=self.gpu.name, peak_tflops=self.peak_t, price_source=self.price_source,
                 tokens_per_s=self.per_gpu_tokens_per_s * self.plan.gpus,
                 tokens_per_s_per_gpu=self.per_gpu_tokens_per_s,
                 cost_per_hour=self.plan.gpus * price if price else None,
                 usd_per_tbps_hour=usd_per_tbps_hour(price, self.gpu.hbm_bandwidth_tbps),
                 hbm_bandwidth_tbps=self.gpu.hbm_bandwidth_tbps,
                 min_gpus_for_static_memory=self.static_gpus, infeasible=self.infeasible, notes=self.notes,
                 basis=self.basis)
        if self.estimate is not None:
            e = self.estimate
            d.update(mfu=e.mfu, memory_gib=e.worst_stage.total / 2**30, capacity_gib=e.capacity_bytes / 2**30,
                     fits=e.fits, step_time_s=e.step_time, world_size=e.inputs.world)
        return d


def target_days(tokens: float, target_tokens_per_s: float) -> float:
    """Days to train ``tokens`` at ``target_tokens_per_s``."""
    return tokens / target_tokens_per_s / SECONDS_PER_DAY


def solve_on_gpu(gpu: GPU, model: Model, tokens: float, request: PlanRequest,
                 price: float | None, price_source: str) -> Solved:
    """The plan on ``gpu``'s dense peak for ``request.dtype``. Raises PlanError."""
    peak_t = gpu.peak_tflops(request.dtype)
    if not peak_t:
        raise PlanError(f"{gpu.id} has no {request.dtype} peak in the catalog")
    days = request.days
    if request.target_tokens_per_s:
        days = target_days(tokens, request.target_tokens_per_s)
    plan = solve(params=model.params, tokens=tokens, peak_flops_per_gpu=peak_t * 1e12, gpus=request.gpus, days=days,
                 budget=request.budget, mfu=request.mfu, price_per_gpu_hour=price, gpu_multiple=request.round_gpus)
    static = min_gpus_for_static_memory(model.total, gpu.memory_bytes)
    notes = []
    verdict = mfu_verdict(plan.mfu) if "mfu" in plan.solved else None
    if verdict:
        notes.append(verdict)
    if plan.over_budget:
        notes.append(f"over budget: USD {plan.budget:,.0f} > USD {plan.budget_limit:,.0f}")
    if plan.over_days:
        notes.append(f"over time: {plan.days:.1f} days > {plan.days_limit:g}")
    if plan.gpus < static:
        notes.append(f"too few GPUs: {plan.gpus} < {static} needed to hold weights, gradients and Adam states")
    return Solved(gpu, peak_t, plan, price_source, static, notes)


def by_cost(solved: Sequence[Solved]) -> list[Solved]:
    """Cheapest first (equal costs: the lowest required MFU, the easiest plan); plans without a price
    by time; impossible ones last."""
    return sorted(solved, key=lambda s: (s.infeasible, s.plan.budget is None, round(s.plan.budget or 0.0, 2),
                                         s.plan.mfu if "mfu" in s.plan.solved else 0.0, s.plan.days))


def solve_from_estimate(est: Any, tokens: float, request: PlanRequest, price: float | None,
                        price_source: str) -> Solved:
    """The plan of a given layout: its GPUs (the estimate's world size) and its tokens/s (the
    estimator's step time), so that the days, GPU-hours and cost are those ``trainlint estimate
    --tokens`` prints for the same run (planning.budget.run_totals). The budget / time limits are
    checked against it; the MFU is not an input (the estimator gives it). Raises PlanInputError."""
    if request.mfu is not None:
        raise PlanInputError("--mfu is what the estimator computes for a layout: drop it, or drop the config "
                             "to plan with 6PD arithmetic at a given MFU")
    world = int(est.inputs.world)
    if request.gpus is not None and request.gpus != world:
        raise PlanInputError(f"--gpus {request.gpus}: the layout runs on {world} GPUs "
                             "(change it with --nodes / --gpus-per-node)")
    if request.target_tokens_per_s:
        raise PlanInputError("--target-tokens-per-s sizes a cluster at a given MFU; with a layout use "
                             "`trainlint estimate --compare-gpus --same-throughput`")
    gpu = est.inputs.gpu
    peak = float(est.peak_flops_per_gpu)
    params = float(est.num_params)
    # the 6PD MFU at which the triangle's time equals the estimator's: time = D / tokens_per_s
    mfu_6pd = 6.0 * params * est.tokens_per_s / (world * peak)
    plan = solve(params=params, tokens=tokens, peak_flops_per_gpu=peak, gpus=world, days=request.days,
                 mfu=mfu_6pd, price_per_gpu_hour=price, gpu_multiple=1)
    plan.mfu = float(est.mfu)
    if request.budget is not None:
        if not price:
            raise PlanError("--budget needs a price per GPU-hour (--price-per-gpu-hour or project `prices`)")
        plan.budget_limit = request.budget
    notes = []
    if plan.over_budget:
        notes.append(f"over budget: USD {plan.budget:,.0f} > USD {plan.budget_limit:,.0f}")
    if plan.over_days:
        notes.append(f"over time: {plan.days:.1f} days > {plan.days_limit:g}")
    if not est.fits:
        worst = est.worst_stage
        notes.append(f"does not fit: {worst.total / 2**30:.1f} GiB per GPU on pipeline stage {worst.stage} "
                     f"of {est.capacity_bytes / 2**30:.1f} GiB")
    return Solved(gpu, peak / 1e12, plan, price_source, 0, notes, estimate=est)
