"""Where planning numbers come from: the run length of a spec, the price of a GPU kind, the limits
of the project config. Pure: reads a TrainingSpec and the project config's raw table, no I/O.

Run length per format (what the adapters put in ``spec.run``):
- Megatron-LM: ``--train-iters`` (x ``--global-batch-size`` x ``--seq-length``) or
  ``--train-samples`` (x ``--seq-length``). Not read: Megatron-DeepSpeed's ``--train-tokens`` and
  the tasks' ``--epochs`` (an epoch's size is the dataset's).
- GPT-NeoX: ``train_iters`` / ``train-iters`` (x the global batch, which NeoX derives from micro
  batch x accumulation x DP, so it needs the world size: the estimate supplies it).
- DeepSpeed JSON: no run length (the training loop is the user's script).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

from trainlint.core.spec import TrainingSpec

if TYPE_CHECKING:
    from trainlint.project.config import ProjectConfig

PLANNING_KEYS = ("max-days", "max-cost", "price-per-gpu-hour", "prices")


def number(value: Any) -> float | None:
    """A finite float from a Value or a plain value; None for booleans, strings that are not numbers, NaN."""
    raw = getattr(value, "value", value)
    if raw is None or isinstance(raw, bool):
        return None
    try:
        out = float(raw)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def spec_tokens(spec: TrainingSpec, tokens_per_step: float | None = None,
                seq: float | None = None) -> tuple[float | None, str]:
    """Tokens the config trains for and how they were counted, or (None, why not).

    ``tokens_per_step`` / ``seq`` come from an estimate when there is one (NeoX's global batch
    needs the world size); otherwise the config's own global batch and sequence length are used."""
    seq = seq or number(spec.model.seq_length)
    iters = number(spec.run.train_iters)
    if iters and iters > 0:
        if tokens_per_step is None:
            batch = number(spec.batch.global_batch)
            tokens_per_step = batch * seq if batch and seq else None
        if tokens_per_step:
            return iters * tokens_per_step, "train iters x global batch x sequence length"
        return None, "train iters given, but not the global batch or the sequence length"
    samples = number(spec.run.train_samples)
    if samples and samples > 0:
        if seq:
            return samples * seq, "train samples x sequence length"
        return None, "train samples given, but not the sequence length"
    return None, "no run length in the config (give --tokens or --train-samples)"


def price_for(gpu_id: str, flag: float | None, project: ProjectConfig | None) -> tuple[float | None, str]:
    """Price per GPU-hour: the flag, else ``prices.<gpu>`` of the project config, else its
    ``price-per-gpu-hour``. trainlint ships no prices: without one the cost is not computed."""
    if flag:
        return float(flag), "--price-per-gpu-hour"
    if project is None:
        return None, "no price"
    custom = project.estimation.gpus
    for key, value in project.planning.prices.items():
        if number(value) and _gpu_id(str(key), custom) == gpu_id:
            return number(value), f"prices.{key} in the project config"
    if number(project.planning.price_per_gpu_hour):
        return number(project.planning.price_per_gpu_hour), "price-per-gpu-hour in the project config"
    return None, "no price"


def _gpu_id(name: str, custom: Any) -> str | None:
    """The catalog (or project custom GPU) id a price key names, aliases included ("h100" -> h100-sxm)."""
    from trainlint.presets.catalog import CatalogError, find_gpu, load_gpus

    table = load_gpus()
    if isinstance(custom, Mapping) and name in custom:
        return name
    try:
        return find_gpu(name, table).id
    except CatalogError:
        return None


def planning_key_problems(raw: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``max-days``, ``max-cost``, ``price-per-gpu-hour`` and ``prices`` (empty when fine):
    each must be a positive number, ``prices`` a table of GPU id = positive number."""
    problems = []

    def positive(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0

    for key in ("max-days", "max-cost", "price-per-gpu-hour"):
        if key in raw and not positive(raw[key]):
            problems.append(f"`{key}` must be a positive number, got {raw[key]!r}")
    if "prices" in raw:
        prices = raw["prices"]
        if not isinstance(prices, Mapping):
            problems.append("`prices` must be a table of GPU id = price per GPU-hour, e.g. prices = { h100-sxm = 2.5 }")
        else:
            problems.extend(f"`prices.{k}` must be a positive number, got {v!r}" for k, v in prices.items() if not positive(v))
            for key in prices:
                if _gpu_id(str(key), raw.get("gpus")) is None:
                    from trainlint.presets.catalog import load_gpus
                    from trainlint.files.did_you_mean import hint

                    problems.append(f"`prices.{key}`: no GPU {key!r} in the catalog or the project's `gpus`"
                                    f"{hint(str(key), list(load_gpus()))}")
    return problems
