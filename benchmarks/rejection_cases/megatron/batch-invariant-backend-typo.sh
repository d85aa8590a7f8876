#!/bin/bash
# tests/unit_tests/transformer/test_transformer_config.py::test_batch_invariant_backend_rejects_unknown_value_at_construction @ d98e8a6
# reject: an unknown batch-invariant backend
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --batch-invariant-mode --batch-invariant-backend te-native
