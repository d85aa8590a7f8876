"""TL683: settings Megatron-FSDP v2 (`ddp.megatron_fsdp_version: 2`) does not support in Megatron-Bridge"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, number, stops

_CHECKS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("model.tensor_model_parallel_size", lambda v: v not in (None, 1), "MFSDP V2 currently supports DP-only training"),
    ("model.pipeline_model_parallel_size", lambda v: v not in (None, 1), "MFSDP V2 currently supports DP-only training"),
    ("model.context_parallel_size", lambda v: v not in (None, 1), "MFSDP V2 currently supports DP-only training"),
    ("model.expert_model_parallel_size", lambda v: v not in (None, 1), "MFSDP V2 currently supports DP-only training"),
    ("model.num_moe_experts", lambda v: v is not None, "MFSDP V2 does not currently support MoE models."),
    ("model.virtual_pipeline_model_parallel_size", lambda v: v is not None,
     "MFSDP V2 does not currently support multiple model chunks."),
    ("dist.use_tp_pp_dp_mapping", lambda v: v is True, "MFSDP V2 does not support use_tp_pp_dp_mapping."),
    ("rng.data_parallel_random_init", lambda v: v is True, "MFSDP V2 does not support data_parallel_random_init."),
    ("ddp.num_distributed_optimizer_instances", lambda v: number(v) and v != 1, "MFSDP V2 does not currently support HSDP."),
    ("ddp.outer_dp_sharding_strategy", lambda v: isinstance(v, str) and v != "no_shard",
     "MFSDP V2 does not currently support outer DP sharding."),
    ("checkpoint.save", lambda v: v is not None, "MFSDP V2 checkpoint save and load are not yet supported."),
    ("checkpoint.load", lambda v: v is not None, "MFSDP V2 checkpoint save and load are not yet supported."),
    ("checkpoint.pretrained_checkpoint", lambda v: v is not None, "MFSDP V2 checkpoint loading is not yet supported."),
    ("optimizer.loss_scale", lambda v: v is not None, "MFSDP V2 does not support loss scaling."),
    ("optimizer.clip_grad", lambda v: number(v) and v > 0.0, "MFSDP V2 does not currently support gradient clipping."),
    ("optimizer.use_precision_aware_optimizer", lambda v: v is True, "MFSDP V2 does not support precision-aware optimizer."),
    ("optimizer.optimizer_cpu_offload", lambda v: v is True, "MFSDP V2 does not support optimizer CPU offload."),
    ("optimizer.use_layer_wise_distributed_optimizer", lambda v: v is True,
     "MFSDP V2 does not support layer-wise distributed optimizer."),
    ("optimizer.optimizer_cuda_graph", lambda v: v is True, "MFSDP V2 does not support optimizer CUDA graphs."),
    ("model.calculate_per_token_loss", lambda v: v is True, "MFSDP V2 does not support per-token loss normalization."),
    ("model.fp8", lambda v: bool(v), "MFSDP V2 does not support FP8 or FP4."),
    ("model.fp4", lambda v: bool(v), "MFSDP V2 does not support FP8 or FP4."),
    ("ddp.fp8_param_gather", lambda v: v is True, "MFSDP V2 does not support FP8 or FP4."),
    ("ddp.fp4_param_gather", lambda v: v is True, "MFSDP V2 does not support FP8 or FP4."),
    ("model.cuda_graph_impl", lambda v: isinstance(v, str) and v != "none", "MFSDP V2 does not support CUDA graphs."),
    ("ddp.megatron_fsdp_cuda_graph_mode", lambda v: v is True, "MFSDP V2 does not support CUDA graphs."),
    ("model.fp16", lambda v: v is True, "MFSDP V2 requires BF16 training (model.bf16=True and optimizer.bf16=True)."),
    ("model.bf16", lambda v: v is False, "MFSDP V2 requires BF16 training (model.bf16=True and optimizer.bf16=True)."),
    ("optimizer.fp16", lambda v: v is True, "MFSDP V2 requires BF16 training (model.bf16=True and optimizer.bf16=True)."),
    ("optimizer.bf16", lambda v: v is False, "MFSDP V2 requires BF16 training (model.bf16=True and optimizer.bf16=True)."),
    ("model.params_dtype", lambda v: isinstance(v, str) and v not in ("torch.bfloat16", "bfloat16"),
     "MFSDP V2 requires model.params_dtype=torch.bfloat16."),
)
"""(field, refused when, Bridge's message), in the order ``_validate_and_apply_megatron_fsdp_v2_configs`` checks;
a field is judged on the value the config writes (a field it does not write is not guessed)."""


class MegatronFsdpV2(BridgeRule):
    """## What it does
    Checks a run that asks for Megatron-FSDP v2 (Megatron-FSDP on, `ddp.megatron_fsdp_version: 2`)
    against what `ConfigContainer._validate_and_apply_megatron_fsdp_v2_configs` refuses: anything but
    BF16 parameters, model parallelism (TP, PP, CP, EP, virtual stages), MoE, HSDP or outer DP
    sharding, checkpoint saving or loading, loss scaling, gradient clipping, the precision-aware, CPU
    offloaded, layer-wise or CUDA-graphed optimizer, per-token loss, FP8/FP4 and CUDA graphs; and a
    version other than 1 or 2. Judged on the fields the config writes. Bridge takes the v2 path only when
    the installed Megatron-Core has Megatron-FSDP v2 (else v1, whose checks are TL673/TL674), so this is a
    warning of the release checked against.

    ## Why is this bad?
    A `ValueError` before the model is built.

    ## Example
    ```yaml
    ddp:
      use_megatron_fsdp: true
      megatron_fsdp_version: 2
    optimizer:
      clip_grad: 1.0
    ```

    ## Fix
    Use Megatron-FSDP v1 for these settings, or drop them (`optimizer.clip_grad: 0.0` ...).

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1065-1188` @ 067f987.
    """

    code = "TL683"
    name = "bridge-megatron-fsdp-v2"
    summary = "settings Megatron-FSDP v2 does not support in Megatron-Bridge"
    default_severity = Severity.WARNING  # the v2 path is taken only when the installed Megatron-Core has it

    def findings(self, f: Fields) -> Iterator[Finding]:
        if f.get("dist.use_megatron_fsdp") is not True and f.get("ddp.use_megatron_fsdp") is not True:
            return
        version = f.get("ddp.megatron_fsdp_version")
        if number(version) and version not in (1, 2):
            yield Finding(f"`ddp.megatron_fsdp_version` is {version}: {stops(f'Unsupported megatron_fsdp_version: {version}')}",
                          at=f.at("ddp.megatron_fsdp_version"))
        if version != 2:
            return
        said: set[str] = set()
        for path, refused, says in _CHECKS:
            value = f.get(path)
            if f.entry(path) is None or not refused(value) or says in said:
                continue
            said.add(says)
            yield Finding(f"`{path}` {value} with Megatron-FSDP v2: {stops(says)}", at=f.at(path),
                          also=((f.at("ddp.megatron_fsdp_version"), "Megatron-FSDP v2"),))
