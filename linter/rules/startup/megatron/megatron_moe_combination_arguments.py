"""TL169: MoE dispatch, grouped-GEMM, capacity and expert-parallel overlap options Megatron-Core refuses together"""

from __future__ import annotations


from trainlint.rules.startup.megatron.base import ARGS, TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, _C, with_references


_EP_OVERLAP = "overlap_moe_expert_parallel_comm"


@with_references
class MoeCombinationArguments(CheckTable):
    """## What it does
    Checks MoE options that Megatron-Core accepts only together: grouped tensors and single grouped
    weights with grouped GEMM, the flex dispatcher's backends, MXFP8 dispatch / combine dtypes (the
    `ncclep` flex backend with the Transformer Engine op fuser and grouped GEMM), the expert-rank
    capacity factor, router padding for quantization, MoE recomputation, and the expert-parallel
    communication overlap (EP > 1, the alltoall/flex dispatcher, no full recomputation, bf16/fp16).

    ## Why is this bad?
    `TransformerConfig.__post_init__` raises at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 8 --moe-dispatch-fwd-dtype mxfp8 --moe-token-dispatcher-type alltoall
    ```

    ## Fix
    Add the option the message asks for, or drop the one that needs it.
    """

    code = "TL169"
    name = "megatron-moe-combination-arguments"
    summary = "MoE dispatch, grouped-GEMM, capacity and expert-parallel overlap options Megatron-Core refuses together"
    checks = (
        _C(TCFG, 1414, "main", ("moe_use_grouped_tensor", "on"), ("moe_grouped_gemm", "off"),
           says="moe_use_grouped_tensor=True requires moe_grouped_gemm=True."),
        _C(TCFG, 1683, "core_v0.5.0", ("num_experts", "<=", 0), says="num_moe_experts must be non-negative."),
        _C(TCFG, 1709, "core_v0.18.0", ("moe_single_grouped_weight", "on"), ("moe_grouped_gemm", "off"),
           says="moe_single_grouped_weight and moe_single_grouped_bias require moe_grouped_gemm=True."),
        _C(TCFG, 1709, "core_v0.18.0", ("moe_single_grouped_bias", "on"), ("moe_grouped_gemm", "off"),
           says="moe_single_grouped_weight and moe_single_grouped_bias require moe_grouped_gemm=True."),
        _C(TCFG, 1737, "main", ("moe_single_grouped_weight", "on"), ("moe_use_grouped_tensor", "off"),
           says="moe_single_grouped_weight requires moe_use_grouped_tensor=True."),
        _C(TCFG, 1739, "core_v0.18.0", ("moe_single_grouped_bias", "on"), ("add_bias_linear", "off"),
           says="moe_single_grouped_bias requires add_bias_linear=True."),
        _C(TCFG, 1741, "main", ("moe_single_grouped_bias", "on"), ("moe_use_grouped_tensor", "off"),
           says="moe_single_grouped_bias requires moe_use_grouped_tensor=True."),
        _C(TCFG, 1747, "core_v0.16.0", ("moe_enable_deepep", "on"), ("moe_flex_dispatcher_backend", "==", "hybridep"),
           says="Only one backend is supported for flex token dispatcher."),
        _C(TCFG, 1765, "core_v0.19.0", ("moe_flex_dispatcher_backend", "==", "ncclep"),
           ("moe_token_dispatcher_type", "!=", "flex"),
           says="moe_flex_dispatcher_backend='ncclep' requires moe_token_dispatcher_type='flex'."),
        *(_C(TCFG, 1781, "main", (dtype, "!=", "bf16"), (other, "!=", value),
             says="moe_dispatch_fwd_dtype / moe_combine_bwd_dtype require the 'ncclep' flex dispatcher backend.")
          for dtype in ("moe_dispatch_fwd_dtype", "moe_combine_bwd_dtype")
          for other, value in (("moe_token_dispatcher_type", "flex"), ("moe_flex_dispatcher_backend", "ncclep"))),
        *(_C(TCFG, 1786, "main", (dtype, "!=", "bf16"), ("moe_token_dispatcher_type", "==", "flex"),
             ("moe_flex_dispatcher_backend", "==", "ncclep"), (needed, "off"),
             says="moe_dispatch_fwd_dtype / moe_combine_bwd_dtype = 'mxfp8' require BOTH use_transformer_engine_op_fuser "
                  "and moe_grouped_gemm")
          for dtype in ("moe_dispatch_fwd_dtype", "moe_combine_bwd_dtype")
          for needed in ("use_transformer_engine_op_fuser", "moe_grouped_gemm")),
        _C(TCFG, 1815, "core_v0.10.0", ("moe_shared_expert_intermediate_size", "<=", 0),
           says="moe_shared_expert_intermediate_size must be num_shared_experts * ffn_size_of_each_shared_expert"),
        _C(TCFG, 1870, "core_v0.19.0", ("moe_expert_rank_capacity_factor", "set"),
           ("moe_flex_dispatcher_backend", "not in", ("hybridep", "ncclep")),
           says="moe_expert_rank_capacity_factor requires moe_flex_dispatcher_backend 'hybridep' or 'ncclep'"),
        _C(TCFG, 1996, "core_v0.14.0", ("moe_shared_expert_overlap", "on"), ("recompute_granularity", "==", "selective"),
           ("recompute_modules", "has", "shared_experts"), ("moe_shared_expert_intermediate_size", "set"),
           says="shared_experts recompute cannot work with --moe-shared-expert-overlap."),
        _C(TCFG, 1758, "core_v0.16.0", ("moe_pad_expert_input_to_capacity", "on"), ("moe_token_dispatcher_type", "==", "flex"),
           ("moe_flex_dispatcher_backend", "==", "deepep"),
           says="Flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity"),
        _C(TCFG, 1965, "core_v0.12.0", ("recompute_modules", "has", "moe_act"), ("recompute_granularity", "==", "selective"),
           ("moe_grouped_gemm", "off"), says="moe_act in recompute_modules is only supported with moe_grouped_gemm."),
        _C(ARGS, 1904, "core_v0.14.0", ("delay_wgrad_compute", "on"), ("transformer_impl", "!=", "transformer_engine"),
           says="Delaying wgrad compute is only supported with transformer_engine implementation"),
        _C(TCFG, 2020, "core_v0.12.0", ("moe_layer_recompute", "on"), ("recompute_granularity", "==", "full"),
           says="Do not set --moe-layer-recompute with full recompute granularity."),
        _C(TCFG, 2651, "core_v0.16.0", ("moe_router_padding_for_quantization", "on"), ("fp8", "unset"), ("fp4", "unset"),
           says="fp8/fp4 must be specified when moe_router_padding_for_quantization is True."),
        _C(TCFG, 2656, "core_v0.16.0", ("moe_router_padding_for_quantization", "on"),
           ("moe_token_dispatcher_type", "in", ("allgather", "alltoall_seq")),
           says="allgather and alltoall_seq dispatcher does not support moe_router_padding_for_quantization."),
        _C(TCFG, 3013, "core_v0.14.0", (_EP_OVERLAP, "on"), ("expert_model_parallel_size", "<=", 1),
           says="overlap_moe_expert_parallel_comm is only supported with expert model parallelism"),
        _C(TCFG, 3016, "core_v0.14.0", (_EP_OVERLAP, "on"), ("moe_token_dispatcher_type", "not in", ("alltoall", "flex")),
           says="overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher"),
        _C(TCFG, 3021, "core_v0.14.0", (_EP_OVERLAP, "on"), ("recompute_granularity", "==", "full"),
           says="disable full recomputation when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3024, "core_v0.14.0", (_EP_OVERLAP, "on"), ("recompute_method", "set"),
           says="disable recomputation method when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3027, "core_v0.14.0", (_EP_OVERLAP, "on"), ("recompute_num_layers", "set"),
           says="recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3030, "core_v0.17.0", (_EP_OVERLAP, "on"), ("recompute_modules", "has", "moe"),
           says="disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3035, "core_v0.14.0", (_EP_OVERLAP, "on"), ("bf16", "off"), ("fp16", "off"),
           says="overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model"),
        _C(TCFG, 3039, "core_v0.14.0", (_EP_OVERLAP, "on"), ("moe_shared_expert_overlap", "on"),
           says="disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3042, "core_v0.19.0", (_EP_OVERLAP, "on"), ("mtp_num_layers", "not in", (None, 0, 1)),
           says="MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm."),
        _C(TCFG, 3075, "core_v0.14.0", ("delay_wgrad_compute", "on"), (_EP_OVERLAP, "off"),
           says="overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute"),
        _C(TCFG, 3085, "core_v0.18.0", ("overlap_dispatch_backward_with_experts_wgrad", "on"), (_EP_OVERLAP, "on"),
           says="overlap_moe_expert_parallel_comm must be disabled when enabling "
                "overlap_dispatch_backward_with_experts_wgrad"),
        _C(TCFG, 3092, "core_v0.18.0", ("overlap_dispatch_backward_with_experts_wgrad", "on"), ("delay_wgrad_compute", "on"),
           says="delay_wgrad_compute and overlap_dispatch_backward_with_experts_wgrad are mutually exclusive"),
        _C(TCFG, 3098, "core_v0.16.0", ("ep_overlap_early_attn_memory_release", "on"), (_EP_OVERLAP, "off"),
           says="overlap_moe_expert_parallel_comm must be enabled when enabling ep_overlap_early_attn_memory_release"),
    )
