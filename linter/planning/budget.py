"""Pure functions for planning a training run (seeds 000 and 001).

Training compute follows C = 6 * P * D (model FLOPs: 2 forward + 4 backward per parameter per token).
Wall time = C / (gpus * peak_flops_per_gpu * mfu). Budget = gpus * hours * price_per_gpu_hour.
Budget, time and MFU are interchangeable: given the GPU count, any two determine the third; when the
GPU count is not given it follows from budget and time (gpus = budget / (price * hours)).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

SECONDS_PER_DAY = 86400.0
_SUFFIX = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}


class PlanError(ValueError):
    """Inputs that do not determine a plan (too few / too many of days, budget, MFU)."""


def parse_count(text: str | float | int) -> float:
    """'30B' -> 3e10, '2T' -> 2e12, '600e9' -> 6e11, '1.5e12', '2,000,000', '$2M' / 'USD 2M' -> 2e6.

    Raises ValueError (with the text) for anything else, and for infinities and NaN."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        s = str(text).strip().replace(",", "").replace("_", "")
        for prefix in ("$", "USD", "usd"):
            if s.startswith(prefix):
                s = s[len(prefix):].strip()
        try:
            value = float(s[:-1]) * _SUFFIX[s[-1].upper()] if s and s[-1].upper() in _SUFFIX else float(s)
        except ValueError:
            raise ValueError(f"not a number: {text!r} (e.g. 30B, 2T, 1.5e12, 2M)") from None
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def training_flops(params: float, tokens: float, hardware_factor: float = 1.0) -> float:
    """Model FLOPs 6*P*D; hardware_factor (HFU/MFU, e.g. 4/3 with full recompute) scales to hardware FLOPs."""
    return 6.0 * params * tokens * hardware_factor


def train_time_s(flops: float, gpus: float, peak_flops_per_gpu: float, mfu: float) -> float:
    return flops / (gpus * peak_flops_per_gpu * mfu)


def gpu_hours(time_s: float, gpus: float) -> float:
    return gpus * time_s / 3600.0


def cost(time_s: float, gpus: float, price_per_gpu_hour: float) -> float:
    return gpu_hours(time_s, gpus) * price_per_gpu_hour


def round_gpus(gpus: float, multiple: int) -> int:
    """Round a GPU count down to a multiple (whole nodes, or the seed's 'practical value')."""
    multiple = max(1, int(multiple))
    return max(multiple, math.floor(gpus / multiple + 1e-9) * multiple)


@dataclass
class Plan:
    params: float
    tokens: float
    peak_flops_per_gpu: float
    flops: float
    gpus: int
    days: float
    mfu: float
    price_per_gpu_hour: float | None
    budget: float | None
    gpu_hours: float
    gpus_from_budget: float | None = None  # before rounding
    budget_limit: float | None = None  # the --budget given; `budget` is the spend at the solved plan
    solved: list[str] = field(default_factory=list)
    days_limit: float | None = None  # the --days given when GPUs and MFU fix the time; `days` is that time

    @property
    def over_budget(self) -> bool:
        """The plan spends more than the budget (GPUs given or rounded up past what it pays for)."""
        return self.budget_limit is not None and self.budget is not None and self.budget > self.budget_limit * (1 + 1e-9)

    @property
    def over_days(self) -> bool:
        return self.days_limit is not None and self.days > self.days_limit * (1 + 1e-9)

    @property
    def required_flops_per_s(self) -> float:
        return self.flops / (self.days * SECONDS_PER_DAY)

    @property
    def tokens_per_param(self) -> float:
        return self.tokens / self.params

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["required_flops_per_s"] = self.required_flops_per_s
        d["tokens_per_param"] = self.tokens_per_param
        d["over_budget"] = self.over_budget
        d["over_days"] = self.over_days
        return d


