#!/bin/bash
# megatron/core/pipeline_parallel/schedules.py:675 @ aa6207e (core_v0.4.0-0.11.0; no unit test)
# reject (core_v0.11.0): a decoder length with the interleaved schedule
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 128 --num-attention-heads 8 \
    --seq-length 256 --max-position-embeddings 256 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --decoder-seq-length 128 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2
