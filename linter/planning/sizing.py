"""Sizing arithmetic of the seeds, as pure functions.

- Seed 001: compute-optimal data D = 20 P (Hoffmann et al. 2022); fewer than 200B tokens is not
  worth pre-training an LLM for.
- Seed 000: static memory 16 bytes per parameter (2 bf16 weights + 2 gradients + 12 fp32 master
  copy and Adam moments), so "70B requires >= 14 H100s just for static memory" (computed by the
  estimator's own static-memory formula, :func:`static_bytes_per_param`); well-optimised runs
  reach 40-50% MFU.
- Seed 002: GPUs for a throughput target G = ceil(R_target / r_gpu); cost per memory bandwidth
  $/TB/s-hour = price per GPU-hour / HBM TB/s.

Also the cluster sizes a fixed layout can run on (whole nodes, DP integer, the global batch kept
with a whole number of accumulation steps), for ``estimate --compare-gpus --same-throughput``.
"""

from __future__ import annotations

import math
from typing import Iterator

COMPUTE_OPTIMAL_TOKENS_PER_PARAM = 20.0
"""Seed 001: D = 20 P."""
MIN_PRETRAINING_TOKENS = 200e9
"""Seed 001: "We do not recommend training a LLM for less than 200B tokens"."""
WELL_OPTIMISED_MFU = (0.40, 0.50)
"""Seed 000: "MFU ~ 0.40-0.50 for well-optimized training"."""


def compute_optimal_tokens(params: float, tokens_per_param: float = COMPUTE_OPTIMAL_TOKENS_PER_PARAM) -> float:
    return tokens_per_param * params


def static_bytes_per_param(dtype: str = "bf16", optimizer: str = "adam") -> float:
    """Bytes per parameter of weights, gradients and optimizer states when no layout is given: the
    estimator's formula (estimator.memory.model_state_bytes) for the engine that needs the least,
    16 for mixed-precision Adam (seed 000's 2 + 2 + 12). One formula, not a copy of it."""
    from trainlint.estimator.memory import planning_state_bytes_per_param

    return planning_state_bytes_per_param(dtype, optimizer)


def static_memory_bytes(params: float, bytes_per_param: float | None = None) -> float:
    return (static_bytes_per_param() if bytes_per_param is None else bytes_per_param) * params


def min_gpus_for_static_memory(params: float, memory_bytes: float, bytes_per_param: float | None = None) -> int:
    """GPUs whose memory together holds the weights, gradients and Adam states (fully sharded, no
    activations): a floor, not a fit — activations and buffers come on top."""
    return max(1, math.ceil(static_memory_bytes(params, bytes_per_param) / memory_bytes - 1e-9))


def per_gpu_tokens_per_s(params: float, peak_flops_per_gpu: float, mfu: float) -> float:
    """Tokens/s one GPU trains at a given MFU: peak x MFU / (6 P)."""
    return peak_flops_per_gpu * mfu / (6.0 * params)


def gpus_for_throughput(target_tokens_per_s: float, per_gpu: float, multiple: int = 1) -> int:
    """Seed 002: G = ceil(R_target / r_gpu), rounded up to a multiple (whole nodes)."""
    m = max(1, int(multiple))
    return max(m, math.ceil(target_tokens_per_s / per_gpu / m - 1e-9) * m)


def usd_per_tbps_hour(price_per_gpu_hour: float | None, hbm_tbps: float | None) -> float | None:
    """Seed 002's cost per memory bandwidth: price per GPU-hour / HBM TB/s per GPU."""
    if not price_per_gpu_hour or not hbm_tbps:
        return None
    return price_per_gpu_hour / hbm_tbps


def mfu_verdict(mfu: float) -> str | None:
    """A sentence when a required MFU is impossible or beyond what tuned runs reach, else None."""
    low, high = WELL_OPTIMISED_MFU
    if mfu > 1.0:
        return f"impossible: {mfu:.0%} MFU is above the GPUs' peak; more GPUs, more days or fewer tokens"
    if mfu > high:
        return (f"optimistic: well-optimised runs reach {low:.0%}-{high:.0%} MFU (\"Estimation as Discipline\"); "
                "plan for more GPUs or more days")
    return None


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def valid_world_sizes(min_gpus: float, *, gpus_per_node: int, model_parallel: int,
                      batch_units: int | None) -> Iterator[int]:
    """World sizes >= ``min_gpus``, smallest first, that a fixed layout can run on: whole nodes,
    a multiple of TP x PP x CP (so DP is an integer) and, when ``batch_units`` (global batch /
    micro batch) is known, a DP that divides it, so the global batch stays the same with a whole
    number of accumulation steps. Empty when no such size exists (DP cannot exceed batch_units)."""
    per_node = max(1, int(gpus_per_node))
    mp = max(1, int(model_parallel))
    if batch_units is None:
        step = math.lcm(per_node, mp)
        world = max(step, math.ceil(min_gpus / step - 1e-9) * step)
        for k in range(world // step, world // step + 64):
            yield k * step
        return
    for dp in _divisors(max(1, int(batch_units))):
        world = dp * mp
        if world >= min_gpus - 1e-9 and world % per_node == 0:
            yield world
