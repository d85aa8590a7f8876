"""TL608: --rampup-batch-size as the releases before Megatron-Core's micro-batch calculator read it
(core_v0.4.0 to core_v0.7.0: megatron/training/microbatches.py), and the training modes validate_args
refuses it with."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, Dest, R, ReleaseCheckTable, document

MICRO = "megatron/training/microbatches.py"
_RAMPUP = ("rampup_batch_size", "set")


class BatchRampupArguments(ReleaseCheckTable):
    """## What it does
    Checks `--rampup-batch-size <start> <increment> <samples>`: refused with iteration-based training
    (`--train-iters`, core_v0.4.0 to core_v0.17.0; core_v0.17.0 exempts `--skip-train`) and with
    multi-phase training (`--phase-transition-iterations`, core_v0.16.0 and core_v0.17.0); and, up to
    core_v0.7.0, three numbers with a positive start batch no larger than the global batch, a positive
    increment dividing the difference, and a non-negative number of ramp-up samples.

    ## Why is this bad?
    `validate_args` or the micro-batch calculator stops at start-up.

    ## Example
    ```bash
    # framework = {megatron = "core_v0.7.0"}
    pretrain_gpt.py ... --train-samples 1000000 --global-batch-size 256 --rampup-batch-size 32 48 100000
    ```

    ## Fix
    Train by samples (`--train-samples`) with a ramp-up whose increment divides global batch - start.
    """

    code = "TL608"
    name = "megatron-batch-rampup-arguments"
    summary = "--rampup-batch-size with iteration-based or multi-phase training, or malformed for the release"
    checks = (
        R(ARGS, 765, "core_v0.4.0", "core_v0.16.0", _RAMPUP, ("train_iters", "on"),
          says="expected no batch-size rampup for iteration-based training"),
        R(ARGS, 1051, "core_v0.17.0", "core_v0.17.0", _RAMPUP, ("train_iters", "on"), ("skip_train", "off"),
          says="expected no batch-size rampup for iteration-based training"),
        R(ARGS, 560, "core_v0.16.0", "core_v0.17.0", _RAMPUP, ("phase_transition_iterations", "on"),
          says="multi-phase training does not support batch size ramp-up"),
        R(MICRO, 21, "core_v0.4.0", "core_v0.7.0", _RAMPUP, ("rampup_batch_size", "length !=", 3),
          says="expected the following format: --rampup-batch-size <start batch size> <batch size incerement> "
               "<ramp-up samples>"),
        R(MICRO, 105, "core_v0.4.0", "core_v0.7.0", _RAMPUP, ("rampup_start", "<=", 0), says="assert start_batch_size > 0"),
        R(MICRO, 111, "core_v0.4.0", "core_v0.7.0", _RAMPUP, ("rampup_start", ">", 0), ("rampup_rest", "<", 0),
          says="assert diff_batch_size >= 0 (the start batch is above the global batch)"),
        R(MICRO, 112, "core_v0.4.0", "core_v0.7.0", _RAMPUP, ("rampup_start", ">", 0), ("rampup_rest", ">=", 0),
          ("rampup_increment", "<=", 0), says="assert batch_size_increment > 0"),
        R(MICRO, 114, "core_v0.4.0", "core_v0.7.0", _RAMPUP, ("rampup_start", ">", 0), ("rampup_rest", ">=", 0),
          ("rampup_increment", ">", 0), ("rampup_rest", "not a multiple of", Dest("rampup_increment")),
          says="expected global batch size interval to be divisible by global batch size increment"),
        R(MICRO, 120, "core_v0.4.0", "core_v0.7.0", _RAMPUP, ("rampup_start", ">", 0), ("rampup_rest", ">=", 0),
          ("rampup_increment", ">", 0), ("rampup_samples", "<", 0), says="assert self.ramup_samples >= 0"),
    )


document(BatchRampupArguments)
RULES: list[type] = [BatchRampupArguments]
