"""TL602: CUDA-graph options validate_args refuses, per release (the flags and scopes changed in
every release from core_v0.13.0: --enable-cuda-graph / --external-cuda-graph, then --cuda-graph-impl
with a --cuda-graph-scope string, a list of scopes, and upstream --cuda-graph-modules)."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, R, ReleaseCheckTable, document, quiet

_NAN = ("check_for_nan_in_loss_and_grad", "on")
# fp16 with dynamic loss scaling (no --loss-scale) turns the NaN check off earlier in validate_args
_NAN_KEPT = ((quiet("fp16", "off"),), (("fp16", "on"), ("loss_scale", "set")))
# the deprecated --enable-cuda-graph / --external-cuda-graph set --cuda-graph-impl first (core_v0.15.0 on)
_LOCAL = (("cuda_graph_impl", "==", "local"), quiet("enable_cuda_graph", "off"), quiet("external_cuda_graph", "off"))
# --recompute-activations sets the granularity to selective first
_FULL = (("recompute_granularity", "==", "full"), quiet("recompute_activations", "off"))
_NAN_SAYS = "--no-check-for-nan-in-loss-and-grad should be set with full_iteration CUDA graph"
_FP8_IDB = "fp8 is not supported with inference dynamic batching and full_iteration CUDA graph"
_PAD = "--moe-pad-experts-for-cuda-graph-inference must be set when using CUDA graphs with expert parallelism"
_RECOMPUTE = "recompute_granularity must not be full when CUDA Graphs are enabled."
_FUSION = ("CUDA graph with delay_wgrad_compute requires gradient_accumulation_fusion to be enabled. This is because "
           "the default gradient accumulation does not use static memory addresses, which breaks CUDA graph requirements.")
_BIAS = "CUDA graph with delay_wgrad_compute doesn't support attn bias for now."
_DELAY = (("delay_wgrad_compute", "on"), ("overlap_grad_reduce", "on"))
CGC = "megatron/core/transformer/cuda_graph_config.py"
"""The helpers validate_args normalises the CUDA-graph options with (core_v0.18.0 on)."""
_FI, _FII = "full_iteration", "full_iteration_inference"
_MODULES = "cuda_graph_modules"
_NO_DEPRECATED = (quiet(_MODULES, "lacks", _FI), quiet(_MODULES, "lacks", _FII), quiet("enable_cuda_graph", "off"),
                  quiet("external_cuda_graph", "off"))
_SCOPES_SAYS = "Invalid inference CUDA graph scope for --cuda-graph-impl."


class CudaGraphReleaseArguments(ReleaseCheckTable):
    """## What it does
    Checks CUDA-graph options against the release that reads them: full-iteration graphs need
    `--no-check-for-nan-in-loss-and-grad` for training and no FP8 with inference dynamic batching;
    FP8 full-iteration inference graphs and block-scoped inference graphs need the
    `inference_optimized` transformer and the MXFP8 recipe; graphs with expert parallelism need
    `--moe-pad-experts-for-cuda-graph-inference` (core_v0.16.0, core_v0.17.0); graphs exclude full
    recomputation (core_v0.14.0, core_v0.15.0); `--enable-cuda-graph` excludes `--external-cuda-graph`
    and the external graphs need `--te-rng-tracker` (core_v0.13.0); the `full` scope stands alone;
    the local implementation needs a positive number of inference graphs (or -1); delayed weight
    gradients with overlapped gradient reduction and attention in the graph need gradient
    accumulation fusion and no attention biases; the inference graph scope must be one the
    implementation takes (`local`: `layer` or `block`; the others: `none`), and the deprecated
    `full_iteration` / `full_iteration_inference` modules must not contradict the new options.

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    # framework = {megatron = "core_v0.15.0"}
    pretrain_gpt.py ... --cuda-graph-impl local --cuda-graph-scope full_iteration
    ```

    ## Fix
    Add the option the message names (`--no-check-for-nan-in-loss-and-grad`, ...), or drop the one
    that needs it.
    """

    code = "TL602"
    name = "megatron-cuda-graph-release-arguments"
    summary = "CUDA-graph options a Megatron-LM release refuses (NaN check, FP8, EP padding, scopes, recompute)"
    checks = (
        R(CGC, 40, "core_v0.18.0", None, (_MODULES, "has", "full"), (_MODULES, "several"),
          says="full scope cannot be used with other scopes."),
        R(CGC, 98, "core_v0.18.0", None, (_MODULES, "has", _FI), (_MODULES, "has", _FII),
          says="cuda_graph_modules cannot contain multiple deprecated values at the same time"),
        R(CGC, 108, "core_v0.18.0", None, (_MODULES, "has", _FI), (_MODULES, "lacks", _FII),
          ("cuda_graph_impl", "not in", ("none", "local", "full_iteration")),
          says="cuda_graph_modules='full_iteration' cannot be combined with this cuda_graph_impl."),
        R(CGC, 112, "core_v0.18.0", None, (_MODULES, "has", _FI), (_MODULES, "lacks", _FII),
          ("inference_cuda_graph_scope", "not in", (None, "none")),
          says="cuda_graph_modules='full_iteration' cannot be combined with this inference_cuda_graph_scope."),
        R(CGC, 118, "core_v0.18.0", None, (_MODULES, "has", _FII), (_MODULES, "lacks", _FI),
          ("cuda_graph_impl", "not in", ("none", "local")),
          says="cuda_graph_modules='full_iteration_inference' cannot be combined with this cuda_graph_impl."),
        R(CGC, 122, "core_v0.18.0", None, (_MODULES, "has", _FII), (_MODULES, "lacks", _FI),
          ("inference_cuda_graph_scope", "not in", (None, "block")),
          says="cuda_graph_modules='full_iteration_inference' cannot be combined with this inference_cuda_graph_scope."),
        # ALLOWED_INFERENCE_SCOPES (cuda_graph_config.py): local takes layer or block, the others none
        R(ARGS, 647, "core_v0.18.0", None, ("inference_cuda_graph_scope", "in", ("layer", "block")),
          ("cuda_graph_impl", "!=", "local"), *_NO_DEPRECATED, says=_SCOPES_SAYS),
        R(ARGS, 647, "core_v0.18.0", None, ("inference_cuda_graph_scope", "==", "none"), ("cuda_graph_impl", "==", "local"),
          *_NO_DEPRECATED, says=_SCOPES_SAYS),
        R(ARGS, 1083, "core_v0.13.0", "core_v0.13.0", ("external_cuda_graph", "on"), ("te_rng_tracker", "off"),
          says="--te-rng-tracker must be enabled when using CUDA Graphs."),
        *(R(ARGS, 670, "core_v0.14.0", "core_v0.14.0", ("enable_cuda_graph", "on"), ("cuda_graph_scope", "==", "full_iteration"),
            _NAN, *kept, says=_NAN_SAYS) for kept in _NAN_KEPT),
        R(ARGS, 1102, "core_v0.14.0", "core_v0.14.0", ("enable_cuda_graph", "on"), ("external_cuda_graph", "on"),
          says="enable_cuda_graph and external_cuda_graph cannot be enabled at the same time."),
        R(ARGS, 1114, "core_v0.14.0", "core_v0.14.0", ("external_cuda_graph", "on"), *_FULL,
          says=_RECOMPUTE),
        *(R(ARGS, 751, "core_v0.15.0", "core_v0.15.0", *_LOCAL, ("cuda_graph_scope", "==", "full_iteration"),
            quiet("inference_dynamic_batching", "off"), _NAN, *kept, says=_NAN_SAYS) for kept in _NAN_KEPT),
        R(ARGS, 754, "core_v0.15.0", "core_v0.15.0", *_LOCAL, ("cuda_graph_scope", "==", "full_iteration"),
          ("inference_dynamic_batching", "on"), ("fp8", "set"), says=_FP8_IDB),
        R(ARGS, 1202, "core_v0.15.0", "core_v0.15.0", ("cuda_graph_impl", "!=", "none"), *_FULL,
          quiet("enable_cuda_graph", "off"), quiet("external_cuda_graph", "off"),
          says=_RECOMPUTE),
        *(R(ARGS, 727, "core_v0.16.0", "core_v0.16.0", *_LOCAL, ("cuda_graph_scope", "has", "full_iteration"),
            quiet("inference_dynamic_batching", "off"), _NAN, *kept, says=_NAN_SAYS) for kept in _NAN_KEPT),
        R(ARGS, 730, "core_v0.16.0", "core_v0.16.0", *_LOCAL, ("cuda_graph_scope", "has", "full_iteration"),
          ("inference_dynamic_batching", "on"), ("fp8", "set"), says=_FP8_IDB),
        R(ARGS, 1159, "core_v0.16.0", "core_v0.16.0", *_LOCAL, ("expert_model_parallel_size", ">", 1),
          ("moe_pad_experts_for_cuda_graph_inference", "off"), says=_PAD),
        R(ARGS, 1578, "core_v0.16.0", "core_v0.17.0", ("cuda_graph_scope", "has", "full"), ("cuda_graph_scope", "several"),
          says="full scope cannot be used with other scopes."),
        *(R(ARGS, 1002, "core_v0.17.0", "core_v0.17.0", *_LOCAL, ("cuda_graph_scope", "has", "full_iteration"), _NAN, *kept,
            says="--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-scope=full_iteration for training.")
          for kept in _NAN_KEPT),
        R(ARGS, 1007, "core_v0.17.0", "core_v0.17.0", *_LOCAL, ("cuda_graph_scope", "has", "full_iteration_inference"),
          ("fp8", "set"), ("transformer_impl", "!=", "inference_optimized"),
          says="fp8 with full_iteration_inference CUDA graphs is only supported with --transformer-impl=inference_optimized"),
        R(ARGS, 1010, "core_v0.17.0", "core_v0.17.0", *_LOCAL, ("cuda_graph_scope", "has", "full_iteration_inference"),
          ("fp8", "set"), ("fp8_recipe", "!=", "mxfp8"),
          says="Only --fp8-recipe=mxfp8 is supported with full_iteration_inference CUDA graphs"),
        R(ARGS, 1451, "core_v0.17.0", "core_v0.17.0", *_LOCAL, ("expert_model_parallel_size", ">", 1),
          ("transformer_impl", "!=", "inference_optimized"), ("moe_pad_experts_for_cuda_graph_inference", "off"),
          says=_PAD),
        R(ARGS, 1248, "core_v0.17.0", None, *_LOCAL, ("inference_dynamic_batching_num_cuda_graphs", "<=", 0),
          ("inference_dynamic_batching_num_cuda_graphs", "!=", -1),
          says="inference_dynamic_batching_num_cuda_graphs should be a positive integer or -1"),
        R(ARGS, 1241, "core_v0.18.0", None, ("inference_cuda_graph_scope", "==", "block"), ("fp8", "set"),
          ("transformer_impl", "!=", "inference_optimized"),
          says="fp8 with --inference-cuda-graph-scope=block is only supported with --transformer-impl=inference_optimized"),
        R(ARGS, 1244, "core_v0.18.0", None, ("inference_cuda_graph_scope", "==", "block"), ("fp8", "set"),
          ("fp8_recipe", "!=", "mxfp8"),
          says="Only --fp8-recipe=mxfp8 is supported with --inference-cuda-graph-scope=block"),
        R(ARGS, 1523, "core_v0.17.0", "core_v0.17.0", *_DELAY, ("cuda_graph_scope", "has", "attn"),
          ("gradient_accumulation_fusion", "off"), says=_FUSION),
        *(R(ARGS, 1529, "core_v0.17.0", "core_v0.17.0", *_DELAY, ("cuda_graph_scope", "has", "attn"), (bias, "on"),
            says=_BIAS) for bias in ("add_bias_linear", "add_qkv_bias")),
        R(ARGS, 1919, "core_v0.18.0", None, *_DELAY, ("cuda_graph_modules", "has", "attn"),
          ("gradient_accumulation_fusion", "off"), says=_FUSION),
        *(R(ARGS, 1925, "core_v0.18.0", None, *_DELAY, ("cuda_graph_modules", "has", "attn"), (bias, "on"), says=_BIAS)
          for bias in ("add_bias_linear", "add_qkv_bias")),
    )


document(CudaGraphReleaseArguments)
RULES: list[type] = [CudaGraphReleaseArguments]
