#!/bin/bash
# tests/unit_tests/test_eval_batch_size.py::TestEvalBatchSizeDivisibility::test_valid_divisibility @ d98e8a6
# accept: eval 64 by eval micro 8 x DP 2
torchrun --nproc_per_node 2 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 8 --global-batch-size 64 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --eval-global-batch-size 64 --eval-micro-batch-size 8
