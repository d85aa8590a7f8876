"""TL638: ``--cuda-graph-modules`` against the model, as Megatron-Core's ``TransformerConfig``
checks the modules a per-layer CUDA graph captures (core_v0.18.0 and later; from the launch-check
audit). The implementation-level checks (CPU offloading, full recomputation, full-iteration graphs)
are TL167's."""

from __future__ import annotations

from trainlint import hookimpl
from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.combinations import CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references

_PER_LAYER: Cond = ("cuda_graph_impl", "in", ("local", "transformer_engine"))
_HAS = "cuda_graph_modules"
_DTOH = ("moe_preprocess cuda graph is not supported when there are DtoH copies and synchronizations in the "
         "preprocess step.")


class CudaGraphModules(CheckTable):
    """## What it does
    Checks the modules a per-layer CUDA graph (`--cuda-graph-impl local` or `transformer_engine`)
    captures: not both `moe` and `moe_router` (the local implementation adds `moe_router` for
    `moe_preprocess`); `moe_preprocess` only with `moe_router` (Transformer Engine graphs); `moe`
    and `moe_router` only in MoE models; `mlp` only when some layers are dense; `moe` only for
    drop-and-pad MoE (`--moe-expert-capacity-factor` with `--moe-pad-expert-input-to-capacity`);
    `moe_preprocess` not with the `alltoall` dispatcher when token dropping or FP8 router padding
    copy to the host; `moe_router` not with a recomputed `moe` under Transformer Engine graphs;
    neither `moe` nor `mlp` with the expert-parallel all-to-all overlap.

    ## Why is this bad?
    `TransformerConfig.__post_init__` asserts while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --cuda-graph-impl transformer_engine --cuda-graph-modules attn moe_router
    # no --num-experts
    ```

    ## Fix
    Capture the modules the model has (`attn`, `mlp` for dense models).
    """

    code = "TL638"
    name = "megatron-core-cuda-graph-modules"
    summary = "CUDA-graph modules that the model or the other modules make Megatron-Core refuse"
    checks = (
        _C(TCFG, 2817, "core_v0.18.0", (_HAS, "has", "moe"), _PER_LAYER, (_HAS, "has", "moe_router"),
           says="cuda_graph_modules must not contain both moe and moe_router."),
        _C(TCFG, 2817, "core_v0.18.0", (_HAS, "has", "moe"), ("cuda_graph_impl", "==", "local"),
           (_HAS, "has", "moe_preprocess"), says="cuda_graph_modules must not contain both moe and moe_router."),
        _C(TCFG, 2822, "core_v0.18.0", (_HAS, "has", "moe_preprocess"), ("cuda_graph_impl", "==", "transformer_engine"),
           (_HAS, "lacks", "moe_router"), says="moe_preprocess cuda graph is only supported with moe_router cuda graph."),
        *(_C(TCFG, 2826, "core_v0.18.0", (_HAS, "has", module), _PER_LAYER, ("num_experts", "unset"),
             says="moe cuda graph is only supported for MoE.") for module in ("moe", "moe_router")),
        _C(TCFG, 2826, "core_v0.18.0", (_HAS, "has", "moe_preprocess"), ("cuda_graph_impl", "==", "local"),
           ("num_experts", "unset"), says="moe cuda graph is only supported for MoE."),
        _C(TCFG, 2834, "core_v0.18.0", (_HAS, "has", "mlp"), _PER_LAYER, ("num_experts", ">", 1), ("moe_layer_freq", "==", 1),
           says="mlp cuda graph is only supported for dense layers, but not found in the model."),
        _C(TCFG, 2842, "core_v0.18.0", (_HAS, "has", "moe"), _PER_LAYER, ("num_experts", ">", 1),
           ("moe_expert_capacity_factor", "unset"), says="moe cuda graph is only supported with drop-padding MoE."),
        _C(TCFG, 2842, "core_v0.18.0", (_HAS, "has", "moe"), _PER_LAYER, ("num_experts", ">", 1),
           ("moe_pad_expert_input_to_capacity", "off"), says="moe cuda graph is only supported with drop-padding MoE."),
        *(_C(TCFG, 2849, "core_v0.18.0", (_HAS, "has", "moe_preprocess"), _PER_LAYER, ("num_experts", ">", 1),
             ("moe_token_dispatcher_type", "==", "alltoall"), *extra, says=_DTOH)
          for extra in ((("moe_expert_capacity_factor", "set"), ("moe_pad_expert_input_to_capacity", "off")),
                        (("moe_expert_capacity_factor", "unset"), ("moe_router_padding_for_fp8", "on")))),
        _C(TCFG, 2866, "core_v0.18.0", (_HAS, "has", "moe_router"), ("cuda_graph_impl", "==", "transformer_engine"),
           ("recompute_granularity", "==", "selective"), ("recompute_modules", "has", "moe"),
           says="moe recompute is not supported with moe_router CUDA graph with: --cuda-graph-impl transformer_engine."),
        *(_C(TCFG, 3065, "core_v0.18.0", (_HAS, "has", module), ("cuda_graph_impl", "==", "transformer_engine"),
             ("overlap_moe_expert_parallel_comm", "on"),
             says="CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm")
          for module in ("moe", "mlp")),
    )


CudaGraphModules.__doc__ = (CudaGraphModules.__doc__ or "").rstrip() + "\n" + references(CudaGraphModules.checks)

RULES: list[type] = [CudaGraphModules]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
