#!/bin/bash
# tests/unit_tests/transformer/test_cuda_graphs.py::test_removed_module_scoped_scope_name_is_not_accepted @ d98e8a6
# reject: module_scoped is no scope any more
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --cuda-graph-impl local --inference-cuda-graph-scope module_scoped
