"""TL171: reinforcement-learning options (--perform-rl-step) Megatron-LM refuses together"""

from __future__ import annotations


from trainlint.rules.startup.megatron.base import ARGS
from trainlint.rules.startup.megatron.check_table import CheckTable, _C, with_references


@with_references
class RlArguments(CheckTable):
    """## What it does
    Checks the reinforcement-learning options of `--perform-rl-step`: CUDA-graph persistence needs
    CUDA graphs, KV-cache offloading needs persisted graphs and no unified memory, in-flight requests
    and the generation lag exclude each other and need partial rollouts when above one batch,
    submission / consumption granularities, sequence packing with micro batch 1.

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    train_rl.py ... --perform-rl-step --rl-kv-cache-management-mode offload
    ```

    ## Fix
    Use the combination the message names.
    """

    code = "TL171"
    name = "megatron-rl-arguments"
    summary = "reinforcement-learning options (--perform-rl-step) Megatron-LM refuses together"
    checks = (
        _C(ARGS, 481, "core_v0.17.0", ("rl_persist_cuda_graphs", "on"), ("perform_rl_step", "on"),
           ("cuda_graph_impl", "==", "none"), says="--rl-persist-cuda-graphs is set but no CUDA graphs are being built."),
        _C(ARGS, 485, "core_v0.17.0", ("rl_training_cuda_graphs", "on"), ("perform_rl_step", "on"),
           ("cuda_graph_impl", "==", "none"), says="--rl-training-cuda-graphs is set but no CUDA graphs are being built."),
        _C(ARGS, 501, "core_v0.17.0", ("rl_kv_cache_management_mode", "==", "offload"), ("perform_rl_step", "on"),
           ("rl_persist_cuda_graphs", "off"),
           says="--rl-kv-cache-management-mode=offload requires --rl-persist-cuda-graphs"),
        _C(ARGS, 506, "core_v0.17.0", ("rl_kv_cache_management_mode", "==", "offload"), ("perform_rl_step", "on"),
           ("inference_dynamic_batching_unified_memory_level", ">", 0),
           says="--rl-kv-cache-management-mode=offload is incompatible with UVM"),
        _C(ARGS, 522, "core_v0.17.0", ("rl_offload_inference_model_weights_when_idle", "on"), ("perform_rl_step", "on"),
           ("rl_inference_model_unified_memory_level", "!=", 1),
           says="To use --rl-offload-inference-model-weights-when-idle without UVM (--rl-inference-model-unified-memory-"
                "level=1), ..."),
        _C(ARGS, 494, "core_v0.17.0", ("rl_persist_cuda_graphs", "on"), ("perform_rl_step", "on"),
           ("rl_kv_cache_management_mode", "!=", "persist"), ("inference_dynamic_batching_unified_memory_level", "<=", 0),
           says="Persisting CUDA graphs requires static KV cache memory."),
        _C(ARGS, 530, "main", ("rl_max_inflight_requests", "set"), ("perform_rl_step", "on"), ("rl_generation_lag", "set"),
           says="--rl-generation-lag and --rl-max-inflight-requests are mutually exclusive."),
        _C(ARGS, 532, "main", ("rl_max_inflight_requests", "<", 1), ("perform_rl_step", "on"),
           says="--rl-max-inflight-requests must be >= 1."),
        _C(ARGS, 546, "main", ("rl_generation_lag", "<", -1), ("perform_rl_step", "on"),
           says="--rl-generation-lag must be >= -1."),
        _C(ARGS, 549, "main", ("rl_generation_lag", ">", 0), ("perform_rl_step", "on"), ("rl_partial_rollouts", "off"),
           says="--rl-generation-lag requires --rl-partial-rollouts."),
        _C(ARGS, 551, "main", ("rl_submission_granularity", "!=", "B"), ("perform_rl_step", "on"),
           ("rl_partial_rollouts", "off"), says="--rl-submission-granularity requires --rl-partial-rollouts."),
        _C(ARGS, 554, "core_v0.19.0", ("rl_consumption_granularity", "==", "R"), ("perform_rl_step", "on"),
           says="--rl-consumption-granularity R is not currently supported."),
        _C(ARGS, 556, "core_v0.19.0", ("rl_consumption_granularity", "==", "G"), ("perform_rl_step", "on"),
           ("rl_submission_granularity", "==", "B"),
           says="--rl-submission-granularity B with --rl-consumption-granularity G is not supported."),
        _C(ARGS, 564, "core_v0.16.0", ("rl_use_sequence_packing", "on"), ("perform_rl_step", "on"),
           ("micro_batch_size", "!=", 1), says="micro_batch_size must be 1 when using sequence packing."),
    )
