#!/bin/bash
# written from tests/unit_tests/transformer/experimental_attention_variant/test_attention_variant_dsa.py::test_dsa_rejects_bias_linear @ d98e8a6
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 256 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --bf16 \
    --train-iters 100 --lr 1e-4 --tokenizer-type NullTokenizer --vocab-size 1024 \
    --multi-latent-attention --q-lora-rank 64 --kv-lora-rank 64 --qk-head-dim 64 --qk-pos-emb-head-dim 32 --v-head-dim 64 --rope-type rope --no-rope-fusion --experimental-attention-variant dsa
