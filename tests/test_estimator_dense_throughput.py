"""Dense-model throughput terms of issue 30 (s33-thru): the tensor-parallel collectives priced as NCCL prices a
ring (large-message bus bandwidth plus a latency per ring step), so the share of the NVLink rate they reach grows
with the message."""

from __future__ import annotations

import pytest

from trainlint.estimator import coefficients as C
from trainlint.estimator.performance import link_bw, ring_time, tp_comm_per_layer

from test_estimator import make_inputs


def _tp_share(micro: int, hidden: int) -> float:
    """Effective share of the per-direction NVLink rate one TP-8 all-reduce of a layer's activations reaches."""
    i = make_inputs(tp=8, dp=1, micro=micro, hidden=hidden, heads=hidden // 128, kv_heads=hidden // 128, seq=2048)
    msg = i.act_bytes * i.micro * i.seq * i.hidden
    one = tp_comm_per_layer(i) / 4  # four all-reduces per layer (no recompute)
    return 2 * 7 / 8 * msg / one / (i.gpu.intra_node_bw_gbps * 1e9)


def test_tensor_parallel_bandwidth_grows_with_the_message():
    small, large = _tp_share(1, 1024), _tp_share(8, 8192)
    assert small < 0.5 * large  # a 4 MB all-reduce is latency-bound, a 256 MB one is not
    assert large < C.NVLINK_RING_BUS_FRACTION  # never above the large-message bus bandwidth
    assert large > 0.9 * C.NVLINK_RING_BUS_FRACTION


def test_ring_step_latency_scales_with_the_ring():
    bw = 100e9
    eight = ring_time(1.0, 8, bw, 2.0, step_latency=True) - ring_time(1.0, 8, bw, 2.0)
    two = ring_time(1.0, 2, bw, 2.0, step_latency=True) - ring_time(1.0, 2, bw, 2.0)
    assert eight == pytest.approx(14 * C.NCCL_RING_STEP_LATENCY_S)
    assert two == pytest.approx(2 * C.NCCL_RING_STEP_LATENCY_S)


def test_only_the_blocking_ring_gets_the_large_message_bandwidth():
    i = make_inputs(tp=8, dp=1)
    nvlink = i.gpu.intra_node_bw_gbps * 1e9
    assert link_bw(i, 8, 8, ring=True) == pytest.approx(nvlink * C.NVLINK_RING_BUS_FRACTION)
    assert link_bw(i, 8, 8) == pytest.approx(nvlink * C.INTRA_NODE_LINK_FRACTION)
