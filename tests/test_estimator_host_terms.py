"""Step-time terms of the host and of the attention kernel: a host-bound layer's issue time hides its
kernels but not its tensor-parallel all-reduces, the MoE dispatcher's host sync is a term of its own (not
a share of the per-layer host time), and a part with a faster softmax (Blackwell Ultra) runs the fused
attention kernel faster at the same tensor peak."""

from __future__ import annotations

import dataclasses

import pytest

from trainlint.presets.catalog import find_gpu
from trainlint.estimator import coefficients as C
from trainlint.estimator.performance import (attention_efficiency, host_wait_s, layer_costs, layer_launch_s, moe_sync_s,
                                             step_time)

from test_estimator import make_inputs


def small_tp8(**over):
    # a 0.3B-class layer at TP 8, micro batch 1: its kernels take less than the host needs to issue them
    return make_inputs(hidden=1024, heads=16, kv_heads=16, head_dim=64, ffn=4096, gated=False, seq=2048, tp=8, dp=1,
                       world=8, layers=12, **over)


def test_host_bound_layer_adds_its_tp_allreduces_to_the_host_time():
    i = small_tp8()
    layer, bwd, tp = layer_costs(i)
    assert tp > 0 and layer.total < layer_launch_s(i)      # host bound, with TP traffic
    wait = host_wait_s(i, (layer, bwd, tp))
    assert wait == pytest.approx(layer_launch_s(i) - layer.total)
    # the TP exchange does not shorten the wait: the layer takes host time + exchange
    assert host_wait_s(i, (layer, bwd, 0.0)) == pytest.approx(wait)
    t = step_time(i)
    per_mb = (t.compute + t.tp_comm) / i.grad_accum
    assert per_mb > i.layers * (layer_launch_s(i) + tp)


def test_device_bound_layer_is_not_charged_host_time():
    i = make_inputs(tp=8, dp=1, world=8, micro=4)
    layer, bwd, tp = layer_costs(i)
    assert layer.total > layer_launch_s(i)
    assert host_wait_s(i, (layer, bwd, tp)) == 0.0


def test_moe_sync_is_its_own_term(monkeypatch):
    moe = make_inputs(experts=8, top_k=2, moe_ffn=4096, ep=8, dp=8, world=8)
    before = moe_sync_s(moe)
    assert before == pytest.approx(moe.moe_fraction * C.MOE_SYNC_HOST_S)
    monkeypatch.setattr(C, "LAYER_HOST_S", 2 * C.LAYER_HOST_S)
    assert moe_sync_s(moe) == pytest.approx(before)     # the dense layers' host time does not move it
    assert moe_sync_s(make_inputs()) == 0.0


def test_blackwell_ultra_attention_kernel_is_faster_at_the_same_peak():
    gb200, gb300 = find_gpu("gb200"), find_gpu("gb300")
    assert gb200.bf16_tflops == gb300.bf16_tflops
    assert gb300.attention_kernel_speedup and gb300.attention_kernel_speedup > 1
    assert "attention_kernel_speedup" in gb300.sources
    base = {"gpus_per_node": 4}
    ratio = attention_efficiency(make_inputs(gpu=gb300, **base)) / attention_efficiency(make_inputs(gpu=gb200, **base))
    assert ratio == pytest.approx(gb300.attention_kernel_speedup)
    # a part without the figure keeps the kernel's efficiency as it is
    plain = dataclasses.replace(gb300, attention_kernel_speedup=None)
    assert attention_efficiency(make_inputs(gpu=plain, **base)) == pytest.approx(
        attention_efficiency(make_inputs(gpu=gb200, **base)))
