"""TL643: ``--transformer-impl inference_optimized`` with MoE layers against the activation,
grouped-GEMM backend, CUDA-graph and batch-invariance options Megatron-Core's ``TransformerConfig``
refuses it with (from the launch-check audit). Its MoE basics (expert TP, dropless routing, router
dtype) are TL170's."""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references

_IMPL: Cond = ("transformer_impl", "==", "inference_optimized")
_MOE: Cond = ("num_experts", "set")
_GATED = ("swiglu", "quick_geglu")
"""The flags that make a gated linear unit (``core_transformer_config_from_args``)."""


class InferenceOptimizedArguments(CheckTable):
    """## What it does
    Checks `--transformer-impl inference_optimized` in MoE models: gated linear units (`--swiglu`,
    `--quick-geglu`) only with the `torch` or `vllm` grouped-GEMM backend (upstream; not at all in
    core_v0.18.0 and core_v0.19.0; not with local CUDA graphs in core_v0.17.0); TE grouped GEMM not
    with local CUDA graphs (core_v0.17.0); with `--batch-invariant-mode` the `torch` or `vllm`
    backend and, with expert parallelism, the `nvls` inference dispatcher (upstream).

    ## Why is this bad?
    `TransformerConfig.__post_init__` raises while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --transformer-impl inference_optimized --num-experts 8 --swiglu \\
        --inference-grouped-gemm-backend flashinfer
    ```

    ## Fix
    Use the backend the message names, or a non-gated activation.
    """

    code = "TL643"
    name = "megatron-core-inference-optimized-arguments"
    summary = "inference-optimized MoE layers with an activation, backend or mode Megatron-Core refuses"
    checks = (
        *(_C(TCFG, 1622, "main", _IMPL, _MOE, (flag, "on"), ("inference_grouped_gemm_backend", "==", "flashinfer"),
             says="--transformer-impl='inference_optimized' supports gated linear units (SwiGLU/GeGLU) only with "
                  "--inference-grouped-gemm-backend torch or vllm") for flag in _GATED),
        *(_C(TCFG, 1490, "core_v0.18.0", _IMPL, _MOE, (flag, "on"),
             says="--transformer-impl='inference_optimized' does not yet support gated linear units (SwiGLU/GeGLU).",
             last="core_v0.19.0") for flag in _GATED),
        *(_C(TCFG, 1189, "core_v0.17.0", _IMPL, _MOE, (flag, "on"), ("cuda_graph_impl", "==", "local"),
             says="--transformer-impl='inference_optimized' does not yet support CUDA graphs with gated linear units "
                  "(SwiGLU/GeGLU)", last="core_v0.17.0") for flag in _GATED),
        _C(TCFG, 1212, "core_v0.17.0", _IMPL, _MOE, ("cuda_graph_impl", "==", "local"),
           ("inference_grouped_gemm_backend", "==", "te"),
           says="TE GroupedGEMM is not supported with CUDA graphs.", last="core_v0.17.0"),
        _C(TCFG, 1669, "main", _IMPL, _MOE, ("batch_invariant_mode", "on"), ("inference_grouped_gemm_backend", "==", "flashinfer"),
           says="batch_invariant_mode requires inference_grouped_gemm_backend 'torch' or 'vllm'."),
        _C(TCFG, 1677, "main", _IMPL, _MOE, ("batch_invariant_mode", "on"), ("expert_model_parallel_size", ">", 1),
           ("inference_moe_token_dispatcher_type", "!=", "nvls"),
           says="batch_invariant_mode with inference-optimized MoE and expert parallelism requires "
                "inference_moe_token_dispatcher_type='nvls'."),
    )


InferenceOptimizedArguments.__doc__ = (InferenceOptimizedArguments.__doc__ or "").rstrip() + "\n" + \
    references(InferenceOptimizedArguments.checks)