def solve(*, params: float, tokens: float, peak_flops_per_gpu: float, gpus: int | None = None,
          days: float | None = None, budget: float | None = None, mfu: float | None = None,
          price_per_gpu_hour: float | None = None, gpu_multiple: int = 8) -> Plan:
    """Solve the triangle. Give exactly two of (days, budget, mfu), or one of days / mfu with gpus.

    - days + budget (+ price): gpus = budget / (price * 24 * days), rounded down to gpu_multiple
      (unless gpus given); then mfu = flops / (gpus * peak * seconds).
    - days + mfu: gpus (if not given) = ceil to gpu_multiple of flops / (peak * mfu * seconds); budget from price.
    - budget + mfu (+ price, gpus): time = flops / (gpus*peak*mfu); must match budget / (gpus*price).
      Without gpus: gpu-seconds are fixed by mfu, so gpus cannot be solved (PlanError).
    - days + gpus: mfu = flops / (gpus * peak * seconds) (seed 000's exercise 2 read backwards).
    - mfu + gpus: time = flops / (gpus * peak * mfu).
    """
    flops = training_flops(params, tokens)
    given = [n for n, v in (("days", days), ("budget", budget), ("mfu", mfu)) if v is not None]
    if len(given) < 2 and not (len(given) == 1 and gpus is not None and given[0] in ("mfu", "days")):
        raise PlanError("give two of --days, --budget, --mfu (or --mfu or --days with --gpus)")
    if budget is not None and not price_per_gpu_hour:
        raise PlanError("--budget needs a price per GPU-hour (--price-per-gpu-hour or project `prices`)")
    solved: list[str] = []
    from_budget = None
    budget_limit = budget
    days_limit: float | None = None
    if len(given) == 3:
        raise PlanError("give only two of --days, --budget, --mfu; the third is solved")
    if given == ["days"]:  # GPUs and time given: the MFU they need
        assert days is not None and gpus is not None  # one of (days, mfu) is accepted only with gpus
        mfu = train_time_s(flops, gpus, peak_flops_per_gpu, 1.0) / (days * SECONDS_PER_DAY)
        solved.append("mfu")
    elif days is not None and budget is not None:
        assert price_per_gpu_hour  # a budget without a price was refused above
        from_budget = budget / (price_per_gpu_hour * 24.0 * days)
        if gpus is None:
            gpus = round_gpus(from_budget, gpu_multiple)
            solved.append("gpus")
        mfu = train_time_s(flops, gpus, peak_flops_per_gpu, 1.0) / (days * SECONDS_PER_DAY)
        solved.append("mfu")
    elif days is not None and mfu is not None:
        if gpus is not None:  # GPUs and MFU fix the time: the given days become a limit to check
            days_limit, days = days, train_time_s(flops, gpus, peak_flops_per_gpu, mfu) / SECONDS_PER_DAY
            solved.append("days")
        else:
            need = flops / (peak_flops_per_gpu * mfu * days * SECONDS_PER_DAY)
            m = max(1, gpu_multiple)
            gpus = math.ceil(need / m - 1e-9) * m
            solved.append("gpus")
            days = train_time_s(flops, gpus, peak_flops_per_gpu, mfu) / SECONDS_PER_DAY
        budget = None
        solved.append("budget")
    else:  # mfu with budget (or mfu + gpus alone)
        assert mfu is not None  # every other pair of the three is a branch above
        if gpus is None:
            raise PlanError("with --budget and --mfu the GPU count is free: give --gpus or --days")
        days = train_time_s(flops, gpus, peak_flops_per_gpu, mfu) / SECONDS_PER_DAY
        solved.append("days")
        if budget is not None:
            solved.append("budget check")
        budget = None
    assert days is not None and gpus is not None and mfu is not None  # each branch solved what was missing
    hours = gpu_hours(days * SECONDS_PER_DAY, gpus)
    budget = hours * price_per_gpu_hour if price_per_gpu_hour else None
    return Plan(params=params, tokens=tokens, peak_flops_per_gpu=peak_flops_per_gpu, flops=flops, gpus=int(gpus),
                days=days, mfu=mfu, price_per_gpu_hour=price_per_gpu_hour, budget=budget, gpu_hours=hours,
                gpus_from_budget=from_budget, budget_limit=budget_limit, solved=solved,
                days_limit=days_limit)


@dataclass
class RunTotals:
    tokens: float
    time_s: float
    gpus: int
    gpu_hours: float
    model_flops: float
    hardware_flops: float
    cost: float | None
    price_per_gpu_hour: float | None

    @property
    def days(self) -> float:
        return self.time_s / SECONDS_PER_DAY

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["days"] = self.days
        return d


def run_totals(est: Any, tokens: float, price_per_gpu_hour: float | None = None) -> RunTotals:
    """Whole-run figures from an estimator Estimate (per-step figures scaled to `tokens`)."""
    steps = tokens / est.tokens_per_step
    time_s = steps * est.step_time
    gpus = int(est.inputs.world)
    hours = gpu_hours(time_s, gpus)
    return RunTotals(tokens=tokens, time_s=time_s, gpus=gpus, gpu_hours=hours,
                     model_flops=steps * est.model_flops_per_step, hardware_flops=steps * est.hardware_flops_per_step,
                     cost=hours * price_per_gpu_hour if price_per_gpu_hour else None,
                     price_per_gpu_hour=price_per_gpu_hour)
