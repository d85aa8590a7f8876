#!/bin/bash
# written from tests/unit_tests/ssm/test_gated_delta_product.py::test_in_proj_recompute_rejects_qkv_offload @ d98e8a6
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 1 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --bf16 \
    --train-iters 100 --lr 1e-4 --tokenizer-type NullTokenizer --vocab-size 1024 \
    --recompute-granularity selective --recompute-modules gdp_in_proj --fine-grained-activation-offloading --offload-modules gdp_qkv
