"""TL611: Megatron-LM start-up checks outside Megatron-Core's config objects that hold for a range of
releases and that no other rule made (from the launch-check audit): a decoder sequence length other
than the sequence length with the interleaved schedule (core_v0.4.0-0.11.0), and RL rollout
submission per rollout without streaming rollouts (core_v0.19.0)."""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import ARGS
from trainlint.rules.startup.megatron.release_table import Dest, R, ReleaseCheckTable, document, quiet

SCHEDULES = "megatron/core/pipeline_parallel/schedules.py"


class LaunchReleaseChecks(ReleaseCheckTable):
    """## What it does
    Checks two start-up conditions of some releases:

    * `--decoder-seq-length` other than `--seq-length` with the interleaved pipeline schedule (a
      virtual pipeline size from `--num-layers-per-virtual-pipeline-stage` or
      `--num-virtual-stages-per-pipeline-rank`, pipeline parallelism above 1): the training step passes
      both lengths to the schedule, which refuses them (core_v0.4.0 to core_v0.11.0);
    * `--rl-submission-granularity R` in an RL run (`--perform-rl-step`) without
      `--rl-partial-rollouts` (core_v0.19.0).

    They speak only when the run states or locates such a release (upstream no longer makes them).

    ## Why is this bad?
    The schedule raises in the first training step; validate_args asserts at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --seq-length 2048 --decoder-seq-length 1024 \\
        --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2   # core_v0.11.0
    ```

    ## Fix
    Drop `--decoder-seq-length` (or the virtual pipeline); add `--rl-partial-rollouts` or submit per batch.
    """

    code = "TL611"
    name = "megatron-launch-release-checks"
    summary = "decoder sequence length with the interleaved schedule, or RL rollout submission, refused by a release"
    checks = (
        # validate_args sets a virtual pipeline size (the interleaved schedule) from either virtual-stage option;
        # --num-virtual-stages-per-pipeline-rank exists from core_v0.11.0
        *(R(SCHEDULES, 676, first, "core_v0.11.0", ("decoder_seq_length", "set"),
            ("decoder_seq_length", "!=", Dest("seq_length")), ("pipeline_model_parallel_size", ">", 1), (virtual, "set"),
            says="Interleaving is not supported with a different decoder sequence length.")
          for first, virtual in (("core_v0.4.0", "num_layers_per_virtual_pipeline_stage"),
                                 ("core_v0.11.0", "num_virtual_stages_per_pipeline_rank"))),
        R(ARGS, 533, "core_v0.19.0", "core_v0.19.0", ("rl_submission_granularity", "==", "R"),
          ("perform_rl_step", "on"), ("rl_partial_rollouts", "off"), quiet("rl_generation_lag", "<=", 0),
          says="Rollout submission granularity requires streaming grouped rollouts."),
    )


document(LaunchReleaseChecks)
RULES: list[type] = [LaunchReleaseChecks]
