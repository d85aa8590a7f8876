#!/bin/bash
# A 2.7B GPT on 32 nodes, pure data parallelism with one micro-batch per step and no overlap:
# the gradient all-reduce dominates the step.
# trainlint: TL401 (network-bound data parallelism) and TL301 (low expected MFU).
torchrun --nproc_per_node 8 --nnodes 32 pretrain_gpt.py \
    --num-layers 32 --hidden-size 2560 --num-attention-heads 32 \
    --vocab-size 50304 --seq-length 2048 --max-position-embeddings 2048 \
    --micro-batch-size 1 --global-batch-size 256 \
    --use-distributed-optimizer --recompute-granularity full \
    --recompute-method uniform --recompute-num-layers 1 \
    --train-iters 100000 --lr 1e-4 --bf16 --use-flash-attn
