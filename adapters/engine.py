"""Re-derive ``spec.engine`` after a spec was changed in memory (a suggested layout, a candidate fix):
the same framework rules each adapter applies when it reads the file."""

from __future__ import annotations

from trainlint.provenance import default
from trainlint.spec import EngineSpec, TrainingSpec


def set_engine(spec: TrainingSpec) -> None:
    if spec.framework == "deepspeed":
        from trainlint.adapters.deepspeed import set_engine as deepspeed
        deepspeed(spec)
    elif spec.framework == "neox":
        from trainlint.adapters.neox import set_engine as neox
        neox(spec)
    elif spec.framework == "megatron":
        from trainlint.adapters.megatron.spec_build import set_engine as megatron
        megatron(spec)
    elif spec.framework == "fsdp":
        fsdp_engine(spec)


def fsdp_engine(spec: TrainingSpec) -> None:
    """PyTorch FSDP full sharding (torchtitan / Composer): fp32 parameters, gradients and optimizer
    states sharded over the data x context mesh, gradients reduced in fp32."""
    spec.engine = EngineSpec()
    e = spec.engine
    note = "PyTorch FSDP full shard (fully_shard with bf16 compute, fp32 params and reduce)"
    e.optimizer_owner = default("fsdp", note)
    e.shard_stage = default(3, note)
    e.shard_group = default("dp_cp", "FSDP shards over the dp_shard x cp mesh (torchtitan)")
    e.grad_dtype = default("fp32", note)
    e.offload_optimizer = default("none", note)
    e.offload_params = default("none", note)
    e.dp_overlap = default(True, "FSDP reduce-scatters each unit's gradients during the backward pass")
    e.tp_overlap = default(False, note)
    e.batch_owner = default("fsdp", note)
