#!/bin/bash
# megatron/training/arguments.py:693 @ d98e8a6 (validate_args; no unit test)
# reject: no --micro-batch-size
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 128 --num-attention-heads 8 \
    --seq-length 256 --max-position-embeddings 256 \
    --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --tensor-model-parallel-size 1
