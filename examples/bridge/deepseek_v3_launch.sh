#!/bin/bash
#SBATCH --nodes=32
#SBATCH --ntasks-per-node=8
# DeepSeek-V3 (671B, MLA, 256 experts) with Megatron-Bridge's public recipe
# deepseek_v3_pretrain_256gpu_h100_bf16_32nodes_config (src/megatron/bridge/recipes/deepseek/...):
# TP 2, PP 8, EP 32 on 32 nodes of 8 H100s, with a shorter run and a smaller global batch given on the line.
# On purpose: a warmup in samples beside the recipe's warmup in iterations, which Bridge refuses (TL670).
# No TL301: EP 32 x TP 2 leaves the experts' optimizer state unsharded, so no layout without full recompute fits.
export CUDA_DEVICE_MAX_CONNECTIONS=1

srun torchrun --nproc_per_node=8 --nnodes=32 scripts/training/run_recipe.py \
    --recipe deepseek_v3_pretrain_256gpu_h100_bf16_32nodes_config \
    train.train_iters=2000 \
    train.global_batch_size=1024 \
    scheduler.lr_warmup_samples=1000
