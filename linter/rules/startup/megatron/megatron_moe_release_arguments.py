"""TL601: MoE options older Megatron-LM releases refuse (checks later releases dropped)."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, R, ReleaseCheckTable, document

_SPLITS = (("account_for_embedding_in_pipeline_split", 798, "--account-for-embedding-in-pipeline-split"),
           ("account_for_loss_in_pipeline_split", 800, "--account-for-loss-in-pipeline-split"))


class MoeReleaseArguments(ReleaseCheckTable):
    """## What it does
    Checks MoE options against the releases that refused them: expert parallelism with fp16
    (core_v0.4.0 to core_v0.15.0), grouped GEMM without bf16 (core_v0.5.0 to core_v0.15.0), a model
    spec with experts (core_v0.4.0 to core_v0.15.0), expert parallelism with the distributed
    optimizer (core_v0.4.0), MoE with tensor parallelism but no sequence parallelism (core_v0.4.0 to
    core_v0.6.0), the router's auxiliary losses with embedding / loss layers counted in the pipeline
    split (core_v0.11.0), MoE latent projections with the legacy grouped GEMM (core_v0.16.0), and the
    delayed weight-gradient computation with the legacy grouped GEMM, the local transformer or
    gradient-reduce overlap (core_v0.13.0).

    ## Why is this bad?
    `validate_args` of those releases stops at start-up; newer releases accept some of these.

    ## Example
    ```bash
    # framework = {megatron = "core_v0.12.0"}
    pretrain_gpt.py ... --num-experts 8 --expert-model-parallel-size 2 --fp16
    ```

    ## Fix
    Use the combination the message names (bf16, sequence parallelism, ...), or a release that
    accepts it.
    """

    code = "TL601"
    name = "megatron-moe-release-arguments"
    summary = "MoE options an older Megatron-LM release refuses (EP with fp16, grouped GEMM without bf16, ...)"
    checks = (
        R(ARGS, 1041, "core_v0.4.0", "core_v0.15.0", ("expert_model_parallel_size", ">", 1), ("fp16", "on"),
          says="Expert parallelism is not supported with fp16 training."),
        R(ARGS, 397, "core_v0.4.0", "core_v0.4.0", ("expert_model_parallel_size", ">", 1),
          ("use_distributed_optimizer", "on"), says="Expert parallelism is not suppored with distributed optimizer."),
        R(ARGS, 402, "core_v0.4.0", "core_v0.4.0", ("expert_model_parallel_size", ">", 1),
          ("tensor_model_parallel_size", ">", 1), ("sequence_parallel", "off"),
          says="When using expert parallelism and tensor parallelism, sequence parallelism must be used."),
        R(ARGS, 498, "core_v0.5.0", "core_v0.6.0", ("num_experts", ">", 0), ("tensor_model_parallel_size", ">", 1),
          ("sequence_parallel", "off"),
          says="When using MoE and tensor parallelism, sequence parallelism must be used."),
        R(ARGS, 877, "core_v0.5.0", "core_v0.15.0", ("moe_grouped_gemm", "on"), ("bf16", "off"),
          says="Currently GroupedGEMM for MoE only supports bf16 dtype."),
        R(ARGS, 1027, "core_v0.4.0", "core_v0.15.0", ("num_experts", ">", 0), ("spec", "set"),
          says="Model Spec must be None when using MoEs"),
        *(R(ARGS, line, "core_v0.11.0", "core_v0.11.0", (split, "on"), ("num_experts", ">", 0), aux,
            says=f"Cannot support load balancing loss and z loss with {flag}")
          for split, line, flag in _SPLITS
          for aux in (("moe_router_load_balancing_type", "!=", "none"), ("moe_z_loss_coeff", "set"))),
        R(ARGS, 1273, "core_v0.16.0", "core_v0.16.0", ("moe_latent_size", "set"), ("moe_use_legacy_grouped_gemm", "on"),
          says="MoE latent projection is not supported yet with legacy grouped GEMM."),
        R(ARGS, 1057, "core_v0.13.0", "core_v0.13.0", ("delay_wgrad_compute", "on"), ("moe_use_legacy_grouped_gemm", "on"),
          says="delay_wgrad_compute is not supported with legacy groupedgemm implementation"),
        R(ARGS, 1059, "core_v0.13.0", "core_v0.13.0", ("delay_wgrad_compute", "on"),
          ("transformer_impl", "!=", "transformer_engine"),
          says="delay_wgrad_compute is only supported with transformer_engine implementation"),
        R(ARGS, 1061, "core_v0.13.0", "core_v0.13.0", ("delay_wgrad_compute", "on"), ("overlap_grad_reduce", "on"),
          says="delay_wgrad_compute is not supported with overlap_grad_reduce"),
    )


document(MoeReleaseArguments)
RULES: list[type] = [MoeReleaseArguments]
