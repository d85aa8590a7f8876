"""TL609: model and data options validate_args refuses, per release: multi-token prediction with a
position embedding it does not take, interleaved rotary embeddings with RoPE fusion, the local
attention backend without the local spec, deterministic mode with the cross-entropy fusion, Retro
with sequence or pipeline parallelism, FIM data with legacy tokenizers."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, R, ReleaseCheckTable, document, quiet

_MTP_SAYS = ("Multi-Token Prediction (MTP) is not supported with this position embedding type.The supported "
             "position embedding types are rope and none.")
_NO_PATTERN = quiet("hybrid_layer_pattern", "unset")
"""A hybrid layer pattern gives the MTP depth itself (validate_args replaces --mtp-num-layers first)."""
_LOCAL_SAYS = "--attention-backend local is only supported with --spec local"


class ModelReleaseArguments(ReleaseCheckTable):
    """## What it does
    Checks model and data options against the release that reads them:

    * `--mtp-num-layers` with a position embedding other than `rope` or `none` (core_v0.12.0 on; the
      default `learned_absolute` included), or with context parallelism (core_v0.12.0, core_v0.13.0);
    * `--rotary-interleaved` without `--no-rope-fusion` (core_v0.5.0 to core_v0.13.0: RoPE fusion is on
      by default);
    * `--attention-backend local` without `--spec local` (core_v0.11.0 on);
    * `--deterministic-mode` with `--cross-entropy-loss-fusion` (core_v0.9.0 to core_v0.18.0);
    * `--retro-add-retriever` with sequence or pipeline parallelism (core_v0.4.0 to core_v0.15.0);
    * `--fim-data` with `--legacy-tokenizer` (core_v0.16.0).

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --mtp-num-layers 1     # position embedding: learned_absolute by default
    ```

    ## Fix
    Use the combination the message names (`--position-embedding-type rope`, `--no-rope-fusion`,
    `--spec local`, ...).
    """

    code = "TL609"
    name = "megatron-model-release-arguments"
    summary = "MTP position embeddings, interleaved RoPE with fusion, local attention backend, Retro or FIM options refused"
    checks = (
        # up to core_v0.16.0 the legacy --use-rotary-position-embeddings turned the type to rope before this check
        R(ARGS, 1231, "core_v0.12.0", "core_v0.16.0", ("mtp_num_layers", "on"),
          ("position_embedding_type", "not in", ("rope", "none")), quiet("use_rotary_position_embeddings", "off"),
          _NO_PATTERN,
          says=_MTP_SAYS),
        # core_v0.17.0 on, yarn and relative are TL170's (a second, later check lists what it takes)
        R(ARGS, 883, "core_v0.17.0", None, ("mtp_num_layers", "on"),
          ("position_embedding_type", "in", ("learned_absolute", "mrope")), _NO_PATTERN, says=_MTP_SAYS),
        R(ARGS, 1075, "core_v0.12.0", "core_v0.13.0", ("mtp_num_layers", "on"), ("context_parallel_size", "!=", 1),
          says="Multi-Token Prediction (MTP) is not supported with Context Parallelism."),
        R(ARGS, 916, "core_v0.5.0", "core_v0.13.0", ("rotary_interleaved", "on"), ("apply_rope_fusion", "on"),
          says="--rotary-interleaved does not work with rope_fusion."),
        R(ARGS, 437, "core_v0.11.0", None, ("attention_backend", "==", "local"), ("spec_first", "!=", "local"),
          says=_LOCAL_SAYS),
        R(ARGS, 437, "core_v0.11.0", None, ("attention_backend", "==", "local"), ("spec", "unset"),
          says=_LOCAL_SAYS + " (without --spec, args.spec[0] raises a TypeError)"),
        R(ARGS, 1531, "core_v0.9.0", "core_v0.18.0", ("deterministic_mode", "on"), ("cross_entropy_loss_fusion", "on"),
          says="Cross Entropy Fusion is currently not deterministic."),
        R(ARGS, 988, "core_v0.4.0", "core_v0.15.0", ("retro_add_retriever", "on"), ("sequence_parallel", "on"),
          says="retro currently does not support sequence parallelism."),
        R(ARGS, 992, "core_v0.4.0", "core_v0.15.0", ("retro_add_retriever", "on"), ("pipeline_model_parallel_size", "!=", 1),
          says="retro currently does not support pipeline parallelism."),
        R(ARGS, 1067, "core_v0.16.0", "core_v0.16.0", ("fim_data", "on"), ("legacy_tokenizer", "on"),
          says="FIM dataset is not supported with legacy tokenizers."),
    )


document(ModelReleaseArguments)
RULES: list[type] = [ModelReleaseArguments]
