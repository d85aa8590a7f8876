"""TL140-TL179: Megatron-LM's own start-up checks (``validate_args`` and the Megatron-Core
config ``__post_init__`` checks it triggers), decided statically.

Cross-framework failures (batch triple, world-size divisibility, heads/TP, layers % PP, fp16+bf16,
SP without TP, seq vs positions, experts % EP) are in :mod:`..cross_framework`; removed and renamed
flags are input diagnostics (TL008) from the adapter. Every rule here runs only on runs read as
current Megatron-LM (not Megatron-DeepSpeed, not old Megatron-LM copies): their conditions and
messages are those of Megatron-LM at d98e8a6.

One module per family of a handful of rules, each a rule bundle registered as a plugin of its
own through its ``trainlint_rules`` hook implementation (:data:`FAMILIES`, listed in
:data:`trainlint.plugins.BUILTIN_PLUGINS`); each rule's golden cases are in
``tests/rules/cases/TLnnn.yaml``.
"""

FAMILIES = tuple(f"trainlint.rules.startup.megatron.{name}" for name in (
    "optimizer",   # TL140-TL143
    "recompute",   # TL144-TL146
    "pipeline",    # TL147-TL149
    "precision",   # TL150-TL151
    "parallel",    # TL152-TL153
    "moe",         # TL154-TL157
    "model",       # TL158-TL160
    "batch",       # TL161-TL166
    "combinations",  # TL167-TL175 (from the launch-check audit)
    # TL600-TL609: checks of a range of releases (release_table), one module per rule
    "legacy_model_arguments",  # TL600
    "moe_release_arguments",  # TL601
    "cuda_graph_release_arguments",  # TL602
    "dynamic_batching_arguments",  # TL603
    "fsdp_checkpoint_release_arguments",  # TL604
    "rl_release_arguments",  # TL605
    "weight_shard_combination_arguments",  # TL606
    "pipeline_release_arguments",  # TL607
    "batch_rampup_arguments",  # TL608
    "model_release_arguments",  # TL609
))
