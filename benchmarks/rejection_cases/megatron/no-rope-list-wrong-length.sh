#!/bin/bash
# tests/unit_tests/transformer/test_attention_no_rope.py::test_invalid_no_rope_freq_pattern @ d98e8a6
# reject: a no-RoPE list of 4 for 8 layers
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 128 --num-attention-heads 8 \
    --seq-length 256 --max-position-embeddings 256 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --position-embedding-type rope --no-rope-freq "[0,1,0,1]"
