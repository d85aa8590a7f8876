"""Planning arithmetic: training FLOPs, time, GPU-hours, cost and the budget/time/MFU triangle (budget),
sizing from the seeds (sizing), and where the run length and prices come from (inputs).

The names below are imported from their module on first use: a check reads the run length
(:mod:`.inputs`) for the TL5xx rules and rarely needs the arithmetic (~1.5 ms to import)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.planning.budget import (  # noqa: F401
        Plan, PlanError, cost, gpu_hours, parse_count, round_gpus, run_totals, solve, train_time_s, training_flops,
    )
    from trainlint.planning.sizing import (  # noqa: F401
        compute_optimal_tokens, gpus_for_throughput, min_gpus_for_static_memory, mfu_verdict, per_gpu_tokens_per_s,
        usd_per_tbps_hour, valid_world_sizes,
    )

_WHERE = {
    **dict.fromkeys(("Plan", "PlanError", "cost", "gpu_hours", "parse_count", "round_gpus", "run_totals", "solve",
                     "train_time_s", "training_flops"), "budget"),
    **dict.fromkeys(("compute_optimal_tokens", "gpus_for_throughput", "min_gpus_for_static_memory", "mfu_verdict",
                     "per_gpu_tokens_per_s", "usd_per_tbps_hour", "valid_world_sizes"), "sizing"),
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
