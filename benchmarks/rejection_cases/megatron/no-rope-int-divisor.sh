#!/bin/bash
# tests/unit_tests/transformer/test_attention_no_rope.py::test_integer_no_rope_freq_pattern @ d98e8a6
# accept: --no-rope-freq 4 with 8 layers
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 128 --num-attention-heads 8 \
    --seq-length 256 --max-position-embeddings 256 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --position-embedding-type rope --no-rope-freq 4
