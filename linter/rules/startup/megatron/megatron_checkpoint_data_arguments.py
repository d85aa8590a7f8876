"""TL172: checkpoint, data and weight-decay options Megatron-LM accepts only together"""

from __future__ import annotations


from trainlint.rules.startup.megatron.base import ARGS
from trainlint.rules.startup.megatron.check_table import CheckTable, MPC, _C, with_references


@with_references
class CheckpointDataArguments(CheckTable):
    """## What it does
    Checks checkpoint, data and schedule options that need each other: `--use-checkpoint-args` needs a
    checkpoint to load (and no local non-persistent checkpoints), checkpoint conversion needs `--load`
    and a save path, local checkpoints need their directory, replication needs a jump and local
    checkpoints, logits saving needs its top-k and async save, upcycling needs `--save`, overriding the
    checkpoint iteration excludes `--finetune`, FIM data its rates and no mock data, the weight-decay
    schedule its start/end values, FSDP manual registration Megatron-FSDP with `--nccl-ub`, a positive
    number of dataset builder threads.

    ## Why is this bad?
    `validate_args` (or `load_args_from_checkpoint`) stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --replication --non-persistent-ckpt-type global
    ```

    ## Fix
    Give the option the message asks for, or drop the one that needs it.
    """

    code = "TL172"
    name = "megatron-checkpoint-data-arguments"
    summary = "checkpoint, data and weight-decay options Megatron-LM accepts only together"
    checks = (
        _C(ARGS, 94, "core_v0.18.0", ("use_checkpoint_args", "on"), ("load", "unset"), ("pretrained_checkpoint", "unset"),
           says="--use-checkpoint-args requires --load or --pretrained-checkpoint argument"),
        _C(ARGS, 95, "core_v0.18.0", ("use_checkpoint_args", "on"), ("non_persistent_ckpt_type", "==", "local"),
           says="--use-checkpoint-args is not supported with --non_persistent_ckpt_type=local."),
        _C(ARGS, 393, "core_v0.18.0", ("ckpt_convert_format", "set"), ("ckpt_convert_save", "unset"),
           says="assert args.ckpt_convert_save is not None"),
        _C(ARGS, 394, "core_v0.18.0", ("ckpt_convert_format", "set"), ("load", "unset"), says="assert args.load is not None"),
        _C(ARGS, 1895, "core_v0.11.0", ("non_persistent_ckpt_type", "==", "local"), ("non_persistent_local_ckpt_dir", "unset"),
           says="Tried to use local checkpointing without specifying --local-ckpt-dir!"),
        _C(ARGS, 1897, "core_v0.11.0", ("replication", "on"), ("replication_jump", "unset"),
           says="--replication requires the value of --replication-jump!"),
        _C(ARGS, 1898, "core_v0.11.0", ("replication", "on"), ("non_persistent_ckpt_type", "!=", "local"),
           says="--replication requires args.non_persistent_ckpt_type == 'local'"),
        _C(ARGS, 1826, "core_v0.19.0", ("logits_save_dir", "set"), ("logits_save_top_k", "unset"),
           says="--logits-save-top-k is required when --logits-save-dir is set."),
        _C(ARGS, 1827, "core_v0.19.0", ("logits_save_dir", "set"), ("async_save", "off"),
           says="--logits-save-dir requires --async-save"),
        _C(ARGS, 1852, "core_v0.19.0", ("override_ckpt_iteration", "set"), ("finetune", "on"),
           says="Cannot override checkpoint iteration together with finetune"),
        _C(ARGS, 1864, "core_v0.9.0", ("moe_use_upcycling", "on"), ("save", "unset"),
           says="When using upcycling, the --save option must be specified."),
        _C(ARGS, 1692, "core_v0.16.0", ("fim_data", "on"), ("mock_data", "on"),
           says="Mock dataset is not supported with FIM dataset."),
        _C(ARGS, 1693, "core_v0.16.0", ("fim_data", "on"), ("fim_rate", "off"), says="--fim-rate should be specified."),
        _C(ARGS, 1694, "core_v0.16.0", ("fim_data", "on"), ("fim_spm_rate", "off"), says="--fim-spm-rate should be specified."),
        _C(ARGS, 1394, "core_v0.4.0", ("start_weight_decay", "set"), ("weight_decay_incr_style", "==", "constant"),
           says="assert args.start_weight_decay is None (constant weight decay)"),
        _C(ARGS, 1395, "core_v0.4.0", ("end_weight_decay", "set"), ("weight_decay_incr_style", "==", "constant"),
           says="assert args.end_weight_decay is None (constant weight decay)"),
        _C(ARGS, 1399, "core_v0.4.0", ("weight_decay_incr_style", "!=", "constant"), ("start_weight_decay", "unset"),
           says="assert args.start_weight_decay is not None (weight decay increment style other than constant)"),
        _C(ARGS, 1400, "core_v0.4.0", ("weight_decay_incr_style", "!=", "constant"), ("end_weight_decay", "unset"),
           says="assert args.end_weight_decay is not None (weight decay increment style other than constant)"),
        _C(ARGS, 1258, "core_v0.7.0", ("num_dataset_builder_threads", "<=", 0),
           says="assert args.num_dataset_builder_threads > 0"),
        _C(ARGS, 1184, "core_v0.18.0", ("init_model_with_meta_device", "on"), ("use_megatron_fsdp", "on"),
           ("data_parallel_sharding_strategy", "==", "no_shard"),
           says="Meta device initialization (init_model_with_meta_device=True) is not supported with no_shard"),
        _C(ARGS, 1368, "core_v0.18.0", ("save_params_interval", "set"), ("save", "set"), ("overlap_param_gather", "on"),
           says="assert not args.overlap_param_gather (with --save-params-interval)"),
        _C(MPC, 546, "core_v0.6.0", ("defer_embedding_wgrad_compute", "on"), ("pipeline_model_parallel_size", "==", 1),
           says="Cannot defer embedding wgrad compute when pipeline model parallel is not used"),
        _C(MPC, 551, "core_v0.6.0", ("defer_embedding_wgrad_compute", "on"), ("gradient_accumulation_fusion", "off"),
           says="Cannot defer embedding wgrad compute when gradient accumulation fusion is not used"),
        _C(MPC, 556, "core_v0.10.0", ("defer_embedding_wgrad_compute", "on"), ("wgrad_deferral_limit", "<", 0),
           says="Wgrad deferral limit should be greater than or equal to 0 when it is enabled!"),
        _C(ARGS, 1370, "core_v0.16.0", ("log_memory_interval", "not a multiple of", "log_interval"),
           says="assert args.log_memory_interval % args.log_interval == 0"),
        _C(ARGS, 1190, "core_v0.18.0", ("fsdp_manual_registration", "on"), ("use_megatron_fsdp", "off"),
           says="FSDP manual registration is only supported with Megatron FSDP"),
        _C(ARGS, 1191, "core_v0.18.0", ("fsdp_manual_registration", "on"), ("nccl_ub", "off"),
           says="FSDP manual registration is only supported with --nccl-ub argument"),
    )
