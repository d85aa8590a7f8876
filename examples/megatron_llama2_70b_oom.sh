#!/bin/bash
# Llama-2-70B on 8 nodes of 8 H100s: TP 8 inside a node, PP 4, no activation recompute.
# trainlint: TL201 (out of memory on the first pipeline stage), with the smallest fix.
GPUS_PER_NODE=8
NNODES=${NNODES:-8}

MODEL_ARGS=(
    --num-layers 80 --hidden-size 8192 --num-attention-heads 64
    --group-query-attention --num-query-groups 8
    --ffn-hidden-size 28672 --swiglu --normalization RMSNorm
    --position-embedding-type rope --untie-embeddings-and-output-weights
    --vocab-size 32000 --seq-length 4096 --max-position-embeddings 4096
)
PARALLEL_ARGS=(
    --tensor-model-parallel-size 8 --sequence-parallel
    --pipeline-model-parallel-size 4
    --use-distributed-optimizer
)
TRAINING_ARGS=(
    --micro-batch-size 4 --global-batch-size 1024
    --train-iters 250000 --lr 1.5e-4 --min-lr 1.5e-5
    --bf16 --use-flash-attn
)

torchrun --nproc_per_node "$GPUS_PER_NODE" --nnodes "$NNODES" pretrain_gpt.py \
    "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}"
