"""The typed settings a project config declares for the estimate and for planning.

Filled by :mod:`trainlint.project.config` from ``[tool.trainlint]``; read by the estimator's context
(``gpu``, ``nodes``, ``model`` ...) and the planning faces (limits and prices). Plain values with
no behaviour, so every layer that reads them may import them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EstimationSettings:
    """The estimation context a project declares (``gpu``, ``nodes``, ``gpus-per-node``, ``model``,
    ``vocab-size``, custom ``gpus``), as written: :mod:`trainlint.estimator.context` validates each
    value where it is used and names its key when it is wrong."""

    gpu: Any = None
    nodes: Any = None
    gpus_per_node: Any = None
    model: Any = None
    vocab_size: Any = None
    gpus: Any = None
    """The custom GPU table (``[tool.trainlint.gpus.<id>]``)."""

    def by_key(self, key: str) -> Any:
        """A value by its config spelling (``gpus-per-node``)."""
        return getattr(self, key.replace("-", "_"))


@dataclass(frozen=True)
class PlanningSettings:
    """Planning limits and prices (validated when the config is read: positive numbers)."""

    max_days: float | None = None
    max_cost: float | None = None
    price_per_gpu_hour: float | None = None
    prices: dict[str, float] = field(default_factory=dict)
    """GPU id (or alias, or a custom GPU's id) as written -> price per GPU-hour."""

    def by_key(self, key: str) -> Any:
        """A value by its config spelling (``max-days``)."""
        return getattr(self, key.replace("-", "_"))
