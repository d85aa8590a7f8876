#!/bin/bash
# tests/unit_tests/rl/test_rl_utils.py::test_rl_granularity_choices_reject_unknown_value[--rl-submission-granularity] @ d98e8a6
# reject: X is no granularity
torchrun --nproc_per_node 1 train_rl.py \
    --num-layers 8 --hidden-size 128 --num-attention-heads 8 \
    --seq-length 256 --max-position-embeddings 256 \
    --micro-batch-size 1 --eval-micro-batch-size 1 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --perform-rl-step --rl-submission-granularity X
