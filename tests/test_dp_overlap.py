"""Data-parallel overlap as the engines run it (issue 30): gradient buckets reduced one by one behind the
backward that produces them, the last bucket always exposed; Megatron's default bucket size from its DP
size; gradient accumulation reducing only on the last micro-batch (Megatron DDP, ZeRO 0/1) or on every one
(ZeRO-2); no fitted overlap share."""

from __future__ import annotations

import dataclasses

import pytest

from trainlint.estimator import coefficients as C
from trainlint.estimator.memory import shard_group
from trainlint.estimator.performance import (data_parallel, dp_buckets, dp_link_bw, exposed_behind, ring_time,
                                             step_time)

from test_estimator import make_inputs


def test_exposed_behind_keeps_the_last_bucket_exposed():
    # a long window hides every bucket but the last one
    assert exposed_behind(1.0, 100.0, 10) == pytest.approx(0.1)
    # an exchange longer than the window: what the window cannot cover, and never less than one bucket
    assert exposed_behind(1.0, 0.5, 10) == pytest.approx(1.0 - 0.5 * 0.9)
    # one bucket (no overlap possible): all of it
    assert exposed_behind(1.0, 100.0, 1) == pytest.approx(1.0)
    assert exposed_behind(0.0, 1.0, 4) == 0.0
    # more buckets never expose more, a longer window never exposes more
    assert [exposed_behind(1.0, 0.8, b) for b in (1, 2, 4, 8)] == sorted(
        (exposed_behind(1.0, 0.8, b) for b in (1, 2, 4, 8)), reverse=True)
    assert exposed_behind(1.0, 2.0, 4) <= exposed_behind(1.0, 0.5, 4)


def test_megatron_bucket_grows_with_data_parallel_size():
    small = make_inputs(dp=8, dist_opt=True)
    large = make_inputs(dp=512, dist_opt=True)
    n = 4e9
    # max(40M, 1M x DP) parameters per bucket (core/distributed/distributed_data_parallel_config.py)
    assert dp_buckets(small, n) == 100
    assert dp_buckets(large, n) == 8
    # DeepSpeed: its reduce_bucket_size
    ds = make_inputs(framework="deepspeed", zero=2, reduce_bucket=5e8)
    assert dp_buckets(ds, n) == 8


def test_overlap_off_exposes_the_whole_exchange():
    i = make_inputs(dp=64, world=64, overlap_dp=False)
    d = shard_group(i)
    n = 7e9
    raw = ring_time(i.grad_bytes * n, d, dp_link_bw(i, d, blocking=True), 2.0)
    assert data_parallel(i, n, 1.0, 0.7) == pytest.approx(raw)
    on = dataclasses.replace(i, overlap_dp=True)
    assert raw / dp_buckets(on, n) <= data_parallel(on, n, 1.0, 0.7) < raw


def test_accumulation_reduces_once_for_megatron_every_micro_batch_for_zero2():
    meg = make_inputs(dp=64, world=64, dist_opt=True, grad_accum=4)
    meg16 = dataclasses.replace(meg, grad_accum=16, global_batch=meg.global_batch * 4)
    assert data_parallel(meg, 7e9, 0.5, 0.3) == pytest.approx(data_parallel(meg16, 7e9, 0.5, 0.3))
    z2 = make_inputs(framework="deepspeed", zero=2, dp=64, world=64, grad_accum=4, overlap_dp=True)
    z2_16 = dataclasses.replace(z2, grad_accum=16, global_batch=z2.global_batch * 4)
    assert data_parallel(z2_16, 7e9, 0.5, 0.3) > 3 * data_parallel(z2, 7e9, 0.5, 0.3) / 2


def test_no_fitted_overlap_share_remains():
    assert not hasattr(C, "DP_OVERLAP_FRACTION")
    assert "DP_OVERLAP_FRACTION" not in C.RANGES
    for name in ("MEGATRON_BUCKET_MIN_PARAMS", "MEGATRON_BUCKET_PARAMS_PER_DP"):
        assert not C.RANGES[name].fitted


def test_step_time_dp_line_follows_the_buckets():
    # a large model over 8 nodes: overlapped, the exposed exchange is about one bucket's share
    i = make_inputs(dp=64, world=64, dist_opt=True, micro=1, grad_accum=8)
    off = step_time(dataclasses.replace(i, overlap_dp=False)).dp_comm
    on = step_time(i).dp_comm
    assert 0 < on < off


def test_blocking_exchange_inside_a_node_gets_the_ring_bus_bandwidth():
    # DeepSpeed ZeRO 0 reduces its gradients after the backward, alone on the compute stream (engine.py
    # allreduce_gradients -> buffered_allreduce_fallback: dist.all_reduce per 500M-element bucket): a large ring
    # all-reduce at NCCL's bus bandwidth over NVLink, not the share of buckets reduced beside the backward
    i = make_inputs(framework="deepspeed", zero=0, dtype="fp16", dp=8, world=8, overlap_dp=False)
    d = shard_group(i)
    nvlink = float(i.gpu.intra_node_bw_gbps) * 1e9
    assert dp_link_bw(i, d, blocking=True) == pytest.approx(nvlink * C.NVLINK_RING_BUS_FRACTION)
    assert dp_link_bw(i, d) == pytest.approx(nvlink * C.INTRA_NODE_LINK_FRACTION)
    n = 1.3e9
    assert data_parallel(i, n, 1.0, 0.7) == pytest.approx(
        ring_time(i.grad_bytes * n, d, nvlink * C.NVLINK_RING_BUS_FRACTION, 2.0))
    # overlapped buckets run beside the backward's kernels: the smaller share, and never slower in total
    on = dataclasses.replace(i, overlap_dp=True)
    assert data_parallel(on, n, 1.0, 0.7) <= ring_time(i.grad_bytes * n, d, dp_link_bw(on, d), 2.0)
    # across nodes the NICs bound a blocking exchange as before: the ring share of NVLink does not raise it
    wide = make_inputs(framework="deepspeed", zero=0, dtype="fp16", tp=8, dp=8, world=64, overlap_dp=False)
    assert dp_link_bw(wide, shard_group(wide), blocking=True) == pytest.approx(
        dp_link_bw(wide, shard_group(wide)))
