"""The layout changes trainlint writes back (:data:`CHANGE_KEYS`) and the adapter that spells and
writes a format's (:func:`adapter_for`).

Apart from :mod:`trainlint.layout.writeback` so that a check, which spells fix hints but writes
nothing, does not import the write-back machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.base import Adapter
    from trainlint.core.spec import TrainingSpec

CHANGE_KEYS = frozenset({
    "parallel.tensor", "parallel.pipeline", "parallel.virtual_pipeline", "parallel.context", "parallel.data",
    "parallel.sequence_parallel", "parallel.zero_stage", "parallel.distributed_optimizer",
    "parallel.pipeline_engine", "batch.micro_batch", "batch.grad_accum", "batch.global_batch",
    "memory.recompute", "memory.recompute_method", "memory.recompute_num_layers",
})


def adapter_for(format_name: str, adapters: Sequence[Adapter] | None = None) -> Adapter | None:
    """The adapter that reads (and writes) ``format_name``: among ``adapters`` (a session's, plugin
    formats included), else among the formats trainlint ships (a library call with no session; the
    search never opens a plugin host of its own)."""
    if adapters is None:
        from trainlint.adapters import builtin_adapters

        adapters = builtin_adapters()
    return next((a for a in adapters if a.name == format_name), None)


def adapter_of(spec: TrainingSpec, adapters: Sequence[Adapter] = ()) -> Adapter | None:
    """The adapter of ``spec``'s format (``spec.format``, a Megatron-Bridge YAML on the Megatron engine;
    else named by its framework): among ``adapters`` (the session's, plugin adapters included), else
    among the built-in ones; None for a run no adapter names."""
    if not adapters:
        from trainlint.adapters import builtin_adapters

        adapters = builtin_adapters()  # no session at hand (a library call): the formats trainlint ships
    return adapter_for(spec.format or spec.framework, adapters)
