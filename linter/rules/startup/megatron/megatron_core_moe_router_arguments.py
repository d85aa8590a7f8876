"""TL631: MoE router and dispatcher combinations that Megatron-Core releases refuse when they build
``TransformerConfig`` (from the launch-check audit; most of them only in the releases named)."""

from __future__ import annotations

from trainlint import hookimpl
from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.combinations import CheckTable, _C
from trainlint.rules.startup.megatron.core_releases import references

_CAPACITY = "moe_expert_capacity_factor only works with alltoall token dispatcher"
_BALANCING = "moe_expert_capacity_factor only works with aux_loss or none load balancing"


class MoeRouterArguments(CheckTable):
    """## What it does
    Checks MoE router and token-dispatcher options against the combinations Megatron-Core's
    `TransformerConfig.__post_init__` refuses: an expert capacity factor with the `allgather`
    dispatcher or with `sinkhorn` balancing, aux-loss-free expert bias without the sigmoid score
    function, a shared-expert overlap outside the `alltoall` dispatcher, padding to capacity with the
    `flex` dispatcher, router padding for FP8 without FP8 or with `allgather`, an MoE FFN size
    without experts, and linear biases in MoE layers (core_v0.13.0 and core_v0.14.0).

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
    summary = "MoE router or dispatcher options in a combination the Megatron-Core release refuses"
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
    )


MoeRouterArguments.__doc__ = (MoeRouterArguments.__doc__ or "").rstrip() + "\n" + references(MoeRouterArguments.checks)

RULES: list[type] = [MoeRouterArguments]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
