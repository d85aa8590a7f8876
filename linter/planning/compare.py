"""A run's totals and the same run on other GPU kinds (``trainlint estimate`` with a run length,
``--compare-gpus``, ``--same-throughput``).

The arithmetic behind the estimate face: the tokens of the whole run and where they come from,
time, GPU-hours and cost (:func:`run_totals_for`), the estimate re-made on each GPU kind of the
session (:func:`compare_gpus`), and the smallest valid cluster that keeps a throughput
(:func:`size_for_throughput`). The face renders the dicts these return.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover - imported where used (start-up time)
    from trainlint.project.config import ProjectConfig
    from trainlint.estimator.core import Estimate
    from trainlint.project.session import Session
    from trainlint.core.spec import TrainingSpec


@dataclass(frozen=True)
class RunLength:
    """What the user said about the run's length and price (flags; None: the config/project decides)."""

    tokens: float | None = None
    train_samples: float | None = None
    price_per_gpu_hour: float | None = None


def run_tokens(spec: TrainingSpec, est: Estimate, length: RunLength) -> tuple[float | None, str]:
    """Tokens of the whole run and where they come from (flag, train-iters, train-samples)."""
    from trainlint.planning.inputs import spec_tokens

    if length.tokens:
        return float(length.tokens), "--tokens"
    if length.train_samples:
        return length.train_samples * est.inputs.seq, "--train-samples x sequence length"
    return spec_tokens(spec, tokens_per_step=est.tokens_per_step, seq=est.inputs.seq)


def price_for(gpu_id: str, length: RunLength, project: ProjectConfig | None) -> tuple[float | None, str]:
    """Price per GPU-hour: the flag, else the project's `prices` for this GPU kind, else `price-per-gpu-hour`."""
    from trainlint.planning.inputs import price_for as lookup

    return lookup(gpu_id, length.price_per_gpu_hour, project)


def run_totals_for(spec: TrainingSpec, est: Estimate, length: RunLength, project: ProjectConfig | None,
                   gpu_hint: str | None = None) -> dict[str, Any]:
    """Tokens, steps, time, GPU-hours, FLOPs and cost of the whole run, with where each input came from."""
    from trainlint.planning import run_totals

    tokens, source = run_tokens(spec, est, length)
    if tokens is None:
        return {"tokens": None, "tokens_source": source}
    gpu_id = getattr(est.inputs, "gpu_id", None) or getattr(getattr(est.inputs, "gpu", None), "id", None) or gpu_hint or ""
    price, price_source = price_for(str(gpu_id), length, project)
    d = run_totals(est, tokens, price).to_dict()
    d["tokens_source"] = source
    d["price_source"] = price_source
    d["steps"] = tokens / est.tokens_per_step
    d["tokens_per_step"] = est.tokens_per_step
    d["tokens_per_param"] = tokens / est.num_params if est.num_params else None
    d["flops_6pd"] = 6.0 * est.num_params * tokens  # C = 6PD (Transformer Math 101), beside the estimator's per-layer count
    return d


