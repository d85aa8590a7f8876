"""TL606: options validate_args refuses with tensor-parallel weight shards (GTP: a weight-shard
factor --tensor-parallel-num-weight-shards / TP above 1), core_v0.19.0 and upstream."""

from __future__ import annotations

from trainlint.rules.startup.megatron.release_table import ARGS, R, ReleaseCheckTable, document, quiet

_GTP = ("gtp_weight_remat_size", ">", 1)
# FSDP2 (with TE >= 2.0) turns --fp8-param-gather off, Megatron-FSDP --reuse-grad-buf-for-mxfp8-param-ag, first
_NO_FSDP = (quiet("use_torch_fsdp2", "off"), quiet("use_megatron_fsdp", "off"))


class WeightShardCombinationArguments(ReleaseCheckTable):
    """## What it does
    Checks the options a weight-shard factor above 1 (`--tensor-parallel-num-weight-shards` a
    multiple of the tensor-parallel size, above it) excludes or needs: NVFP4 needs
    `--fp4-param-gather`; `--ddp-average-in-collective` is refused; the checkpoint format must be
    `torch` or `torch_dist`; the fully-reshardable mem-efficient optimizer checkpoint is refused; the
    MXFP8 recipe needs `--fp8-param-gather` and `--reuse-grad-buf-for-mxfp8-param-ag`; the GTP NCCL
    user buffers need symmetric registration (upstream).

    ## Why is this bad?
    `validate_args` raises or asserts at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --tensor-model-parallel-size 2 --tensor-parallel-num-weight-shards 4 --ckpt-format torch_dcp
    ```

    ## Fix
    Add the option the message names, or drop the weight shards.
    """

    code = "TL606"
    name = "megatron-weight-shard-combination-arguments"
    summary = "weight-shard (GTP) runs with options Megatron-LM refuses: averaged collectives, checkpoint format, FP8/FP4"
    checks = (
        R(ARGS, 1517, "core_v0.19.0", None, _GTP, ("fp4", "set"), ("fp4_param_gather", "off"),
          says="GTP (--tensor-parallel-num-weight-shards / --expert-tensor-parallel-num-weight-shards > 1) with "
               "--fp4-format requires --fp4-param-gather so NVFP4 weights are all-gathered as native NVFP4."),
        R(ARGS, 1553, "core_v0.19.0", None, _GTP, ("ddp_average_in_collective", "on"),
          says="GTP requires --ddp-average-in-collective off (the default); averaged collectives would need "
               "per-buffer 1/gtp_remat scaling."),
        R(ARGS, 1558, "core_v0.19.0", None, _GTP, ("ckpt_format", "not in", ("torch", "torch_dist")),
          says="GTP supports only --ckpt-format 'torch' (legacy) or 'torch_dist'"),
        R(ARGS, 1562, "core_v0.19.0", None, _GTP, ("dist_ckpt_optim_fully_reshardable", "on"),
          ("distrib_optim_fully_reshardable_mem_efficient", "on"),
          says="GTP does not support the distributed-optimizer fully-reshardable + mem-efficient checkpoint mode."),
        R(ARGS, 1576, "core_v0.19.0", None, _GTP, ("fp8_recipe", "==", "mxfp8"), ("fp8_param_gather", "off"), *_NO_FSDP,
          says="GTP + mxfp8 requires --fp8-param-gather (the optimizer maintains the fp8 shard; GTP does not keep "
               "or re-quantize a bf16 weight)."),
        R(ARGS, 1583, "core_v0.19.0", None, _GTP, ("fp8_recipe", "==", "mxfp8"), ("fp8_param_gather", "on"),
          ("reuse_grad_buf_for_mxfp8_param_ag", "off"), *_NO_FSDP,
          says="GTP + mxfp8 + --fp8-param-gather requires --reuse-grad-buf-for-mxfp8-param-ag"),
        *(R(ARGS, 1592, "main", None, _GTP, (ub, "on"), ("disable_symmetric_registration", "on"),
            says="--gtp-remat-nccl-ub/--gtp-expert-remat-nccl-ub require symmetric window registration and cannot be "
                 "combined with --disable-symmetric-registration.") for ub in ("gtp_remat_nccl_ub", "gtp_expert_remat_nccl_ub")),
    )


document(WeightShardCombinationArguments)
RULES: list[type] = [WeightShardCombinationArguments]
