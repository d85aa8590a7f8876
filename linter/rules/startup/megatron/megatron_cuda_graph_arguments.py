"""TL167: CUDA-graph options with CPU offloading, full recomputation or other options Megatron-Core refuses"""

from __future__ import annotations


from trainlint.rules.startup.megatron.base import ARGS, TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, _C, with_references


_NONE_OR_FULL = ("none", "full_iteration")


@with_references
class CudaGraphArguments(CheckTable):
    """## What it does
    Checks CUDA-graph options against what Megatron-Core captures: graphs with activation CPU
    offloading, full recomputation outside full-iteration graphs, modules listed for a full-iteration
    graph, the NaN check of full-iteration graphs, fine-grained offloading without warm-up steps.

    ## Why is this bad?
    `validate_args` or `TransformerConfig.__post_init__` stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --cuda-graph-impl transformer_engine --cpu-offloading-num-layers 2
    ```

    ## Fix
    Drop one of the two options, or use the combination the message names.
    """

    code = "TL167"
    name = "megatron-cuda-graph-arguments"
    summary = "CUDA-graph options with CPU offloading, full recomputation or other options Megatron-Core refuses"
    checks = (
        _C(TCFG, 2801, "core_v0.18.0", ("cuda_graph_impl", "not in", _NONE_OR_FULL), ("cpu_offloading", "on"),
           says="CUDA graphs not supported with CPU offloading."),
        _C(TCFG, 2856, "core_v0.18.0", ("cuda_graph_impl", "not in", _NONE_OR_FULL), ("recompute_granularity", "==", "full"),
           says="full recompute is only supported with full iteration CUDA graph."),
        _C(ARGS, 1969, "core_v0.18.0", ("cuda_graph_impl", "==", "full_iteration"), ("cuda_graph_modules", "nonempty"),
           says="--cuda-graph-modules must be empty when --cuda-graph-impl=full_iteration"),
        _C(ARGS, 1236, "core_v0.18.0", ("cuda_graph_impl", "==", "full_iteration"), ("check_for_nan_in_loss_and_grad", "on"),
           says="--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration for training."),
        _C(TCFG, 2963, "core_v0.18.0", ("cuda_graph_impl", "!=", "none"), ("fine_grained_activation_offloading", "on"),
           ("cuda_graph_warmup_steps", "<=", 0),
           says="cuda_graph_warmup_steps must be greater than 0 when enabling fine-grained activation offloading"),
        _C(ARGS, 1856, "core_v0.10.0", ("inference_batch_times_seqlen_threshold", ">", -1),
           ("pipeline_model_parallel_size", "<=", 1),
           says="--inference-batch-times-seqlen-threshold requires setting --pipeline-model-parallel-size > 1."),
        _C(ARGS, 1858, "core_v0.15.0", ("inference_batch_times_seqlen_threshold", ">", -1), ("cuda_graph_impl", "!=", "none"),
           says="Pipeline-parallel microbatched inference is incompatible with CUDA graphs"),
    )
