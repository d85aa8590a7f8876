"""TL610: Megatron-Core ``TransformerConfig`` checks that hold for a range of releases and that no
other rule made (from the launch-check audit, docs/launch-checks.md): grouped-query attention
against tensor parallelism (core_v0.4.0-0.15.0), the extended-TP FFN split (core_v0.7.0-0.9.0), the
``alltoall_seq`` dispatcher with its own expert TP (core_v0.10.0-0.12.0), bias-GELU fusion with
squared ReLU (core_v0.4.0), per-type MoE aux-loss coefficients, the deprecated SM-count knobs, and
GTP with local CUDA graphs recomputing shared experts."""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.release_table import Dest, R, ReleaseCheckTable, document, quiet

_GTP_SAYS = ("GTP + local CUDA graphs that capture shared_experts (moe_router/moe scope) cannot recompute it under "
             "fp8/fp4: te_checkpoint requires .backward(), but the local fwd-graph warmup uses .grad(). Drop "
             "'shared_experts' from --recompute-modules (GTP-shard + offload instead), or use --cuda-graph-impl "
             "full_iteration.")
_SMS_SAYS = "Conflicting deprecated SM-count knobs; set a single moe_flex_dispatcher_num_sms instead."


def _gtp_rows() -> tuple:
    """``transformer_config.py:2908-2926@d98e8a6`` (core_v0.19.0 on): a local graph captures the shared
    experts when it captures the whole layer (no module list) or the ``moe`` / ``moe_router`` module."""
    base = (("cuda_graph_impl", "==", "local"), ("recompute_granularity", "==", "selective"),
            ("recompute_modules", "has", "shared_experts"), ("gtp_weight_remat_size", ">", 1),
            ("moe_shared_expert_intermediate_size", "set"), quiet("moe_shared_expert_overlap", "off"))
    captured = ((("cuda_graph_modules", "empty"), quiet("cuda_graph_scope_deprecated", "unset")),
                (("cuda_graph_modules", "has", "moe"),), (("cuda_graph_modules", "has", "moe_router"),))
    return tuple(R(TCFG, 2920, "core_v0.19.0", None, *base, (low, "set"), *graph, says=_GTP_SAYS)
                 for low in ("fp8", "fp4") for graph in captured)


class CoreConfigReleaseChecks(ReleaseCheckTable):
    """## What it does
    Checks options Megatron-Core's `TransformerConfig` refuses in the releases that make the check:

    * `--group-query-attention` with a `--num-query-groups` that the tensor-parallel size does not
      divide (core_v0.4.0 to core_v0.15.0; later releases replicate the groups);
    * `--moe-extended-tp` with an FFN size (`--ffn-hidden-size`, else validate_args' own from
      `--hidden-size`) that TP x EP does not divide (core_v0.7.0 to core_v0.9.0);
    * the `alltoall_seq` dispatcher with an `--expert-tensor-parallel-size` other than TP
      (core_v0.10.0 to core_v0.12.0);
    * `--squared-relu` with bias-GELU fusion on (the default with biases; core_v0.4.0);
    * several `--moe-router-load-balancing-type` values without as many `--moe-aux-loss-coeff`
      values (core_v0.14.0 on; validate_args unwraps a one-element list);
    * the deprecated `moe_deepep_num_sms` and `moe_hybridep_num_sms` set to different values with no
      `moe_flex_dispatcher_num_sms` (core_v0.19.0 on; config fields without a Megatron-LM flag,
      written by formats that set Megatron-Core's fields);
    * a `--no-rope-freq` list pattern (`"([0]*3+[1])*6"`) whose length is not `--num-layers` (core_v0.13.0 on;
      the pattern is read, never evaluated: list literals, `+` and `*` only);
    * weight-shard GTP (`--tensor-parallel-num-weight-shards` above TP) with local CUDA graphs that
      capture the shared experts, FP8 or FP4, and `shared_experts` recomputed (core_v0.19.0 on).

    A check only older releases make speaks only when the run states or locates such a release.

    ## Why is this bad?
    `TransformerConfig.__post_init__` raises while the model configuration is built, before training.

    ## Example
    ```bash
    pretrain_gpt.py ... --group-query-attention --num-query-groups 2 --tensor-model-parallel-size 4
    # checked against core_v0.12.0
    ```

    ## Fix
    Choose sizes the message names as divisible, the values it names as matching, or drop the option.
    """

    code = "TL610"
    name = "megatron-core-config-release-checks"
    summary = "TransformerConfig checks of some releases: GQA groups vs TP, extended TP, alltoall_seq, MoE lists"
    core_config_check = True
    checks = (
        R(TCFG, 759, "core_v0.4.0", "core_v0.15.0", ("group_query_attention", "on"),
          ("num_query_groups", "not a multiple of", Dest("tensor_model_parallel_size")),
          ("tensor_model_parallel_size", ">", 0),
          says="num_query_groups must be a multiple of tensor_model_parallel_size."),
        # --ffn-hidden-size as given, else validate_args' own from --hidden-size (and --swiglu)
        R(TCFG, 474, "core_v0.7.0", "core_v0.9.0", ("moe_extended_tp", "on"),
          quiet("moe_token_dispatcher_type", "==", "allgather"), ("ffn_hidden_size", "set"),
          ("ffn_hidden_size", "not a multiple of", Dest("extended_tp_size")), ("extended_tp_size", ">", 0),
          says="ffn_hidden_size must be divisible by extended_tp_size (TP x EP)"),
        R(TCFG, 474, "core_v0.7.0", "core_v0.9.0", ("moe_extended_tp", "on"),
          quiet("moe_token_dispatcher_type", "==", "allgather"), ("ffn_hidden_size", "unset"),
          ("ffn_size", "not a multiple of", Dest("extended_tp_size")), ("extended_tp_size", ">", 0),
          says="ffn_hidden_size must be divisible by extended_tp_size (TP x EP)"),
        R(TCFG, 945, "core_v0.10.0", "core_v0.12.0", ("moe_token_dispatcher_type", "==", "alltoall_seq"),
          ("expert_tensor_parallel_size", "set"),
          ("expert_tensor_parallel_size", "!=", Dest("tensor_model_parallel_size")),
          says="alltoall_seq dispatcher not support different TP size for MoE and Dense layer."),
        R(TCFG, 280, "core_v0.4.0", "core_v0.4.0", ("squared_relu", "on"), ("bias_gelu_fusion", "on"),
          ("add_bias_linear", "on"), quiet("swiglu", "off"),
          says="When bias_gelu_fusion is True, activation_func must be F.gelu."),
        R(TCFG, 1829, "core_v0.14.0", None, ("moe_router_load_balancing_type", "several"),
          ("moe_aux_loss_coeff_count", "!=", Dest("moe_lb_type_count")),
          says="moe_aux_loss_coeff must be a list of the same length as moe_router_load_balancing_type"),
        R(TCFG, 1807, "core_v0.19.0", None, ("moe_deepep_num_sms", "set"), ("moe_hybridep_num_sms", "set"),
          ("moe_deepep_num_sms", "!=", Dest("moe_hybridep_num_sms")), quiet("moe_flex_dispatcher_num_sms", "unset"),
          says=_SMS_SAYS),
        R(TCFG, 3150, "core_v0.13.0", None, ("no_rope_freq", "set"), quiet("flash_decode", "off"),
          ("no_rope_length", "!=", Dest("num_layers")), ("num_layers", ">", 0),
          says="Length of no_rope list must match the number of layers"),
        *_gtp_rows(),
    )


document(CoreConfigReleaseChecks)
RULES: list[type] = [CoreConfigReleaseChecks]
