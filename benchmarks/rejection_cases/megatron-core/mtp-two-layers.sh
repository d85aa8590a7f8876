#!/bin/bash
# written from tests/unit_tests/transformer/test_multi_token_prediction.py::test_mtp_hsm_defaults_off @ d98e8a6
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 4 --num-attention-heads 1 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --bf16 \
    --train-iters 100 --lr 1e-4 --tokenizer-type NullTokenizer --vocab-size 1024 \
    --mtp-num-layers 2
