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
    # TL630-TL669: one module per rule, named by its slug (from the launch-check audit, issue 34)
    "megatron_core_activation_arguments",  # TL630
    "megatron_core_moe_router_arguments",  # TL631
    "megatron_core_rope_arguments",  # TL632
    "megatron_core_batch_rampup",  # TL633
    "megatron_core_pipeline_communication",  # TL634
    "megatron_core_attention_variant_arguments",  # TL635
    "megatron_core_module_choices",  # TL636
    "megatron_core_offload_module_combinations",  # TL637
    "megatron_core_cuda_graph_modules",  # TL638
    "megatron_core_batch_invariant_arguments",  # TL639
    "megatron_core_recompute_arguments",  # TL640
    "megatron_core_low_precision_arguments",  # TL642
    "megatron_core_inference_optimized_arguments",  # TL643
))
