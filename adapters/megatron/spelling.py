"""A layout change as a Megatron-LM launch script spells it (the Megatron adapter's
``spell_changes`` and ``expressible``): the flags of the script's dialect, as
:class:`trainlint.adapters.megatron.writer.MegatronWriter` writes them.

Apart from the writer so that a check, which spells fix hints but writes nothing, does not
import the write-back machinery.
"""

from __future__ import annotations

import os
from typing import Any

from trainlint.core.spec import MEGATRON_LM, TrainingSpec


def megatron_flag(spec: TrainingSpec, dest: str) -> str:
    from trainlint.adapters.megatron.arguments import MegatronArgs

    return MegatronArgs(spec).flag(dest)


def zero_stage_spelling(spec: TrainingSpec, stage: int) -> str:
    """A Megatron-DeepSpeed run's ZeRO stage, spelled where the run sets it: DeepSpeed reads the
    stage from the ``--deepspeed_config`` JSON (a file, or the here-document the script writes);
    Megatron-DeepSpeed's own ``--zero-stage`` (arguments.py, used for zero.Init and checks) is
    kept equal to it where the script passes it (as the write-back does)."""
    entry = spec.parallel.zero_stage
    in_json = entry is not None and (entry.provenance.key or "").startswith("zero_optimization")
    parts = []
    if in_json or "zero_stage" not in spec.settings:
        where = os.path.basename(entry.provenance.path) if entry is not None and in_json and entry.provenance.path \
            else "the DeepSpeed config"
        parts.append(f"\"zero_optimization\": {{\"stage\": {stage}}} in {where}")
    if "zero_stage" in spec.settings:
        parts.append(f"{megatron_flag(spec, 'zero_stage')} {stage}")
    return " and ".join(parts)


def spell_changes(spec: TrainingSpec, changes: dict[str, Any], base: Any) -> list[str]:
    """The changes as Megatron-LM flags of this script's dialect (``drop --flag`` for one that goes away)."""
    out: list[str] = []
    flag = lambda dest: megatron_flag(spec, dest)  # noqa: E731
    if "parallel.zero_stage" in changes:
        out.append(zero_stage_spelling(spec, changes["parallel.zero_stage"]))
    for dotted, dest in (("parallel.tensor", "tensor_model_parallel_size"), ("parallel.pipeline", "pipeline_model_parallel_size")):
        if dotted in changes:
            out.append(f"{flag(dest)} {changes[dotted]}")
    if "parallel.virtual_pipeline" in changes:
        vpp = changes["parallel.virtual_pipeline"]
        pp = changes.get("parallel.pipeline", base.pp)
        k_dest = "num_layers_per_virtual_pipeline_stage"
        if k_dest in spec.settings:
            out.append(f"{flag(k_dest)} {base.layers // (pp * vpp)}" if vpp > 1 else f"drop {flag(k_dest)}")
        else:
            v_dest = "num_virtual_stages_per_pipeline_rank"
            out.append(f"{flag(v_dest)} {vpp}" if vpp > 1 else f"drop {flag(v_dest)}")
    if "parallel.context" in changes:
        out.append(f"{flag('context_parallel_size')} {changes['parallel.context']}")
    for dotted, dest in (("parallel.sequence_parallel", "sequence_parallel"),
                         ("parallel.distributed_optimizer", "use_distributed_optimizer")):
        if dotted in changes:
            out.append(flag(dest) if changes[dotted] else f"drop {flag(dest)}")
    if "batch.micro_batch" in changes:
        out.append(f"{flag('micro_batch_size')} {changes['batch.micro_batch']}")
    if "batch.global_batch" in changes:
        out.append(f"{flag('global_batch_size')} {changes['batch.global_batch']}")
    if "memory.recompute" in changes:
        out.extend(_recompute_spelling(spec, changes["memory.recompute"]))
    # as the writer writes them: full recompute by --checkpoint-activations is uniform over
    # --checkpoint-num-layers layers (Megatron-DeepSpeed and older copies)
    checkpoint_style = _checkpoint_style(spec, changes.get("memory.recompute"))
    if "memory.recompute_method" in changes:
        method = changes["memory.recompute_method"]
        if method is None:
            if "recompute_method" in spec.settings:
                out.append(f"drop {flag('recompute_method')}")
        elif not (checkpoint_style and method == "uniform" and "recompute_method" not in spec.settings):
            out.append(f"{flag('recompute_method')} {method}")
    if "memory.recompute_num_layers" in changes:
        n = changes["memory.recompute_num_layers"]
        if n is None:
            out.extend(_drops(spec, "recompute_num_layers", "checkpoint_num_layers"))
        elif "recompute_num_layers" not in spec.settings and ("checkpoint_num_layers" in spec.settings or checkpoint_style):
            out.append(f"{flag('checkpoint_num_layers')} {n}")
        else:
            out.append(f"{flag('recompute_num_layers')} {n}")
    if "engine.dp_overlap" in changes:  # a hint only (not a layout key the writer writes)
        out.append(flag("overlap_grad_reduce") if changes["engine.dp_overlap"] else f"drop {flag('overlap_grad_reduce')}")
    return out


