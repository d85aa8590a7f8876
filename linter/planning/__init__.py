"""Planning arithmetic: training FLOPs, time, GPU-hours, cost and the budget/time/MFU triangle (budget),
sizing from the seeds (sizing), and where the run length and prices come from (inputs)."""

from trainlint.planning.budget import (  # noqa: F401
    Plan, PlanError, cost, gpu_hours, parse_count, round_gpus, run_totals, solve, train_time_s, training_flops,
)
from trainlint.planning.sizing import (  # noqa: F401
    compute_optimal_tokens, gpus_for_throughput, min_gpus_for_static_memory, mfu_verdict, per_gpu_tokens_per_s,
    usd_per_tbps_hour, valid_world_sizes,
)
