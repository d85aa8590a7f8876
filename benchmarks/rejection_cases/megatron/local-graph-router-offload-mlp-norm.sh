#!/bin/bash
# tests/unit_tests/transformer/test_cuda_graphs.py::test_local_impl_rejects_moe_router_graph_with_mlp_norm_offload @ d98e8a6
# reject: mlp_norm offload with moe_router graphs
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --cuda-graph-impl local --cuda-graph-modules moe_router --fine-grained-activation-offloading --offload-modules mlp_norm --num-experts 4
