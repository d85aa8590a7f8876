"""A layout as changes to a config: the change keys (the writeback interface), the modified
spec the estimator and the launch-time rules see, and the diff spelled in the input's format.

The modified spec is what re-reading the rewritten file would give: the spec fields change, and
so do the framework settings the launch-time rules read (Megatron argparse dests, DeepSpeed and
NeoX keys). A value that is written in the file keeps its place (its provenance); a value the
file will have to gain is marked as written in the file by ``trainlint suggest``.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

from trainlint.estimator.inputs import Inputs
from trainlint.layout.changes import adapter_of
from trainlint.layout.space import Layout
from trainlint.core.framework import framework_of
from trainlint.adapters.engine import set_engine
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec

NOTE = "trainlint suggest"


# ------------------------------------------------------------------------------- recompute


def full_recompute_layers(spec: TrainingSpec, base: Inputs, pp: int) -> tuple[str, int, bool]:
    """(method, layers per checkpoint, keep-as-written) of full recompute at ``pp`` stages: the
    config's own when it already recomputes fully and its layer count still fits a pipeline rank
    (Megatron-Core: between 1 and the layers per rank), else uniform / 1."""
    per_rank = max(1, base.layers // pp)
    if base.recompute == "full" and base.recompute_layers <= per_rank:
        return base.recompute_method, base.recompute_layers, True
    n = framework_of(spec).recompute_layers_written(spec)
    if n is not None and 1 <= n <= per_rank:
        return "uniform", n, True
    return "uniform", 1, False


def recompute_detail(spec: TrainingSpec, base: Inputs, recompute: str, pp: int) -> tuple[str, int]:
    """(recompute_method, recompute_layers) exactly as the estimator resolves them."""
    if recompute != "full":
        return "uniform", 1
    method, layers, _ = full_recompute_layers(spec, base, pp)
    return method, layers


# ------------------------------------------------------------------------------- changes


def etp_follows_tp(spec: TrainingSpec) -> bool:
    """The expert tensor-parallel size is not written: it follows TP (Megatron's default)."""
    entry = spec.parallel.expert_tensor
    return entry is None or entry.provenance.origin is not Origin.FILE


_LAYOUT_KEYS = ("parallel.tensor", "parallel.pipeline", "parallel.pipeline_engine", "parallel.virtual_pipeline",
                "parallel.context", "parallel.data", "parallel.sequence_parallel", "parallel.zero_stage",
                "parallel.distributed_optimizer")
"""The layout change keys in the order the changes are listed."""


def layout_changes(spec: TrainingSpec, base: Inputs, cur: Layout, new: Layout) -> dict[str, Any]:
    """The change keys (see /work/notes/layout-interface.md) that turn ``cur`` into ``new``: TP, PP,
    VP, CP and DP for every framework, the rest as the run's framework writes a layout."""
    fw = framework_of(spec)
    found: dict[str, Any] = {}
    if new.tp != cur.tp:
        found["parallel.tensor"] = new.tp
    if new.pp != cur.pp:
        found["parallel.pipeline"] = new.pp
    uses_k = fw.writes_virtual_pipeline_per_layers(spec)
    if new.vpp != cur.vpp or (uses_k and new.vpp > 1 and new.pp != cur.pp):
        found["parallel.virtual_pipeline"] = new.vpp
    if new.cp != cur.cp:
        found["parallel.context"] = new.cp
    if new.dp != cur.dp:
        found["parallel.data"] = new.dp
    found.update(fw.layout_changes(spec, cur, new))
    out = {key: found[key] for key in _LAYOUT_KEYS if key in found}
    out.update((key, value) for key, value in found.items() if key not in out)
    out.update(_batch_changes(spec, cur, new))
    out.update(_recompute_changes(spec, base, cur, new))
    return out


def _batch_changes(spec: TrainingSpec, cur: Layout, new: Layout) -> dict[str, Any]:
    return batch_changes(spec, (cur.micro, cur.grad_accum, cur.global_batch),
                         (new.micro, new.grad_accum, new.global_batch), new.dp)


def batch_changes(spec: TrainingSpec, cur: tuple[Any, Any, Any], new: tuple[Any, Any, Any], dp: Any) -> dict[str, Any]:
    """The batch change keys that turn (micro, accumulation, global batch) ``cur`` into ``new`` at
    ``dp`` replicas: the ones the file has to write (a derived value is not written, as the run's
    framework says), the same for ``trainlint suggest`` and the rules' fix hints."""
    return framework_of(spec).batch_changes(spec, cur, new, dp)


def _recompute_changes(spec: TrainingSpec, base: Inputs, cur: Layout, new: Layout) -> dict[str, Any]:
    return framework_of(spec).recompute_changes(spec, base, cur, new, lambda pp: full_recompute_layers(spec, base, pp))


# --------------------------------------------------------------------------- modified spec

def _prov(spec: TrainingSpec, old: Value | None, key: str) -> Provenance:
    if old is not None and old.provenance.origin is Origin.FILE:
        return old.provenance
    return Provenance(Origin.FILE, path=spec.path, key=key, note=f"{NOTE}: added")


def _set_setting(spec: TrainingSpec, key: str, value: Any) -> None:
    old = spec.settings.get(key)
    if value is None or (value is False and key in _DROP_WHEN_FALSE):
        spec.settings.pop(key, None)
        return
    spec.settings[key] = Value(value, _prov(spec, old, key))


_DROP_WHEN_FALSE = {"sequence_parallel", "use_distributed_optimizer"}


def candidate_spec(spec: TrainingSpec, base: Inputs, changes: dict[str, Any], new: Layout) -> TrainingSpec:
    """``spec`` as re-reading the file after ``changes`` would give it (shallow copies: Values
    are immutable, nothing here mutates the original)."""
    out = copy.copy(spec)
    for section in ("model", "parallel", "batch", "precision", "memory", "cluster", "run", "engine"):
        setattr(out, section, copy.copy(getattr(spec, section)))
    out.settings = spec.settings.copy()  # a traced table stays traced (layout.reads)
    out.unresolved = spec.unresolved.copy()
    fw = framework_of(spec)

    def put(dotted: str, value: Any, key: str | None = None, emitted: bool = True) -> None:
        old = spec.get(dotted)
        if value is None:
            out.set(dotted, None)
            return
        if emitted or (old is not None and old.provenance.origin is Origin.FILE):
            prov = _prov(spec, old, key or dotted)
        else:
            prov = Provenance(Origin.DERIVED, note=f"{NOTE}: follows the new layout")
        out.set(dotted, Value(value, prov))

    for dotted in ("parallel.tensor", "parallel.pipeline", "parallel.context", "parallel.sequence_parallel",
                   "parallel.zero_stage", "parallel.distributed_optimizer", "memory.recompute",
                   "memory.recompute_method", "memory.recompute_num_layers"):
        if dotted in changes:
            put(dotted, changes[dotted])
    if "parallel.virtual_pipeline" in changes:
        put("parallel.virtual_pipeline", new.vpp if new.vpp > 1 else None)
    if "parallel.tensor" in changes and spec.parallel.expert_tensor is not None and etp_follows_tp(spec):
        out.parallel.expert_tensor = Value(new.tp, Provenance(Origin.DERIVED, note=f"{NOTE}: follows the tensor-parallel size"))
    # The batch triple and DP always follow the layout (whatever the file writes).
    put("parallel.data", new.dp, emitted="parallel.data" in changes)
    for dotted, value in (("batch.micro_batch", new.micro), ("batch.grad_accum", new.grad_accum),
                          ("batch.global_batch", new.global_batch)):
        put(dotted, value, emitted=dotted in changes)
    fw.candidate_fixups(out, new)
    # the framework settings the launch-time rules read, as the rewritten file would have them
    fw.mirror_settings(out, base, changes, new, _set_setting)
    set_engine(out)  # the engine follows the new layout, as re-reading the rewritten file would give
    return out


# ------------------------------------------------------------------------------- spelling


def spell_changes(spec: TrainingSpec, base: Inputs | None, changes: dict[str, Any], adapters: Sequence[Any] = ()) -> list[str]:
    """Each change as the user writes it in this format (flags, JSON keys, YAML keys): the
    adapter of the run's framework spells it (``Adapter.spell_changes``; among ``adapters``, the
    session's, else the built-in ones), else the fields are named."""
    adapter = adapter_of(spec, adapters)
    spelled = adapter.spell_changes(spec, changes, base) if adapter is not None else None
    if spelled is not None:
        return spelled
    names = {"parallel.tensor": "TP", "parallel.pipeline": "PP", "parallel.virtual_pipeline": "VP", "parallel.context": "CP",
             "parallel.zero_stage": "ZeRO", "batch.micro_batch": "micro batch", "batch.grad_accum": "accumulation",
             "batch.global_batch": "global batch", "memory.recompute": "recompute"}
    return [f"{names[k]} {v}" for k, v in changes.items() if k in names]
