"""TL168: fine-grained activation offloading or the MoE paged stash with options Megatron-Core refuses"""

from __future__ import annotations


from trainlint.rules.startup.megatron.base import ARGS, TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, _C, with_references


@with_references
class ActivationOffloadingArguments(CheckTable):
    """## What it does
    Checks fine-grained activation offloading and the MoE paged stash: not with CPU offloading, with
    modules to offload, `attn_proj` only with `core_attn`, fractions and sizes in range, the paged
    stash with an expert capacity factor.

    ## Why is this bad?
    `TransformerConfig.__post_init__` (or `validate_args`) stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --fine-grained-activation-offloading --cpu-offloading-num-layers 2
    ```

    ## Fix
    Use one offloading mechanism, name the modules to offload, keep the values in range.
    """

    code = "TL168"
    name = "megatron-activation-offloading-arguments"
    summary = "fine-grained activation offloading or the MoE paged stash with options Megatron-Core refuses"
    checks = (
        _C(TCFG, 2128, "core_v0.16.0", ("fine_grained_activation_offloading", "on"), ("cpu_offloading", "on"),
           says="fine_grained_activation_offloading cannot be enabled with cpu_offloading."),
        _C(TCFG, 2131, "core_v0.16.0", ("fine_grained_activation_offloading", "on"), ("offload_modules", "empty"),
           says="assert self.offload_modules is not None and len(self.offload_modules) > 0"),
        _C(TCFG, 2149, "core_v0.16.0", ("fine_grained_activation_offloading", "on"), ("offload_modules", "has", "attn_proj"),
           ("offload_modules", "lacks", "core_attn"),
           says="attn_proj cannot be set to offload_modules alone without core_attn"),
        _C(TCFG, 2176, "core_v0.19.0", ("fine_grained_activation_offloading", "on"), ("min_offloaded_tensor_size", "<", 0),
           says="min_offloaded_tensor_size must be non-negative."),
        _C(TCFG, 2179, "core_v0.19.0", ("fine_grained_activation_offloading", "on"), ("activation_offload_fraction", "<", 0),
           says="activation_offload_fraction must be in range [0, 1]."),
        _C(TCFG, 2179, "core_v0.19.0", ("fine_grained_activation_offloading", "on"), ("activation_offload_fraction", ">", 1),
           says="activation_offload_fraction must be in range [0, 1]."),
        _C(TCFG, 2182, "core_v0.19.0", ("fine_grained_activation_offloading", "on"),
           ("delta_offload_bytes_across_pp_ranks", "<", 0),
           says="delta_offload_bytes_across_pp_ranks must be non-negative."),
        _C(ARGS, 1936, "core_v0.16.0", ("fine_grained_activation_offloading", "on"),
           ("transformer_impl", "!=", "transformer_engine"),
           says="Fine-grained activation offloading is only supported with transformer_engine implementation"),
        _C(TCFG, 2188, "core_v0.19.0", ("fine_grained_activation_offloading", "on"), ("offload_modules", "has", "fused_group_mlp"),
           ("use_transformer_engine_op_fuser", "off"), says="fused_group_mlp requires use_transformer_engine_op_fuser."),
        _C(TCFG, 2212, "core_v0.18.0", ("moe_paged_stash", "on"), ("cpu_offloading", "on"),
           says="moe_paged_stash cannot be enabled with cpu_offloading."),
        _C(TCFG, 2214, "core_v0.18.0", ("moe_paged_stash", "on"), ("moe_expert_rank_capacity_factor", "unset"),
           says="moe_paged_stash requires moe_expert_rank_capacity_factor to be set"),
    )
