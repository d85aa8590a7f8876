"""TL631: MoE router and dispatcher combinations that Megatron-Core releases refuse when they build
``TransformerConfig`` (from the launch-check audit; most of them only in the releases named)."""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, _C
from trainlint.rules.startup.megatron.core_releases import references

_EP = "overlap_moe_expert_parallel_comm"
_CAPACITY = "moe_expert_capacity_factor only works with alltoall token dispatcher"
_BALANCING = "moe_expert_capacity_factor only works with aux_loss or none load balancing"


class MoeRouterArguments(CheckTable):
    """## What it does
    Checks MoE router and token-dispatcher options against the combinations Megatron-Core's
    `TransformerConfig.__post_init__` refuses: an expert capacity factor with the `allgather`
    dispatcher or with `sinkhorn` balancing, aux-loss-free expert bias without the sigmoid score
    function, a shared-expert overlap outside the `alltoall` dispatcher, padding to capacity with the
    `flex` dispatcher, router padding for FP8 without FP8 or with `allgather`, an MoE FFN size
    without experts, and linear biases in MoE layers (core_v0.13.0 and core_v0.14.0); extended
    tensor parallelism outside `allgather`; the expert-parallel all-to-all overlap with more than one
    MTP layer or (with one) without a pipeline; delayed weight gradients with the legacy grouped
    GEMM; the per-rank expert capacity and grouped tensors against the flex dispatcher's backend and
    Transformer Engine's op fuser.

    Most of these checks were dropped or relaxed in later releases, so each runs only when the run
    states or locates a release that makes it (project config `framework = {megatron = "core_v0.12.0"}`,
    or the checkout found beside the script).

    ## Why is this bad?
    Megatron-Core raises while it builds the model configuration, before the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 8 --moe-expert-capacity-factor 1.0   # allgather is the default
    ```

    ## Fix
    Use the dispatcher or balancing the message names (`--moe-token-dispatcher-type alltoall`), or
    drop the option.
    """

    code = "TL631"
    name = "megatron-core-moe-router-arguments"
    summary = "MoE router, dispatcher or expert-overlap options in a combination the Megatron-Core release refuses"
    checks = (
        _C(TCFG, 328, "core_v0.7.0", ("moe_expert_capacity_factor", "set"),
           ("moe_token_dispatcher_type", "==", "allgather"), says=_CAPACITY, last="core_v0.8.0"),
        _C(TCFG, 510, "core_v0.9.0", ("moe_expert_capacity_factor", "set"),
           ("moe_token_dispatcher_type", "==", "allgather"), says=_CAPACITY, last="core_v0.11.0"),
        *(_C(TCFG, 424, "core_v0.7.0", ("moe_expert_capacity_factor", ">=", 0),
             ("moe_router_load_balancing_type", "has", balancing), says=_BALANCING, last="core_v0.10.0")
          for balancing in ("sinkhorn", "seq_aux_loss")),
        _C(TCFG, 747, "core_v0.11.0", ("moe_expert_capacity_factor", ">=", 0),
           ("moe_router_load_balancing_type", "has", "sinkhorn"), says=_BALANCING, last="core_v0.13.0"),
        _C(TCFG, 797, "core_v0.14.0", ("moe_expert_capacity_factor", ">=", 0),
           ("moe_router_load_balancing_type", "has", "sinkhorn"),
           says="moe_expert_capacity_factor only works with aux_loss, seq_aux_loss or none load balancing",
           last="core_v0.14.0"),
        _C(TCFG, 1823, "core_v0.11.0", ("moe_router_enable_expert_bias", "on"),
           ("moe_router_score_function", "!=", "sigmoid"),
           says="Expert bias for aux-loss-free routing only supports sigmoid score function.", last="core_v0.17.0"),
        _C(TCFG, 1260, "core_v0.10.0", ("moe_shared_expert_overlap", "on"),
           ("moe_shared_expert_intermediate_size", "set"), ("moe_token_dispatcher_type", "!=", "alltoall"),
           says="moe_shared_expert_overlap only works with alltoall token dispatcher.", last="core_v0.17.0"),
        _C(TCFG, 829, "core_v0.12.0", ("moe_pad_expert_input_to_capacity", "on"),
           ("moe_token_dispatcher_type", "==", "flex"),
           says="Flex token dispatcher does not support moe_pad_expert_input_to_capacity", last="core_v0.15.0"),
        _C(TCFG, 1328, "core_v0.13.0", ("moe_router_padding_for_fp8", "on"), ("fp8", "unset"),
           says="fp8 must be specified when moe_router_padding_for_fp8 is True.", last="core_v0.15.0"),
        _C(TCFG, 1331, "core_v0.13.0", ("moe_router_padding_for_fp8", "on"),
           ("moe_token_dispatcher_type", "in", ("allgather", "alltoall_seq")),
           says="allgather and alltoall_seq dispatcher does not support moe_router_padding_for_fp8.", last="core_v0.15.0"),
        _C(TCFG, 1226, "core_v0.13.0", ("moe_ffn_hidden_size", "set"), ("num_experts", "unset"),
           says="moe_ffn_hidden_size must be None when num_experts is not set.", last="core_v0.17.0"),
        _C(TCFG, 1198, "core_v0.13.0", ("num_experts", "set"), ("add_bias_linear", "on"),
           says="Bias is not supported for MoE", last="core_v0.14.0"),
        _C(TCFG, 469, "core_v0.7.0", ("moe_extended_tp", "on"), ("moe_token_dispatcher_type", "!=", "allgather"),
           says="Moe extended TP parallelism only applies to allgather based token dispatcher.", last="core_v0.9.0"),
        # the expert-parallel all-to-all overlap
        _C(TCFG, 2439, "core_v0.14.0", (_EP, "on"), ("mtp_num_layers", "set"), ("mtp_num_layers", "!=", 1),
           says="MTP layernum only supports 1 when enabling overlap_moe_expert_parallel_comm.", last="core_v0.18.0"),
        _C(TCFG, 2125, "core_v0.16.0", (_EP, "on"), ("mtp_num_layers", "==", 1), ("pipeline_model_parallel_size", "<=", 1),
           says="Pipeline model parallel size must be larger than 1 when enabling overlap_moe_expert_parallel_comm "
                "with MTP layer.", last="core_v0.17.0"),
        _C(TCFG, 1913, "core_v0.14.0", ("delay_wgrad_compute", "on"), ("moe_use_legacy_grouped_gemm", "on"),
           says="delay_wgrad_compute is not supported with legacy groupedgemm implementation", last="core_v0.16.0"),
        # the flex dispatcher's backends and the per-rank expert capacity
        _C(TCFG, 1517, "core_v0.18.0", ("moe_expert_rank_capacity_factor", "set"),
           ("use_transformer_engine_op_fuser", "off"),
           says="moe_expert_rank_capacity_factor requires use_transformer_engine_op_fuser to be enabled.",
           last="core_v0.18.0"),
        _C(TCFG, 1522, "core_v0.18.0", ("moe_expert_rank_capacity_factor", "set"),
           ("moe_flex_dispatcher_backend", "!=", "hybridep"),
           says="moe_expert_rank_capacity_factor requires moe_flex_dispatcher_backend to be 'hybridep'.",
           last="core_v0.18.0"),
        _C(TCFG, 1702, "core_v0.19.0", ("moe_expert_rank_capacity_factor", "set"),
           ("moe_flex_dispatcher_backend", "==", "hybridep"), ("use_transformer_engine_op_fuser", "off"),
           says="moe_expert_rank_capacity_factor with the 'hybridep' backend requires use_transformer_engine_op_fuser "
                "to be enabled.", last="core_v0.19.0"),
        _C(TCFG, 1879, "main", ("moe_expert_rank_capacity_factor", "set"), ("moe_flex_dispatcher_backend", "==", "hybridep"),
           ("use_transformer_engine_op_fuser", "off"), ("moe_use_grouped_tensor", "off"),
           says="moe_expert_rank_capacity_factor with the 'hybridep' backend requires use_transformer_engine_op_fuser="
                "True or moe_use_grouped_tensor=True."),
        _C(TCFG, 1770, "main", ("moe_flex_dispatcher_backend", "==", "ncclep"), ("moe_use_grouped_tensor", "on"),
           ("use_transformer_engine_op_fuser", "off"),
           says="moe_use_grouped_tensor=True without use_transformer_engine_op_fuser is not yet supported with the "
                "NCCL-EP dispatcher."),
        _C(TCFG, 1580, "core_v0.19.0", ("moe_single_grouped_weight", "on"), ("use_transformer_engine_op_fuser", "off"),
           says="moe_single_grouped_weight requires use_transformer_engine_op_fuser=True.", last="core_v0.19.0"),
    )


MoeRouterArguments.__doc__ = (MoeRouterArguments.__doc__ or "").rstrip() + "\n" + references(MoeRouterArguments.checks)
