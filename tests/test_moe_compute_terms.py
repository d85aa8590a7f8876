"""The compute side of a MoE layer (s35-moe): the routed experts' weight-gradient accumulation, a fixed HBM cost
per expert and micro-batch that weighs more as the tokens each expert takes per micro-batch fall, and the FP8
quantisation of the experts' GEMM operands, per routed copy."""

from __future__ import annotations

import dataclasses

import pytest

from trainlint.estimator import coefficients as C
from trainlint.estimator.memory import moe_tokens_per_gpu
from trainlint.estimator.performance import (Cost, _layer_costs, expert_quantize, expert_wgrad_accumulation, hbm,
                                             layer_forward, mlp_gemms)

from test_estimator import make_inputs


def _moe(**over):
    base = {"experts": 64, "top_k": 4, "moe_ffn": 1024, "ep": 8, "dp": 8, "world": 8}
    return make_inputs(**{**base, **over})


def test_expert_wgrad_accumulation_counts_the_gradient_buffer_per_local_expert() -> None:
    i = _moe()
    mats = 2 if i.gated else 1
    weights = (i.experts / i.ep) * (mats + 1) * i.moe_ffn * i.hidden
    operand = i.act_bytes
    grad = 4.0 if i.dtype == "fp32" else i.grad_bytes
    expected = i.moe_fraction * weights * (C.WGRAD_ACCUMULATE_READ_WRITES * grad - operand) / hbm(i)
    assert expert_wgrad_accumulation(i).bytes == pytest.approx(expected)
    assert expert_wgrad_accumulation(i).flops == 0.0
    # twice the experts per GPU (EP 4): twice the buffer; an FP8 operand read leaves more of it uncounted
    assert expert_wgrad_accumulation(dataclasses.replace(i, ep=4)).bytes == pytest.approx(2 * expected)
    fp8 = dataclasses.replace(i, fp8=True)
    assert expert_wgrad_accumulation(fp8).bytes > expected
    # a dense model has no routed experts
    assert expert_wgrad_accumulation(make_inputs()).bytes == 0.0


def test_expert_wgrad_accumulation_is_in_the_backward_and_fixed_per_micro_batch(monkeypatch) -> None:
    i = _moe()
    total, bwd, _ = _layer_costs(i)
    extra = expert_wgrad_accumulation(i)
    assert extra.bytes > 0
    # the backward holds it once, beside the forward x 2 and the attention backward; the forward does not
    monkeypatch.setattr(C, "WGRAD_ACCUMULATE_READ_WRITES", 0.0)
    total0, bwd0, _ = _layer_costs(i)
    monkeypatch.undo()
    assert bwd.bytes == pytest.approx(bwd0.bytes + extra.bytes)
    assert total.bytes == pytest.approx(total0.bytes + extra.bytes)
    assert layer_forward(i)[0].bytes == pytest.approx(total0.bytes - bwd0.bytes)
    # it does not grow with the micro batch (tokens per expert), while the experts' GEMM FLOPs do: its share of
    # the layer falls as the tokens per expert per micro-batch rise
    big = dataclasses.replace(i, micro=8)
    assert expert_wgrad_accumulation(big).bytes == pytest.approx(extra.bytes)
    share_small = extra.bytes / _layer_costs(i)[0].total
    share_big = extra.bytes / _layer_costs(big)[0].total
    assert share_big < share_small / 4


def test_fp8_experts_pay_the_quantisation_of_their_operands() -> None:
    bf16 = _moe()
    assert expert_quantize(bf16) == (Cost(), Cost())  # no FP8 GEMM, nothing quantised
    i = dataclasses.replace(bf16, fp8=True)
    fwd, bwd = expert_quantize(i)
    copies = i.moe_fraction * moe_tokens_per_gpu(i) * i.top_k
    mats = 2 if i.gated else 1
    per = C.FP8_QUANTIZE_BYTES_PER_ELEMENT / hbm(i)
    # forward: FC1's input (hidden) and FC2's (the expert width); backward: the gradients of their outputs
    assert fwd.bytes == pytest.approx(copies * (i.hidden + i.moe_ffn) * per)
    assert bwd.bytes == pytest.approx(copies * (mats * i.moe_ffn + i.hidden) * per)
    # per routed copy: top-k doubles it
    fwd2, _ = expert_quantize(dataclasses.replace(i, top_k=2 * i.top_k))
    assert fwd2.bytes == pytest.approx(2 * fwd.bytes)
    # and it is in the layer's passes: forward once, backward once
    total, back, _ = _layer_costs(i)
    assert total.bytes - back.bytes == pytest.approx(layer_forward(i)[0].bytes + layer_forward(i)[1].bytes + fwd.bytes)


def test_routed_experts_take_the_sequence_shard_under_tensor_parallelism() -> None:
    # TP 2 with expert-TP 1 and sequence parallelism: each GPU routes its half of the sequence (Megatron's
    # alltoall dispatcher gathers over the expert-TP group, of size 1), so its experts take half the copies of TP 1
    tp1 = _moe(top_k=8, world=16, dp=16)
    tp2 = dataclasses.replace(tp1, tp=2, dp=8, sp=True, etp=1)
    assert moe_tokens_per_gpu(tp2) == pytest.approx(moe_tokens_per_gpu(tp1) / 2)
    routed1 = mlp_gemms(tp1)[1].flops
    routed2 = mlp_gemms(tp2)[1].flops
    assert routed2 == pytest.approx(routed1 / 2, rel=1e-9)
    # with expert-TP 2 the tokens are gathered back over it and each expert's width is split instead: the same FLOPs
    etp2 = dataclasses.replace(tp2, etp=2)
    assert mlp_gemms(etp2)[1].flops == pytest.approx(routed1 / 2, rel=1e-9)
