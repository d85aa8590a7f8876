"""TL600: options Megatron-LM refuses with its legacy (non-Megatron-Core) models, per release."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, R, ReleaseCheckTable, document, quiet

_DECOUPLED = ("decoupled_lr", "decoupled_min_lr")


class LegacyModelArguments(ReleaseCheckTable):
    """## What it does
    Checks options that only Megatron-Core models support against the legacy model code: with
    `--use-legacy-models` (core_v0.8.0 to core_v0.17.0; the legacy models were removed after), or
    without `--use-mcore-models` (core_v0.5.0 to core_v0.7.0, when the legacy models were the
    default). Refused are a checkpoint format other than `torch` (from core_v0.9.0 the default format
    is `torch_dist`, so `--use-legacy-models` alone stops those releases), `--overlap-param-gather`,
    multi-token prediction, decoupled learning rates, interleaved rotary embeddings, context
    parallelism, distributed checkpoints and MoE latent projections.

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    # framework = {megatron = "core_v0.14.0"}
    pretrain_gpt.py ... --use-legacy-models     # ckpt-format defaults to torch_dist
    ```

    ## Fix
    Drop `--use-legacy-models` (or add `--use-mcore-models` on core_v0.5.0 to core_v0.7.0), or drop the
    Megatron-Core option; with legacy models on core_v0.9.0 and later, pass `--ckpt-format torch`.
    """

    code = "TL600"
    name = "megatron-legacy-model-arguments"
    summary = "Megatron-Core-only options (dist checkpoints, CP, MTP, param-gather overlap, ...) with legacy models"
    checks = (
        R(ARGS, 311, "core_v0.11.0", "core_v0.17.0", ("use_legacy_models", "on"), ("ckpt_format", "!=", "torch"),
          says="legacy model format only supports the 'torch' checkpoint format."),
        R(ARGS, 679, "core_v0.8.0", "core_v0.10.0", ("use_legacy_models", "on"), ("use_dist_ckpt", "on"),
          says="--use-dist-ckpt is not supported in legacy models."),
        R(ARGS, 512, "core_v0.6.0", "core_v0.7.0", ("use_dist_ckpt", "on"), ("use_mcore_models", "off"),
          says="--use-dist-ckpt only support Megatron Core, please add --use-mcore-models."),
        R(ARGS, 862, "core_v0.8.0", "core_v0.17.0", ("overlap_param_gather", "on"), ("use_legacy_models", "on"),
          says="--overlap-param-gather only supported with MCore models"),
        R(ARGS, 265, "core_v0.6.0", "core_v0.7.0", ("overlap_param_gather", "on"), ("use_mcore_models", "off"),
          says="--overlap-param-gather only supported with MCore models"),
        R(ARGS, 730, "core_v0.12.0", "core_v0.17.0", ("mtp_num_layers", "on"), ("use_legacy_models", "on"),
          quiet("hybrid_layer_pattern", "unset"),
          says="The legacy Megatron models does not support Multi-Token Prediction (MTP)."),
        *(R(ARGS, 1272, "core_v0.8.0", "core_v0.17.0", (dest, "set"), ("use_legacy_models", "on"),
            says="--decoupled-lr and --decoupled-min-lr is not supported in legacy models.") for dest in _DECOUPLED),
        *(R(ARGS, 482, "core_v0.6.0", "core_v0.7.0", (dest, "set"), ("use_mcore_models", "off"),
            says="--decoupled-lr and --decoupled-min-lr only supported by Megatron Core, please add --use-mcore-models.")
          for dest in _DECOUPLED),
        *(R(ARGS, 508, "core_v0.8.0", "core_v0.8.0", (dest, "set"), ("use_dist_ckpt", "on"),
            says="Distributed checkpointing does not work with decoupled LR yet.") for dest in _DECOUPLED),
        R(ARGS, 1279, "core_v0.8.0", "core_v0.17.0", ("rotary_interleaved", "on"), ("use_legacy_models", "on"),
          says="--rotary-interleaved is not supported in legacy models."),
        R(ARGS, 491, "core_v0.5.0", "core_v0.7.0", ("rotary_interleaved", "on"), ("use_mcore_models", "off"),
          says="--rotary-interleaved only support Megatron Core, please add --use-mcore-models."),
        R(ARGS, 1308, "core_v0.8.0", "core_v0.17.0", ("context_parallel_size", ">", 1), ("use_legacy_models", "on"),
          says="Context parallelism is not supported in legacy models."),
        R(ARGS, 1594, "core_v0.16.0", "core_v0.17.0", ("moe_latent_size", "set"), ("use_legacy_models", "on"),
          says="MoE latent projections are only supported for mcore models."),
    )


document(LegacyModelArguments)
RULES: list[type] = [LegacyModelArguments]
