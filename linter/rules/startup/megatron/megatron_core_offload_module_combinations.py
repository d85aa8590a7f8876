"""TL637: fine-grained activation-offloading module lists against the recomputation, fused MLP and
paged-stash options Megatron-Core's ``TransformerConfig`` refuses them with (from the launch-check
audit). The offloading switches themselves (CPU offloading, empty lists, ``attn_proj`` alone, the
fractions) are TL168's."""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references

_ON: Cond = ("fine_grained_activation_offloading", "on")
_SELECTIVE: Cond = ("recompute_granularity", "==", "selective")
_LOCAL: Cond = ("cuda_graph_impl", "==", "local")
_LOCAL_MODULES = ("fine-grained activation offloading with cuda_graph_impl='local' only supports offload_modules "
                  "'expert_fc1', 'moe_act', and 'fused_group_mlp'.")
_LOCAL_PARTIAL = ("fine-grained activation offloading is only supported with transformer_engine CUDA graph "
                  "implementation or local CUDA graph implementation with partial MoE offload.")
_INFLIGHT = ("fine_grained_offloading_max_inflight_offloads must be a non-negative integer when using fine-grained "
             "activation offloading with full-iteration CUDA graphs")
_MOE_RECOMPUTE = ("Cannot offload {...} while recomputing the entire MoE layer. 'moe' in recompute_modules wraps the "
                  "full MoE forward in a checkpoint")
_FUSED = "fused_group_mlp offloads the whole fused grouped MLP and cannot be combined with expert_fc1 or moe_act."
_STASH = "When moe_paged_stash is enabled, offload_modules must not include expert_fc1, moe_act, or fused_group_mlp"


class OffloadModuleCombinations(CheckTable):
    """## What it does
    Checks `--offload-modules` (fine-grained activation offloading) against the other module lists:
    no `gdp_qkv` offload while `gdp_in_proj` is recomputed (upstream); nothing offloaded inside an
    MoE layer (`moe_act`, `expert_fc1`, `fused_group_mlp`) while the whole `moe` is recomputed; no
    `expert_fc1` / `moe_act` next to `fused_group_mlp`; none of them with `--moe-paged-stash`
    (since core_v0.18.0; `fused_group_mlp` since core_v0.19.0); under local CUDA graphs only the MoE
    expert modules, captured per module and without the whole `moe` (core_v0.18.0: not under local
    graphs at all); no captured `moe` under any graph; with full-iteration graphs a non-negative
    `--fine-grained-offloading-max-inflight-offloads`; no `expert_fc1` offload with the NCCL-EP
    all-to-all overlap.

    ## Why is this bad?
    Megatron-Core stops while it builds the model configuration: the activations are either
    recomputed or offloaded, not both.

    ## Example
    ```bash
    pretrain_gpt.py ... --fine-grained-activation-offloading --offload-modules moe_act \\
        --recompute-granularity selective --recompute-modules moe
    ```

    ## Fix
    Remove the module from one of the two lists, as the message says.
    """

    code = "TL637"
    name = "megatron-core-offload-module-combinations"
    summary = "an activation-offloading module list with recomputation, paged stashing or CUDA graphs Megatron-Core refuses"
    checks = (
        _C(TCFG, 2159, "main", _ON, ("offload_modules", "has", "gdp_qkv"), _SELECTIVE, ("recompute_modules", "has", "gdp_in_proj"),
           says="gdp_qkv cannot be set in offload_modules together with gdp_in_proj in recompute_modules"),
        *(_C(TCFG, 2169, "core_v0.19.0", _ON, ("offload_modules", "has", module), _SELECTIVE,
             ("recompute_modules", "has", "moe"), says=_MOE_RECOMPUTE)
          for module in ("moe_act", "expert_fc1", "fused_group_mlp")),
        *(_C(TCFG, 2191, "core_v0.19.0", _ON, ("offload_modules", "has", "fused_group_mlp"),
             ("offload_modules", "has", module), says=_FUSED)
          for module in ("expert_fc1", "moe_act")),
        *(_C(TCFG, 2222, "core_v0.18.0", ("moe_paged_stash", "on"), ("offload_modules", "has", module), says=_STASH)
          for module in ("expert_fc1", "moe_act")),
        _C(TCFG, 2222, "core_v0.19.0", ("moe_paged_stash", "on"), ("offload_modules", "has", "fused_group_mlp"),
           says=_STASH),
        # offloading under CUDA graphs
        *(_C(TCFG, 2934, "core_v0.19.0", _ON, _LOCAL, ("offload_modules", "has", module), says=_LOCAL_MODULES)
          for module in ("attn_norm", "core_attn", "attn_proj", "mlp_norm", "qkv_linear", "gdp_qkv")),
        _C(TCFG, 2940, "core_v0.19.0", _ON, _LOCAL, ("cuda_graph_modules", "empty"),
           says="fine-grained activation offloading with cuda_graph_impl='local' is not supported with whole-layer "
                "CUDA graph capture."),
        _C(TCFG, 2950, "core_v0.19.0", _ON, _LOCAL, ("cuda_graph_modules", "has", "moe"), says=_LOCAL_PARTIAL),
        _C(TCFG, 2352, "core_v0.18.0", _ON, _LOCAL,
           says="fine-grained activation offloading is only supported with transformer_engine CUDA graph implementation",
           last="core_v0.18.0"),
        _C(TCFG, 2960, "core_v0.18.0", _ON, ("cuda_graph_impl", "!=", "none"), ("cuda_graph_modules", "has", "moe"),
           says="Token-drop MoE is temporarily not supported with activation offloading."),
        _C(TCFG, 2968, "core_v0.18.0", _ON, ("cuda_graph_impl", "==", "full_iteration"),
           ("fine_grained_offloading_max_inflight_offloads", "unset"), says=_INFLIGHT),
        _C(TCFG, 2968, "core_v0.18.0", _ON, ("cuda_graph_impl", "==", "full_iteration"),
           ("fine_grained_offloading_max_inflight_offloads", "<", 0), says=_INFLIGHT),
        _C(TCFG, 3054, "core_v0.19.0", _ON, ("offload_modules", "has", "expert_fc1"),
           ("overlap_moe_expert_parallel_comm", "on"), ("moe_token_dispatcher_type", "==", "flex"),
           ("moe_flex_dispatcher_backend", "==", "ncclep"),
           says="overlap_moe_expert_parallel_comm with ncclep does not support offloading 'expert_fc1'"),
    )


OffloadModuleCombinations.__doc__ = (OffloadModuleCombinations.__doc__ or "").rstrip() + "\n" + \
    references(OffloadModuleCombinations.checks)
