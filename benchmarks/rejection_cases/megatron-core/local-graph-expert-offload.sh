#!/bin/bash
# written from tests/unit_tests/transformer/test_cuda_graphs.py::TestCudaGraphConfigAndArguments::test_local_impl_allows_expert_activation_offload_scope @ d98e8a6
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 2 --hidden-size 64 --num-attention-heads 4 \
    --seq-length 1024 --max-position-embeddings 1024 \
    --micro-batch-size 1 --global-batch-size 8 --bf16 \
    --train-iters 100 --lr 1e-4 --tokenizer-type NullTokenizer --vocab-size 1024 \
    --num-experts 4 --moe-token-dispatcher-type alltoall --cuda-graph-impl local --cuda-graph-modules attn moe_router --fine-grained-activation-offloading --offload-modules expert_fc1 moe_act