def compare_gpus(spec: TrainingSpec, base: Estimate, session: Session, ids: Sequence[str] | None, length: RunLength,
                 same_throughput: bool = False) -> list[dict[str, Any]]:
    """Re-estimate ``spec`` on each GPU kind of the session (``ids``; None: every one): same world
    size, or (``same_throughput``) the smallest cluster that keeps the layout valid and reaches the
    base estimate's tokens/s. Rows sorted by cost to train (those that fit first)."""
    from trainlint.estimator import ContextError
    from trainlint.planning.sizing import usd_per_tbps_hour

    tokens, _ = run_tokens(spec, base, length)
    rows: list[dict[str, Any]] = []
    for gid in (list(session.gpus) if ids is None else ids):
        row: dict[str, Any] = {"gpu": gid}
        try:
            est = session.estimate(spec, gpu=gid)
        except (ContextError, ValueError, RuntimeError) as exc:  # RuntimeError: InvariantError (an estimator bug)
            row["error"] = str(exc)
            rows.append(row)
            continue
        if not est.ok:
            row["error"] = "cannot estimate: " + ", ".join(m.what if hasattr(m, "what") else str(m) for m in est.missing)
            rows.append(row)
            continue
        row["gpu"] = est.inputs.gpu.id
        sizing = None
        if same_throughput:
            est, sizing = size_for_throughput(est, base.tokens_per_s)
        gpu = est.inputs.gpu
        price, price_source = price_for(gpu.id, length, session.project)
        gpus = int(est.inputs.world)
        tps = est.tokens_per_s
        time_s = tokens / tps if tokens else None
        hours = gpus * time_s / 3600 if time_s else None
        row.update({
            "name": gpu.name, "fits": est.fits,
            "memory_pct": 100 * est.worst_stage.total / est.capacity_bytes,
            "gpus": gpus, "tokens_per_s": tps, "mfu": est.mfu, "bound": est.bound,
            "days": time_s / 86400 if time_s else None, "gpu_hours": hours,
            "price_per_gpu_hour": price, "price_source": price_source,
            "cost": hours * price if (hours and price) else None,
            "cost_per_hour": gpus * price if price else None,
            "usd_per_tbps_hour": usd_per_tbps_hour(price, gpu.hbm_bandwidth_tbps),
        })
        if sizing is not None:
            row["sizing"] = sizing
        rows.append(row)
    rows.sort(key=lambda r: ("error" in r, not r.get("fits", False), r.get("cost") is None,
                             r.get("cost") or 0, r.get("days") or float("inf")))
    return rows


def size_for_throughput(est: Estimate, target_tokens_per_s: float) -> tuple[Estimate, str]:
    """The estimate on the smallest cluster that reaches ``target_tokens_per_s`` with the same layout: whole
    nodes, DP an integer, the global batch kept with a whole number of accumulation steps (Hodge 2025:
    G = ceil(R_target / r_gpu), but every candidate size is re-estimated, communication included).
    Returns the estimate and a sentence saying how the size was chosen."""
    from trainlint.estimator.core import estimate_inputs
    from trainlint.core.framework import data_parallel_size
    from trainlint.planning.sizing import valid_world_sizes

    i = est.inputs
    model_parallel = i.tp * i.pp * i.cp
    units = i.global_batch // i.micro if i.micro and i.global_batch % i.micro == 0 else None
    need = target_tokens_per_s / est.tokens_per_s_per_gpu
    last = None
    for n, world in enumerate(valid_world_sizes(need, gpus_per_node=i.gpus_per_node, model_parallel=model_parallel,
                                                 batch_units=units)):
        dp = data_parallel_size(world, model_parallel) or 1  # valid_world_sizes gives multiples of it
        accum = units // dp if units else i.grad_accum
        last = estimate_inputs(dataclasses.replace(i, world=world, dp=dp, grad_accum=accum), est.spec_label)
        if last.tokens_per_s >= target_tokens_per_s * (1 - 1e-9):
            return last, (f"{world} GPUs = DP {dp} x TP {i.tp} x PP {i.pp} x CP {i.cp}, micro batch {i.micro} x "
                          f"accumulation {accum}: the smallest valid size reaching {target_tokens_per_s:,.0f} tokens/s")
        if n >= 256:
            break
    if last is not None:
        return last, (f"no valid size reaches {target_tokens_per_s:,.0f} tokens/s with global batch {i.global_batch}; "
                      f"the largest tried: {last.inputs.world} GPUs")
    limit = f"at most {units * model_parallel} GPUs (DP <= global batch {i.global_batch} / micro batch {i.micro})" \
        if units else f"a global batch {i.global_batch} that micro batch {i.micro} does not divide"
    return est, (f"{target_tokens_per_s:,.0f} tokens/s needs about {need:,.0f} GPUs, but this layout allows {limit} "
                 f"in whole nodes of {i.gpus_per_node}: shown at the config's own size")
