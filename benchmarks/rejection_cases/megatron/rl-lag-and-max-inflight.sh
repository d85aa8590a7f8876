#!/bin/bash
# tests/unit_tests/rl/test_rl_utils.py::test_rl_granularity_validation_rejects_unsupported_modes[lag_and_max_inflight_exclusive] @ d98e8a6
# reject: lag and max in-flight requests exclude each other
torchrun --nproc_per_node 1 train_rl.py \
    --num-layers 8 --hidden-size 128 --num-attention-heads 8 \
    --seq-length 256 --max-position-embeddings 256 \
    --micro-batch-size 1 --eval-micro-batch-size 1 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --perform-rl-step --rl-generation-lag 1 --rl-max-inflight-requests 64 --rl-partial-rollouts
