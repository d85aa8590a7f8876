#!/bin/bash
# tests/unit_tests/test_eval_batch_size.py::TestEvalBatchSizeDivisibilityWithGTP::test_gtp_remat_divisible_config_passes @ d98e8a6
# accept: eval 8 by the weight-shard factor 8
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --tensor-parallel-num-weight-shards 8 --eval-global-batch-size 8 --eval-micro-batch-size 1
