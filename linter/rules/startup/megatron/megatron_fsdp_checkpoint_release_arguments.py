"""TL604: custom / Megatron-FSDP and checkpoint options of releases upstream's rules (TL142, TL172)
do not read: --use-custom-fsdp (core_v0.12.0, core_v0.13.0), FSDP manual registration before
core_v0.18.0, and non-persistent checkpoint types core_v0.9.0 / core_v0.10.0 refused."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, R, ReleaseCheckTable, document


class FsdpCheckpointReleaseArguments(ReleaseCheckTable):
    """## What it does
    Checks `--use-custom-fsdp` (core_v0.12.0, core_v0.13.0: it needs the distributed optimizer, and
    its `optim_grads` / `optim_grads_params` sharding needs `--no-gradient-accumulation-fusion`),
    `--fsdp-manual-registration` (core_v0.16.0, core_v0.17.0: it needs `--use-megatron-fsdp` and
    `--use-nccl-ub`), and `--non-persistent-ckpt-type` (core_v0.9.0, core_v0.10.0 accept only
    `global`).

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    # framework = {megatron = "core_v0.13.0"}
    pretrain_gpt.py ... --use-custom-fsdp --use-distributed-optimizer --data-parallel-sharding-strategy optim_grads_params
    ```

    ## Fix
    Add the option the message names, or use a release that accepts the combination.
    """

    code = "TL604"
    name = "megatron-fsdp-checkpoint-release-arguments"
    summary = "custom FSDP, FSDP manual registration or non-persistent checkpoint options a Megatron-LM release refuses"
    checks = (
        R(ARGS, 647, "core_v0.12.0", "core_v0.13.0", ("use_custom_fsdp", "on"), ("use_distributed_optimizer", "off"),
          says="--use-custom-fsdp only supported with distributed optimizer"),
        R(ARGS, 652, "core_v0.12.0", "core_v0.13.0", ("use_custom_fsdp", "on"), ("use_distributed_optimizer", "on"),
          ("data_parallel_sharding_strategy", "in", ("optim_grads_params", "optim_grads")),
          ("gradient_accumulation_fusion", "on"),
          says="optim_grads_params optim_grads are not supported with gradient accumulation fusion"),
        R(ARGS, 970, "core_v0.16.0", "core_v0.17.0", ("fsdp_manual_registration", "on"), ("use_megatron_fsdp", "off"),
          says="FSDP manual registration is only supported with Megatron FSDP"),
        R(ARGS, 971, "core_v0.16.0", "core_v0.17.0", ("fsdp_manual_registration", "on"), ("use_megatron_fsdp", "on"),
          ("nccl_ub", "off"), says="FSDP manual registration is only supported with nccl-ub option"),
        R(ARGS, 189, "core_v0.9.0", "core_v0.10.0", ("non_persistent_ckpt_type", "not in", ("global", None)),
          says="Currently only global checkpoints are supported"),
    )


document(FsdpCheckpointReleaseArguments)
RULES: list[type] = [FsdpCheckpointReleaseArguments]
