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
from trainlint.layout.space import Layout, raw_sequence_parallel
from trainlint.adapters.engine import set_engine
from trainlint.provenance import Origin, Provenance, Value
from trainlint.spec import MEGATRON_LM, TrainingSpec

NOTE = "trainlint suggest"


# ------------------------------------------------------------------------------- recompute


def full_recompute_layers(spec: TrainingSpec, base: Inputs, pp: int) -> tuple[str, int, bool]:
    """(method, layers per checkpoint, keep-as-written) of full recompute at ``pp`` stages: the
    config's own when it already recomputes fully and its layer count still fits a pipeline rank
    (Megatron-Core: between 1 and the layers per rank), else uniform / 1."""
    per_rank = max(1, base.layers // pp)
    if base.recompute == "full" and base.recompute_layers <= per_rank:
        return base.recompute_method, base.recompute_layers, True
    if spec.framework == "neox":
        written = spec.settings.get("checkpoint_num_layers")
        n = written.value if written is not None and isinstance(written.value, int) and not isinstance(written.value, bool) else 1
        if 1 <= n <= per_rank:
            return "uniform", n, True
    return "uniform", 1, False


def recompute_detail(spec: TrainingSpec, base: Inputs, recompute: str, pp: int) -> tuple[str, int]:
    """(recompute_method, recompute_layers) exactly as the estimator resolves them."""
    if recompute != "full":
        return "uniform", 1
    method, layers, _ = full_recompute_layers(spec, base, pp)
    return method, layers


# ------------------------------------------------------------------------------- changes


def _written(spec: TrainingSpec, dotted: str) -> bool:
    entry = spec.get(dotted)
    return entry is not None and entry.provenance.origin is Origin.FILE


def etp_follows_tp(spec: TrainingSpec) -> bool:
    """The expert tensor-parallel size is not written: it follows TP (Megatron's default)."""
    entry = spec.parallel.expert_tensor
    return entry is None or entry.provenance.origin is not Origin.FILE


def layout_changes(spec: TrainingSpec, base: Inputs, cur: Layout, new: Layout) -> dict[str, Any]:
    """The change keys (see /work/notes/layout-interface.md) that turn ``cur`` into ``new``."""
    fw = spec.framework
    out: dict[str, Any] = {}
    if new.tp != cur.tp:
        out["parallel.tensor"] = new.tp
    if new.pp != cur.pp:
        out["parallel.pipeline"] = new.pp
    if fw == "neox" and new.pp == 1 and (new.pp != cur.pp or bool(new.pipeline_engine) != bool(cur.pipeline_engine)):
        out["parallel.pipeline_engine"] = bool(new.pipeline_engine)
    uses_k = fw == "megatron" and "num_layers_per_virtual_pipeline_stage" in spec.settings
    if new.vpp != cur.vpp or (uses_k and new.vpp > 1 and new.pp != cur.pp):
        out["parallel.virtual_pipeline"] = new.vpp
    if new.cp != cur.cp:
        out["parallel.context"] = new.cp
    if new.dp != cur.dp:
        out["parallel.data"] = new.dp
    if fw in ("megatron", "neox") and new.sp != raw_sequence_parallel(spec):
        out["parallel.sequence_parallel"] = new.sp
    if (fw in ("deepspeed", "neox") or megatron_deepspeed(spec)) and new.zero != cur.zero:
        out["parallel.zero_stage"] = new.zero
    if fw == "megatron" and new.dist_opt != cur.dist_opt:
        out["parallel.distributed_optimizer"] = new.dist_opt
    out.update(_batch_changes(spec, cur, new))
    out.update(_recompute_changes(spec, base, cur, new))
    return out


def _batch_changes(spec: TrainingSpec, cur: Layout, new: Layout) -> dict[str, Any]:
    return batch_changes(spec, (cur.micro, cur.grad_accum, cur.global_batch),
                         (new.micro, new.grad_accum, new.global_batch), new.dp)


def batch_changes(spec: TrainingSpec, cur: tuple[Any, Any, Any], new: tuple[Any, Any, Any], dp: Any) -> dict[str, Any]:
    """The batch change keys that turn (micro, accumulation, global batch) ``cur`` into ``new`` at
    ``dp`` replicas: the ones the file has to write (a derived value is not written), the same
    for ``trainlint suggest`` and the rules' fix hints."""
    fw = spec.framework
    out: dict[str, Any] = {}
    (cur_micro, cur_accum, cur_global), (micro, accum, global_batch) = cur, new
    if micro != cur_micro:
        out["batch.micro_batch"] = micro
    if fw in ("deepspeed", "neox"):
        gas_written = _written(spec, "batch.grad_accum")
        tbs_written = _written(spec, "batch.global_batch")
        # DeepSpeed derives a missing accumulation from train_batch_size; NeoX's default is 1
        # whatever train_batch_size says, so NeoX always needs it written.
        if accum != cur_accum and (fw == "neox" or gas_written or not tbs_written):
            out["batch.grad_accum"] = accum
        if global_batch != cur_global and (tbs_written or "batch.grad_accum" not in out):
            out["batch.global_batch"] = global_batch
    elif fw == "megatron":
        written = _written(spec, "batch.global_batch")
        derived = isinstance(micro, int) and isinstance(dp, int) and micro * dp != global_batch
        # None: no global batch in the run (Megatron v1.x feeds --batch-size x DP): nothing to write
        if global_batch is not None and (global_batch != cur_global or (not written and derived)):
            out["batch.global_batch"] = global_batch
    else:
        if accum != cur_accum:
            out["batch.grad_accum"] = accum
        if global_batch != cur_global:
            out["batch.global_batch"] = global_batch
    return out


def _recompute_changes(spec: TrainingSpec, base: Inputs, cur: Layout, new: Layout) -> dict[str, Any]:
    fw = spec.framework
    out: dict[str, Any] = {}
    if fw == "deepspeed":
        return out
    if new.recompute != cur.recompute:
        out["memory.recompute"] = new.recompute
    if fw == "megatron":
        if new.recompute == "full":
            method, layers, keep = full_recompute_layers(spec, base, new.pp)
            if not keep:
                out["memory.recompute_method"] = method
                out["memory.recompute_num_layers"] = layers
        elif cur.recompute == "full" and new.recompute != "full":
            out["memory.recompute_method"] = None
            out["memory.recompute_num_layers"] = None
    elif fw == "neox" and new.recompute == "full":
        _, layers, keep = full_recompute_layers(spec, base, new.pp)
        if not keep:
            out["memory.recompute_num_layers"] = layers
    return out


# --------------------------------------------------------------------------- modified spec

_MEGATRON_DESTS = {
    "parallel.tensor": "tensor_model_parallel_size",
    "parallel.pipeline": "pipeline_model_parallel_size",
    "parallel.context": "context_parallel_size",
    "parallel.sequence_parallel": "sequence_parallel",
    "parallel.distributed_optimizer": "use_distributed_optimizer",
    "batch.micro_batch": "micro_batch_size",
    "batch.global_batch": "global_batch_size",
    "memory.recompute_method": "recompute_method",
    "memory.recompute_num_layers": "recompute_num_layers",
}
_DEEPSPEED_KEYS = {
    "parallel.zero_stage": "zero_optimization.stage",
    "parallel.tensor": "tensor_parallel.autotp_size",
    "parallel.pipeline": "pipeline.stages",
    "batch.micro_batch": "train_micro_batch_size_per_gpu",
    "batch.grad_accum": "gradient_accumulation_steps",
    "batch.global_batch": "train_batch_size",
}
_NEOX_KEYS = {
    "parallel.tensor": "model_parallel_size",
    "parallel.sequence_parallel": "sequence_parallel",
    "parallel.zero_stage": "zero_optimization.stage",
    "batch.micro_batch": "train_micro_batch_size_per_gpu",
    "batch.grad_accum": "gradient_accumulation_steps",
    "batch.global_batch": "train_batch_size",
    "memory.recompute_num_layers": "checkpoint_num_layers",
}
_DS_BATCH = {"batch.micro_batch": "train_micro_batch_size_per_gpu", "batch.grad_accum": "gradient_accumulation_steps",
             "batch.global_batch": "train_batch_size"}


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
    out.settings = dict(spec.settings)
    out.unresolved = dict(spec.unresolved)
    fw = spec.framework

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
    if fw == "neox":
        engine = new.pp > 1 or bool(new.pipeline_engine)
        out.parallel.pipeline_engine = Value(engine, Provenance(Origin.DERIVED, note=f"{NOTE}: pipe_parallel_size"))
    _mirror_settings(out, base, changes, new)
    set_engine(out)  # the engine follows the new layout, as re-reading the rewritten file would give
    return out


def _mirror_settings(out: TrainingSpec, base: Inputs, changes: dict[str, Any], new: Layout) -> None:
    """The framework settings the launch-time rules read, as the rewritten file would have them."""
    fw = out.framework
    if fw == "megatron":
        for dotted, dest in _MEGATRON_DESTS.items():
            if dotted in changes:
                _set_setting(out, dest, changes[dotted])
        if "memory.recompute" in changes:
            rec = changes["memory.recompute"]
            out.settings.pop("recompute_activations", None)
            if out.dialect not in (MEGATRON_LM, ""):
                out.settings.pop("checkpoint_activations", None)
                if rec == "full":
                    _set_setting(out, "checkpoint_activations", True)
            _set_setting(out, "recompute_granularity", None if rec == "none" else rec)
        if "parallel.virtual_pipeline" in changes:
            k_dest, v_dest = "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank"
            if k_dest in out.settings:
                _set_setting(out, k_dest, base.layers // (new.pp * new.vpp) if new.vpp > 1 else None)
            else:
                _set_setting(out, v_dest, new.vpp if new.vpp > 1 else None)
        # Megatron-DeepSpeed: the DeepSpeed config's batch keys are checked against the flags (TL100)
        for dotted, key in _DS_BATCH.items():
            prefixed = "deepspeed:" + key
            if prefixed in out.settings:
                value = {"batch.micro_batch": new.micro, "batch.grad_accum": new.grad_accum,
                         "batch.global_batch": new.global_batch}[dotted]
                _set_setting(out, prefixed, value)
    elif fw == "deepspeed":
        for dotted, key in _DEEPSPEED_KEYS.items():
            if dotted in changes:
                _set_setting(out, key, changes[dotted])
    elif fw == "neox":
        for dotted, key in _NEOX_KEYS.items():
            if dotted in changes:
                _set_setting(out, key, changes[dotted])
        if "parallel.pipeline" in changes or "parallel.pipeline_engine" in changes:
            _set_setting(out, "pipe_parallel_size", new.pp if new.pp > 1 else (1 if new.pipeline_engine else 0))
        if "memory.recompute" in changes:
            _set_setting(out, "checkpoint_activations", changes["memory.recompute"] == "full")
        if "parallel.zero_stage" in changes:
            section = out.settings.get("zero_optimization")
            if section is not None and isinstance(section.value, dict):
                out.settings["zero_optimization"] = Value({**section.value, "stage": changes["parallel.zero_stage"]},
                                                          section.provenance)


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


def adapter_of(spec: TrainingSpec, adapters: Sequence[Any] = ()) -> Any:
    """The adapter of ``spec``'s format (``spec.format``, else named by its framework): among ``adapters`` (the session's,
    plugin adapters included), else among the built-in ones; None for a run no adapter names."""
    from trainlint.layout.changes import adapter_for

    if not adapters:
        from trainlint.adapters import builtin_adapters

        adapters = builtin_adapters()  # no session at hand (a library call): the formats trainlint ships
    return adapter_for(spec.format or spec.framework, adapters)


def megatron_deepspeed(spec: TrainingSpec) -> bool:
    """A Megatron-DeepSpeed script whose model DeepSpeed's engine runs (``--deepspeed``): its ZeRO
    stage is a layout choice, as in a DeepSpeed JSON."""
    from trainlint.adapters.megatron.spec_build import deepspeed_runs

    return spec.framework == "megatron" and deepspeed_runs(spec)
