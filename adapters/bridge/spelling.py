"""A layout change as a Bridge user writes it: a ``KEY=VALUE`` override (the same dotted path in a YAML)."""

from __future__ import annotations

from typing import Any

FIELDS = {
    "parallel.tensor": "model.tensor_model_parallel_size", "parallel.pipeline": "model.pipeline_model_parallel_size",
    "parallel.virtual_pipeline": "model.virtual_pipeline_model_parallel_size",
    "parallel.context": "model.context_parallel_size", "parallel.sequence_parallel": "model.sequence_parallel",
    "parallel.distributed_optimizer": "optimizer.use_distributed_optimizer",
    "batch.micro_batch": "train.micro_batch_size", "batch.global_batch": "train.global_batch_size",
    "memory.recompute": "model.recompute_granularity", "memory.recompute_method": "model.recompute_method",
    "memory.recompute_num_layers": "model.recompute_num_layers",
}
"""A layout change key -> the ConfigContainer field that holds it (read back through keys.KEYS)."""


def override_text(value: Any) -> str:
    """A value as a Hydra override (and a YAML) writes it: ``true``, ``null``, ``4``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or value == "none":
        return "null"
    return str(value)


def spell_changes(changes: dict[str, Any]) -> list[str] | None:
    out = [f"{FIELDS[k]}={override_text(v)}" for k, v in changes.items() if k in FIELDS]
    return out or None
