#!/bin/bash
# megatron/core/transformer/transformer_config.py:1828-1834 @ d98e8a6 (TransformerConfig; no unit test)
# accept: a coefficient per balancing type
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 128 --num-attention-heads 8 \
    --seq-length 256 --max-position-embeddings 256 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --num-experts 8 --moe-router-load-balancing-type aux_loss seq_aux_loss --moe-aux-loss-coeff 0.01 0.001