def _current(spec: TrainingSpec) -> bool:
    return spec.dialect in (MEGATRON_LM, "")


def _drops(spec: TrainingSpec, *dests: str) -> list[str]:
    return [f"drop {megatron_flag(spec, d)}" for d in dests if d in spec.settings]


def _recompute_spelling(spec: TrainingSpec, rec: str) -> list[str]:
    """``memory.recompute`` as :class:`MegatronWriter` writes it: the ``--recompute-*`` flags in
    current Megatron-LM (or where the script already uses them), ``--checkpoint-activations`` for
    full recompute in Megatron-DeepSpeed and older copies."""
    gran, act, ckpt = "recompute_granularity", "recompute_activations", "checkpoint_activations"
    if rec == "none":
        return _drops(spec, gran, act, ckpt) or ["no recompute"]
    if _current(spec) or gran in spec.settings or rec != "full":
        return [f"{megatron_flag(spec, gran)} {rec}", *_drops(spec, act, ckpt)]
    return [megatron_flag(spec, ckpt), *_drops(spec, act)]


def _checkpoint_style(spec: TrainingSpec, rec: str | None) -> bool:
    """Full recompute is (or will be) written as --checkpoint-activations (the writer's rule)."""
    if _current(spec):
        return False
    if rec is not None:
        return "recompute_granularity" not in spec.settings and rec == "full"
    return "checkpoint_activations" in spec.settings and "recompute_granularity" not in spec.settings


def defines(spec: TrainingSpec, dest: str) -> bool:
    """The Megatron version the run targets has the argument ``dest``: its argument catalog says
    (the checkout or release the project points at, :attr:`TrainingSpec.target`); without one,
    current Megatron-LM has what trainlint's own table (``megatron.schema.json``) records, and a
    Megatron-DeepSpeed or old copy of unknown version is taken to lack it, so that a hint never
    spells a flag the version may not have (Megatron-DeepSpeed gained ``--recompute-granularity``
    in its sync with Megatron-LM; bigscience's copy and Megatron-LM v1.1.5 have none)."""
    from trainlint.core.framework import framework_of

    released = framework_of(spec).key_catalog(spec.target).defines_dest(dest)  # the checked release's catalog
    if released is not None:
        return released
    if _current(spec):
        from trainlint.adapters.megatron.arguments import _properties

        return dest in _properties()
    return False


def expressible(spec: TrainingSpec) -> frozenset[str]:
    """The layout dimensions a Megatron-LM script of this dialect can write: virtual stages, context
    parallelism and the distributed optimizer in current Megatron-LM only; the ZeRO stage where
    DeepSpeed's engine runs the model (Megatron-DeepSpeed with ``--deepspeed``). Besides the
    dimensions ``trainlint suggest`` searches, the changes a fix hint may propose, where the
    target version has the argument: ``selective`` recompute (``--recompute-granularity``), ``sp``
    (``--sequence-parallel``), ``global-batch`` (``--global-batch-size``) and ``overlap``
    (``--overlap-grad-reduce``, where Megatron's own DDP runs)."""
    from trainlint.adapters.megatron.spec_build import deepspeed_runs

    searchable = {"tp", "pp", "micro", "recompute"}
    entry = spec.engine.deepspeed_flag
    megatron_ds = entry is not None and bool(entry.value)
    if _current(spec) and not megatron_ds:
        searchable |= {"vpp", "cp", "dist-opt"}
    if megatron_ds and deepspeed_runs(spec):
        searchable.add("zero")  # the DeepSpeed JSON's (or --zero-stage's) stage
    for name, dest in (("selective", "recompute_granularity"), ("sp", "sequence_parallel"),
                       ("global-batch", "global_batch_size")):
        if dest in spec.settings or defines(spec, dest):
            searchable.add(name)
    if not megatron_ds and ("overlap_grad_reduce" in spec.settings or defines(spec, "overlap_grad_reduce")):
        searchable.add("overlap")
    return frozenset(searchable)
