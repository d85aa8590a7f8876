"""TL605: reinforcement-learning options (--perform-rl-step) validate_args refuses: the batch and
interval arithmetic of GRPO, and the options of releases that TL171 (upstream's) does not read."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, Dest, R, ReleaseCheckTable, document

_RL = ("perform_rl_step", "on")
_GENS = "rl_num_parallel_generations"


class RlReleaseArguments(ReleaseCheckTable):
    """## What it does
    Checks GRPO's arithmetic and the RL options of each release: the samples one inference iteration
    generates (prompts per step x group size x GRPO iterations) must be a multiple of the global
    batch, and `--exit-interval` / `--save-interval` multiples of the training iterations per
    inference iteration; more in-flight requests than one training batch need partial rollouts
    (upstream); the optimizer cannot be offloaded when `--skip-train --no-load-optim` leaves none;
    and the KV-cache, parallel-generation, sequence-packing and inference expert-parallel options of
    core_v0.15.0 to core_v0.18.0.

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    train_rl.py ... --perform-rl-step --grpo-prompts-per-step 8 --grpo-group-size 4 --global-batch-size 12
    ```

    ## Fix
    Choose a global batch that divides prompts x group size x iterations, and intervals that are
    multiples of the iterations per inference step; add the option the message names.
    """

    code = "TL605"
    name = "megatron-rl-release-arguments"
    summary = "GRPO batch and interval arithmetic, and RL options a Megatron-LM release refuses"
    checks = (
        R(ARGS, 727, "core_v0.15.0", None, _RL,
          ("rl_samples_per_inference_iteration", "not a multiple of", Dest("global_batch_size")),
          says="grpo_group_size * grpo_prompts_per_step * grpo_iterations should be divisible by global_batch_size"),
        R(ARGS, 735, "core_v0.15.0", None, ("exit_interval", "set"), _RL,
          ("exit_interval", "not a multiple of", Dest("rl_iterations_per_inference_iteration")),
          says="exit_interval should be divisible by number of global batches per inference iteration."),
        R(ARGS, 738, "core_v0.15.0", None, ("save_interval", "set"), _RL,
          ("save_interval", "not a multiple of", Dest("rl_iterations_per_inference_iteration")),
          says="save_interval should be divisible by number of global batches per inference iteration."),
        R(ARGS, 535, "main", None, ("rl_max_inflight_requests", "set"), _RL,
          ("rl_max_inflight_requests", ">", Dest("rl_requests_per_batch")), ("rl_partial_rollouts", "off"),
          says="--rl-max-inflight-requests above one training batch requires --rl-partial-rollouts."),
        R(ARGS, 1879, "core_v0.17.0", None, ("rl_offload_optimizer_during_inference", "on"), ("skip_train", "on"), _RL,
          ("no_load_optim", "on"),
          says="--no-load-optim with --skip-train --perform-rl-step skips the optimizer; "
               "--rl-offload-optimizer-during-inference is incompatible (no optimizer to offload)."),
        R(ARGS, 415, "core_v0.15.0", "core_v0.15.0", ("rl_use_sequence_packing", "on"), _RL,
          ("seq_length", ">", Dest("rl_sequence_packing_bin_size")),
          says="rl_sequence_packing_bin_size should be larger than or equal to seq_length"),
        R(ARGS, 340, "core_v0.15.0", "core_v0.16.0", ("rl_remove_kv_cache_during_training", "on"), _RL,
          ("rl_offload_kv_cache_during_training", "on"),
          says="Cannot use both remove-kv-cache-during-training and offload-kv-cache-during-training"),
        R(ARGS, 343, "core_v0.15.0", "core_v0.16.0", ("rl_remove_kv_cache_during_training", "on"), _RL,
          ("rl_partial_rollouts", "on"), says="Cannot use both partial-rollouts and remove-kv-cache-during-training"),
        R(ARGS, 336, "core_v0.16.0", "core_v0.16.0", ("rl_offload_kv_cache_during_training", "on"),
          ("inference_dynamic_batching_unified_memory_level", "on"),
          says="The KV cache should not be instantiated in unified memory when it is offloaded during training."),
        R(ARGS, 346, "core_v0.16.0", "core_v0.16.0", ("rl_offload_inference_model_weights_when_idle", "on"), _RL,
          ("rl_inference_model_unified_memory_level", "!=", 1),
          says="--rl-offload-inference-model-weights-when-idle requires --rl-inference-model-unified-memory-level=1."),
        R(ARGS, 360, "core_v0.16.0", "core_v0.16.0", ("rl_inference_expert_model_parallel_size", "set"), _RL,
          ("rl_inference_expert_model_parallel_size", "!=", Dest("expert_model_parallel_size")),
          ("moe_use_legacy_grouped_gemm", "on"),
          says="Legacy GroupedMLP (--moe-use-legacy-grouped-gemm) is not supported when using different expert "
               "parallelism sizes for inference and training."),
        R(ARGS, 517, "core_v0.17.0", "core_v0.18.0", (_GENS, "set"), _RL, ("rl_parallel_generation_tasks", "set"),
          says="Cannot specify both --rl-num-parallel-generations and --rl-parallel-generation-tasks."),
        R(ARGS, 530, "core_v0.17.0", "core_v0.18.0", (_GENS, "set"), _RL, ("rl_num_parallel_generation_batches", "set"),
          says="--rl-num-parallel-generations and --rl-num-parallel-generation-batches are mutually exclusive."),
        R(ARGS, 535, "core_v0.17.0", "core_v0.18.0", (_GENS, "set"), _RL, ("rl_partial_rollouts", "off"),
          says="--rl-num-parallel-generations requires --rl-partial-rollouts."),
        R(ARGS, 537, "core_v0.17.0", "core_v0.18.0", (_GENS, "set"), _RL, ("rl_partial_rollouts", "on"),
          ("rl_parallel_generation_tasks", "unset"), ("rl_num_parallel_generation_batches", "unset"),
          (_GENS, "not a multiple of", Dest("grpo_group_size")),
          says="--rl-num-parallel-generations must be divisible by --grpo-group-size."),
        R(ARGS, 545, "core_v0.17.0", "core_v0.18.0", ("rl_num_parallel_generation_batches", "set"), _RL, (_GENS, "unset"),
          ("rl_parallel_generation_tasks", "unset"),
          ("rl_partial_rollouts", "off"), says="--rl-num-parallel-generation-batches requires --rl-partial-rollouts."),
    )


document(RlReleaseArguments)
RULES: list[type] = [RlReleaseArguments]
