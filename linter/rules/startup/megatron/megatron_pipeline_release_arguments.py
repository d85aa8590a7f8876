"""TL607: pipeline and layout options older Megatron-LM releases refuse (split rank, encoder
parallel sizes, interleaving with two stages, the tp-pp-dp rank mapping) and the pipeline segments of
a hybrid layer pattern (core_v0.17.0 and upstream)."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, Dest, R, ReleaseCheckTable, document

_PP = "pipeline_model_parallel_size"
_ENC_TP = "encoder_tensor_model_parallel_size"


class PipelineReleaseArguments(ReleaseCheckTable):
    """## What it does
    Checks pipeline layout options against the releases that read them: a pipeline split rank not
    below the pipeline size (core_v0.4.0 to core_v0.13.0); an encoder tensor-parallel size without an
    encoder pipeline size, above the decoder's, or not dividing the attention heads, and `--num-experts
    0` with an encoder sharing the first pipeline rank (core_v0.9.0 to core_v0.13.0); interleaving with
    two pipeline stages even with P2P overlap (core_v0.4.0 to core_v0.7.0); context or expert
    parallelism with `--use-tp-pp-dp-mapping` (core_v0.7.0 to core_v0.10.0); and a hybrid layer pattern
    whose pipe separators conflict with `--decoder-first/last-pipeline-num-layers` or give a number of
    segments the pipeline size does not divide (core_v0.17.0 on).

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    pretrain_mamba.py ... --hybrid-layer-pattern "M*M|M*M|M*M" --pipeline-model-parallel-size 2
    ```

    ## Fix
    Use a layout the release accepts (a number of pattern segments that is a multiple of the pipeline
    size, an encoder TP no larger than the decoder's, ...).
    """

    code = "TL607"
    name = "megatron-pipeline-release-arguments"
    summary = "pipeline split rank, encoder sizes, tp-pp-dp mapping or hybrid-pattern segments a Megatron-LM release refuses"
    checks = (
        R(ARGS, 194, "core_v0.4.0", "core_v0.8.0", ("pipeline_model_parallel_split_rank", "set"), (_PP, ">", 1),
          ("pipeline_model_parallel_split_rank", ">=", Dest(_PP)),
          says="split rank needs to be less than pipeline model parallel size"),
        R(ARGS, 416, "core_v0.9.0", "core_v0.13.0", ("pipeline_model_parallel_split_rank", "set"),
          ("pipeline_model_parallel_split_rank", ">=", Dest(_PP)),
          says="assert args.pipeline_model_parallel_size > 0 (after subtracting the split rank)"),
        R(ARGS, 242, "core_v0.4.0", "core_v0.7.0", ("num_layers_per_virtual_pipeline_stage", "set"), (_PP, "==", 2),
          ("overlap_p2p_comm", "on"),
          says="pipeline-model-parallel size should be greater than 2 with interleaved schedule"),
        R(ARGS, 203, "core_v0.9.0", "core_v0.10.0", (_ENC_TP, ">", 0), ("encoder_pipeline_model_parallel_size", "<=", 0),
          says="encoder_pipeline_model_parallel_size must be defined."),
        R(ARGS, 371, "core_v0.9.0", "core_v0.13.0", (_ENC_TP, ">", 0),
          ("num_attention_heads", "not a multiple of", Dest(_ENC_TP)),
          says="assert args.num_attention_heads % args.encoder_tensor_model_parallel_size == 0"),
        R(ARGS, 372, "core_v0.9.0", "core_v0.13.0", (_ENC_TP, ">", 0),
          (_ENC_TP, ">", Dest("tensor_model_parallel_size")),
          says="We do not support encoders with more TP than the decoder."),
        R(ARGS, 368, "core_v0.10.0", "core_v0.13.0", ("num_experts", "==", 0), ("encoder_pipeline_model_parallel_size", "==", 0),
          (_ENC_TP, "!=", Dest("tensor_model_parallel_size")),
          says="If non-MOE encoder shares first decoder pipeline rank it must have the same TP as the decoder."),
        *(R(ARGS, 688, "core_v0.7.0", "core_v0.10.0", ("use_tp_pp_dp_mapping", "on"), (size, ">", 1),
            says="context_parallel and expert_model_parallel can't be used with tp-pp-dp mapping.")
          for size in ("context_parallel_size", "expert_model_parallel_size")),
        *(R(ARGS, line, "core_v0.17.0", None, ("hybrid_layer_pattern", "set"), ("hybrid_has_pipes", "on"), (dest, "set"),
            says=f"If --hybrid-layer-pattern contains pipe separators, --{dest.replace('_', '-')} should not be specified "
                 "as the pipeline layout is explicitly defined.")
          for line, dest in ((804, "decoder_first_pipeline_num_layers"), (809, "decoder_last_pipeline_num_layers"))),
        R(ARGS, 849, "core_v0.17.0", None, ("hybrid_layer_pattern", "set"), ("hybrid_pipeline_segments", ">", 1),
          ("hybrid_pipeline_segments", "not a multiple of", Dest(_PP)),
          says="The number of hybrid pipeline segments described by --hybrid-layer-pattern must be evenly divisible "
               "by --pipeline-model-parallel-size."),
    )


document(PipelineReleaseArguments)
RULES: list[type] = [PipelineReleaseArguments]
