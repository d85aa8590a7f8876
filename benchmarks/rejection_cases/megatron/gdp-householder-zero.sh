#!/bin/bash
# tests/unit_tests/transformer/test_transformer_config.py::test_gdp_num_householder_rejects_non_positive_values[0] @ d98e8a6
# reject: gdp_num_householder must be positive
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --gdp-num-householder 0
