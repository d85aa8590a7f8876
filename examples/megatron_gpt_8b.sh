#!/bin/bash
# Pre-train an 8B GPT model (GQA, SwiGLU, RoPE, RMSNorm) with Megatron-LM on 2 nodes x 8 GPUs.
#
# Layout: TP=2 x PP=2 x CP=1 -> DP = 16 / 4 = 4 data-parallel replicas.
# Batch:  micro batch 1, global batch 128 -> 128 / (1 x 4) = 32 micro-batches per step.
#
# Run from the Megatron-LM checkout on every node, e.g.
#   NODE_RANK=0 MASTER_ADDR=node0 bash megatron_gpt_8b.sh
#   NODE_RANK=1 MASTER_ADDR=node0 bash megatron_gpt_8b.sh

set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=${GPUS_PER_NODE:-8}
NUM_NODES=${NUM_NODES:-2}
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-6000}
WORLD_SIZE=$((GPUS_PER_NODE * NUM_NODES))

TP=${TP:-2}
PP=${PP:-2}
MICRO_BATCH=1
GLOBAL_BATCH=128
SEQ_LEN=8192

CHECKPOINT_DIR=${CHECKPOINT_DIR:-checkpoints/gpt_8b}
TOKENIZER=${TOKENIZER:-meta-llama/Meta-Llama-3-8B}

DISTRIBUTED_ARGS=(
    --nproc_per_node "$GPUS_PER_NODE"
    --nnodes "$NUM_NODES"
    --node_rank "$NODE_RANK"
    --master_addr "$MASTER_ADDR"
    --master_port "$MASTER_PORT"
)

MODEL_ARGS=(
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --seq-length "$SEQ_LEN"
    --max-position-embeddings "$SEQ_LEN"
    --position-embedding-type rope
    --rotary-base 500000
    --normalization RMSNorm
    --swiglu
    --untie-embeddings-and-output-weights
    --attention-backend flash   # flash | fused | unfused | local | auto
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size "$TP"
    --pipeline-model-parallel-size "$PP"
    --sequence-parallel
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)

TRAINING_ARGS=(
    --micro-batch-size "$MICRO_BATCH"
    --global-batch-size "$GLOBAL_BATCH"
    --train-iters 250000
    --lr 3.0e-4
    --min-lr 3.0e-5
    --lr-decay-style cosine
    --lr-warmup-iters 2000
    --weight-decay 0.1
    --adam-beta1 0.9
    --adam-beta2 0.95
    --clip-grad 1.0
    --bf16
    --recompute-granularity selective
)

DATA_ARGS=(
    --mock-data
    --tokenizer-type HuggingFaceTokenizer
    --tokenizer-model "$TOKENIZER"
    --split 99,1,0
)

LOGGING_ARGS=(
    --log-interval 10
    --eval-interval 1000
    --eval-iters 10
    --save-interval 1000
    --save "$CHECKPOINT_DIR"
    --load "$CHECKPOINT_DIR"
)

echo "Launching on ${WORLD_SIZE} GPUs (TP=${TP}, PP=${PP}, DP=$((WORLD_SIZE / (TP * PP))))"

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
    "${MODEL_ARGS[@]}" \
    "${PARALLEL_ARGS[@]}" \
    "${TRAINING_ARGS[@]}" \
    "${DATA_ARGS[@]}" \
    "${LOGGING_ARGS[@]}"
