#!/bin/bash
# tests/unit_tests/ssm/test_hybrid_layer_allocation.py @ d98e8a6
# accept: 4 pattern segments on 2 pipeline stages
torchrun --nproc_per_node 8 pretrain_mamba.py \
    --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --hybrid-layer-pattern 'M*M|M*M|M*M|M*M' --pipeline-model-parallel-size 2
