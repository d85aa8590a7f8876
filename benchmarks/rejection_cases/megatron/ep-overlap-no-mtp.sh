#!/bin/bash
# tests/unit_tests/transformer/test_transformer_config.py::test_ep_a2a_overlap_accepts_supported_mtp_layer_counts[None] @ d98e8a6
# accept: EP overlap without MTP
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --num-experts 2 --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm --bf16
