"""TL170: MTP, mHC, MLA, FP8 output projection, TE cross-entropy and other model options Megatron refuses"""

from __future__ import annotations


from trainlint.rules.startup.megatron.base import ARGS, TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, _C, with_references


@with_references
class ModelVariantArguments(CheckTable):
    """## What it does
    Checks model-variant options against what they need: multi-token prediction (position embedding
    type, `mtp_hsm` with two or more MTP layers), the Householder count of GDP, FP8 output projection
    (FP8 with the MXFP8 recipe), fused residual RMSNorm, MLA with interleaved rotary embeddings or
    `--mla-down-proj-fusion` without MLA, muP, mHC connections, Transformer Engine cross-entropy fusion
    (disabled upstream), hybrid context parallelism, QK clipping ranges, no-RoPE layers with flash
    decoding, DSA with RoPE fusion.

    ## Why is this bad?
    `validate_args` or `TransformerConfig.__post_init__` stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --mtp-num-layers 1 --position-embedding-type yarn
    ```

    ## Fix
    Use the combination the message names.
    """

    code = "TL170"
    name = "megatron-model-variant-arguments"
    summary = "MTP, mHC, MLA, FP8 output projection, TE cross-entropy and other model options Megatron refuses"
    checks = (
        _C(ARGS, 1945, "core_v0.17.0", ("mtp_num_layers", "on"),
           ("position_embedding_type", "not in", ("learned_absolute", "rope", "mrope", "none")),
           says="Multi-Token Prediction (MTP) is not supported with this position embedding type"),
        _C(TCFG, 1417, "main", ("mtp_hsm", "on"), ("mtp_num_layers", "unset"), says="mtp_hsm=True requires mtp_num_layers >= 2."),
        _C(TCFG, 1417, "main", ("mtp_hsm", "on"), ("mtp_num_layers", "<", 2), says="mtp_hsm=True requires mtp_num_layers >= 2."),
        _C(TCFG, 1438, "main", ("gdp_num_householder", "<", 1), says="gdp_num_householder must be positive"),
        _C(TCFG, 1571, "core_v0.18.0", ("fp8_output_proj", "on"), ("fp8", "unset"),
           says="fp8_output_proj must be used together with fp8 mode."),
        _C(TCFG, 1573, "core_v0.18.0", ("fp8_output_proj", "on"), ("fp8", "set"), ("fp8_recipe", "!=", "mxfp8"),
           says="fp8_output_proj requires fp8_recipe='mxfp8'"),
        _C(TCFG, 2455, "core_v0.17.0", ("fused_residual_rmsnorm", "on"), ("normalization", "!=", "RMSNorm"),
           says="fused_residual_rmsnorm is only supported when normalization is RMSNorm."),
        _C(TCFG, 2527, "core_v0.10.0", ("rotary_interleaved", "on"), ("multi_latent_attention", "on"),
           says="rotary_interleaved does not work with multi_latent_attention."),
        _C(ARGS, 1977, "core_v0.17.0", ("mla_down_proj_fusion", "on"), ("multi_latent_attention", "off"),
           says="--mla-down-proj-fusion requires --multi-latent-attention"),
        _C(TCFG, 2534, "core_v0.17.0", ("use_mup", "on"), ("mup_base_hidden_size", "<=", 0),
           says="--mup-base-hidden-size must be positive."),
        _C(TCFG, 2064, "main", ("enable_mhc_connections", "on"), ("mtp_num_layers", "set"),
           says="enable_mhc_connections is not compatible with Multi-Token Prediction (MTP)."),
        _C(TCFG, 2070, "main", ("enable_mhc_connections", "on"), ("recompute_granularity", "==", "full"),
           says="enable_mhc_connections is not yet compatible with full activation recompute."),
        _C(TCFG, 2093, "main", ("enable_mhc_connections", "on"), ("pipeline_model_parallel_size", ">", 1),
           says="enable_mhc_connections does not support pipeline_model_parallel_size > 1 yet."),
        _C(TCFG, 2104, "main", ("enable_mhc_connections", "on"), ("fp32_residual_connection", "on"),
           says="enable_mhc_connections is not compatible with fp32_residual_connection."),
        _C(TCFG, 2115, "main", ("enable_mhc_connections", "on"), ("mhc_sinkhorn_iterations", "<", 1),
           says="mhc_sinkhorn_iterations must be >= 1"),
        _C(TCFG, 2122, "main", ("enable_mhc_connections", "on"), ("mhc_init_gating_factor", "<", 0),
           says="mhc_init_gating_factor must be non-negative"),
        _C(ARGS, 1697, "core_v0.19.0", ("cross_entropy_fusion_impl", "==", "te"), ("cross_entropy_loss_fusion", "on"),
           says="Transformer Engine cross entropy loss fusion is disabled due to stability issues."),
        _C(ARGS, 1445, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("pipeline_model_parallel_size", ">", 1),
           says="Hybrid context parallelism not supported with pipeline parallelism"),
        _C(ARGS, 1446, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("enable_cuda_graph", "on"),
           says="Hybrid context parallelism not supported with CUDA Graph"),
        _C(ARGS, 1447, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("use_megatron_fsdp", "on"),
           says="Hybrid context parallelism not supported with Megatron FSDP"),
        _C(ARGS, 1448, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("dataloader_type", "!=", "single"),
           says="Hybrid context parallelism only supported with single dataloader type"),
        _C(ARGS, 1449, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("calculate_per_token_loss", "off"),
           says="Hybrid context parallelism must be used with --calculate-per-token-loss"),
        _C(ARGS, 1615, "core_v0.16.0", ("qk_clip", "on"), ("qk_clip_alpha", "<=", 0),
           says="--qk-clip-alpha must be between 0.0 and 1.0 when using --qk-clip."),
        _C(ARGS, 1615, "core_v0.16.0", ("qk_clip", "on"), ("qk_clip_alpha", ">=", 1),
           says="--qk-clip-alpha must be between 0.0 and 1.0 when using --qk-clip."),
        _C(ARGS, 1617, "core_v0.16.0", ("qk_clip", "on"), ("qk_clip_threshold", "<=", 0),
           says="--qk-clip-threshold must be greater than 0 when using --qk-clip."),
        _C(TCFG, 3139, "core_v0.13.0", ("no_rope_freq", "on"), ("flash_decode", "on"),
           says="flash_decode cannot be used with no_rope."),
        _C(TCFG, 3163, "core_v0.16.0", ("experimental_attention_variant", "==", "dsa"), ("apply_rope_fusion", "on"),
           says="RoPE fusion is not supported for DSAttention"),
        _C(TCFG, 1582, "core_v0.15.0", ("fp4", "set"), ("fp8", "set"),
           says="fp4 and fp8 cannot be used simultaneously. Please choose one."),
        _C(TCFG, 1970, "core_v0.12.0", ("recompute_modules", "has", "mla_up_proj"), ("recompute_granularity", "==", "selective"),
           ("multi_latent_attention", "off"),
           says="mla_up_proj in recompute_modules is only supported with multi_latent_attention."),
        _C(TCFG, 3349, "core_v0.16.0", ("attention_output_gate", "on"), ("multi_latent_attention", "on"),
           says="Output gate is not supported for MLA yet."),
        _C(TCFG, 3352, "core_v0.14.0", ("cache_mla_latents", "on"), ("multi_latent_attention", "on"), ("apply_rope_fusion", "on"),
           says="Rope Fusion is not compatible with caching latents"),
        *(_C(TCFG, line, "core_v0.16.0", ("transformer_impl", "==", "inference_optimized"), cond,
             says=f"assert {says} (--transformer-impl inference_optimized)")
          for line, cond, says in ((3156, ("normalization", "!=", "RMSNorm"), "self.normalization == 'RMSNorm'"),
                                   (3157, ("layernorm_zero_centered_gamma", "on"), "not self.layernorm_zero_centered_gamma"),
                                   (3158, ("add_bias_linear", "on"), "not self.add_bias_linear"),
                                   (3159, ("add_qkv_bias", "on"), "not self.add_qkv_bias"))),
        *(_C(TCFG, line, "core_v0.17.0", ("transformer_impl", "==", "inference_optimized"), ("num_experts", "set"), cond,
             says=says)
          for line, cond, says in ((1600, ("expert_tensor_parallel_size", ">", 1),
                                    "Inference-optimized MoE layers does not support expert tensor parallelism."),
                                   (1604, ("moe_expert_capacity_factor", "set"),
                                    "Inference-optimized MoE layers only support dropless MoE"),
                                   (1606, ("moe_router_padding_for_quantization", "on"),
                                    "Inference-optimized MoE layers do not support padded routing map for quantization."),
                                   (1611, ("moe_router_dtype", "!=", "fp32"),
                                    "--transformer-impl='inference_optimized' requires --moe-router-dtype=fp32"))),
        _C(TCFG, 2030, "main", ("recompute_modules", "has", "mhc"), ("recompute_granularity", "==", "selective"),
           ("enable_mhc_connections", "off"), says="'mhc' in recompute_modules requires enable_mhc_connections=True."),
        _C(TCFG, 2032, "main", ("recompute_modules", "has", "mhc"), ("recompute_granularity", "==", "selective"),
           ("recompute_modules", "has", "mlp"), says="'mhc' and 'mlp' in recompute_modules cannot be used together."),
        _C(TCFG, 2046, "main", ("recompute_modules", "has", "mhc"), ("recompute_granularity", "==", "selective"),
           ("fine_grained_activation_offloading", "on"),
           says="'mhc' in recompute_modules + fine_grained_activation_offloading is not yet supported."),
        _C(TCFG, 2077, "main", ("enable_mhc_connections", "on"), ("inference_fuse_tp_communication", "on"),
           says="enable_mhc_connections is not compatible with inference_fuse_tp_communication."),
        _C(TCFG, 3180, "core_v0.16.0", ("inference_fuse_tp_communication", "on"),
           ("transformer_impl", "!=", "inference_optimized"),
           says="inference_fuse_tp_communication is only supported for inference_optimized transformer impl"),
        _C(TCFG, 3184, "core_v0.17.0", ("inference_fuse_tp_communication", "on"), ("num_experts", "set"),
           says="--inference-fuse-tp-communication is not supported for MoE models."),
        _C(TCFG, 3223, "core_v0.19.0", ("batch_invariant_mode", "on"), ("flash_attention_version", "not in", (3, 4)),
           says="Batch invariant mode requires --flash-attention-version 3 or 4"),
        _C(TCFG, 3230, "core_v0.19.0", ("batch_invariant_mode", "on"), ("context_parallel_size", "!=", 1),
           says="Batch invariant mode does not support context parallelism"),
        _C(TCFG, 3233, "core_v0.19.0", ("batch_invariant_mode", "on"), ("attention_dropout", "!=", 0),
           says="Batch invariant mode does not support attention dropout"),
        _C(ARGS, 1638, "core_v0.11.0", ("position_embedding_type", "==", "relative"),
           ("transformer_impl", "!=", "transformer_engine"),
           says="Local transformer implementation currently does not support attention bias-based position embeddings."),
        _C(ARGS, 746, "core_v0.17.0", ("hybrid_override_pattern", "set"), ("hybrid_layer_pattern", "set"),
           says="--hybrid-override-pattern and --hybrid-layer-pattern cannot both be specified."),
        *(_C(ARGS, line, "core_v0.17.0", ("hybrid_layer_pattern", "set"), cond,
             says=f"{flag} should not be used with --hybrid-layer-pattern.")
          for line, cond, flag in ((814, ("num_layers_per_virtual_pipeline_stage", "set"), "--num-layers-per-virtual-pipeline-stage"),
                                   (820, ("num_virtual_stages_per_pipeline_rank", "set"), "--num-virtual-stages-per-pipeline-rank"),
                                   (825, ("pipeline_model_parallel_layout", "set"), "--pipeline-model-parallel-layout"),
                                   (829, ("account_for_embedding_in_pipeline_split", "on"),
                                    "--account-for-embedding-in-pipeline-split"),
                                   (834, ("account_for_loss_in_pipeline_split", "on"), "--account-for-loss-in-pipeline-split"))),
    )
