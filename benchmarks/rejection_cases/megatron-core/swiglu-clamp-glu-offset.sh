#!/bin/bash
# written from tests/unit_tests/fusions/test_swiglu_fusion.py::test_clamped_swiglu_config_rejects_linear_offset @ d98e8a6
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 16 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --bf16 \
    --train-iters 100 --lr 1e-4 --tokenizer-type NullTokenizer --vocab-size 1024 \
    --num-experts 4 --moe-token-dispatcher-type alltoall --swiglu --activation-func-clamp-value 10.0 --glu-linear-offset 1.0
