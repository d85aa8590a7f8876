#!/bin/bash
# Llama 3 8B pre-training with Megatron-Bridge's public recipe (src/megatron/bridge/recipes/llama/h100/llama3.py,
# llama3_8b_pretrain_2gpu_h100_bf16_config: CP 2, sequence 8192, distributed optimizer) on two nodes of 8 H100s,
# with tensor parallelism 2 and sequence parallelism given as overrides (DP 4).
export CUDA_DEVICE_MAX_CONNECTIONS=1

torchrun --nproc_per_node=8 --nnodes=2 scripts/training/run_recipe.py \
    --recipe llama3_8b_pretrain_2gpu_h100_bf16_config \
    model.tensor_model_parallel_size=2 \
    model.sequence_parallel=true \
    train.global_batch_size=256 \
    train.train_iters=20000
