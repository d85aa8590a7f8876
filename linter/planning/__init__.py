"""Planning arithmetic: training FLOPs, time, GPU-hours, cost and the budget/time/MFU triangle."""

from trainlint.planning.budget import (  # noqa: F401
    Plan, PlanError, cost, gpu_hours, parse_count, round_gpus, run_totals, solve, train_time_s, training_flops,
)
