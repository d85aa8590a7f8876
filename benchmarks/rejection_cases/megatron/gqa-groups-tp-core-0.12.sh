#!/bin/bash
# megatron/core/transformer/transformer_config.py:759 @ 0d7e02b (core_v0.4.0-0.15.0; no unit test)
# reject (core_v0.12.0): 2 query groups over TP 4
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 128 --num-attention-heads 8 \
    --seq-length 256 --max-position-embeddings 256 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --group-query-attention --num-query-groups 2 --tensor-model-parallel-size 4
