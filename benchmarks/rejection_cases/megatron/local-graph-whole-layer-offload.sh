#!/bin/bash
# tests/unit_tests/transformer/test_cuda_graphs.py::test_local_impl_rejects_full_layer_graph_with_activation_offload @ d98e8a6
# reject: activation offloading with whole-layer local graphs
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --train-iters 1 --lr 1e-4 \
    --tokenizer-type NullTokenizer --vocab-size 1024 \
    --cuda-graph-impl local --fine-grained-activation-offloading --offload-modules expert_fc1 --num-experts 4
