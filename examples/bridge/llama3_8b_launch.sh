#!/bin/bash
# Llama 3 8B pre-training with Megatron-Bridge's public recipe (src/megatron/bridge/recipes/llama/h100/llama3.py),
# on one node of 8 H100s: TP 1, CP 2 as the recipe recommends, DP 4.
export CUDA_DEVICE_MAX_CONNECTIONS=1

torchrun --nproc_per_node=8 --nnodes=1 scripts/training/run_recipe.py \
    --recipe llama3_8b_pretrain_2gpu_h100_bf16_config \
    train.global_batch_size=256 \
    train.micro_batch_size=1 \
    train.train_iters=1000
