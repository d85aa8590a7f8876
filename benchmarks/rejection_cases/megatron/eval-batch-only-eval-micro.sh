#!/bin/bash
# tests/unit_tests/test_eval_batch_size.py::TestEvalBatchSizeDivisibility::test_only_eval_mbs_set @ d98e8a6
# accept: the eval batch falls back to the global batch
torchrun --nproc_per_node 1 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 4 --global-batch-size 32 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --eval-micro-batch-size 2
