"""The performance and memory terms of issue 30: hierarchical data-parallel bandwidth (NVLink inside, all
NICs across), the context-parallel group counted once, NVLink-72 domains, interleaved p2p overlap, the
expert all-to-all on its own line, attention efficiency by sequence and head size, power-capped parts,
and allocator fragmentation only on what the allocator hands out per step."""

from __future__ import annotations

import dataclasses

import pytest

from trainlint.presets.catalog import find_gpu
from trainlint.estimator import coefficients as C
from trainlint.estimator import estimate_inputs
from trainlint.estimator.memory import one_stage
from trainlint.estimator.performance import (attention_backward, attention_forward, attention_efficiency, attention_kernel_factor,
                                             dp_link_bw, gemm, gemm_speed, layer_forward, link_bw, step_time,
                                             sustained_clock)

from test_estimator import make_inputs


def test_single_node_context_parallel_data_parallel_stays_on_nvlink():
    # TP 1 x CP 2 x DP 4 = 8 GPUs, one node: the shard group (DP x CP = 8) spans 8 GPUs, not 16
    i = make_inputs(cp=2, dp=4, tp=1, world=8, dist_opt=True)
    nvlink = i.gpu.intra_node_bw_gbps * 1e9 * C.INTRA_NODE_LINK_FRACTION
    assert dp_link_bw(i, 8) == pytest.approx(nvlink)
    assert step_time(i).dp_comm < 0.05


def test_data_parallel_across_nodes_uses_every_nic_of_the_node():
    nic = find_gpu("a100-80gb").inter_node_bw_gbps * 1e9 * C.INTER_NODE_LINK_FRACTION
    nvlink = find_gpu("a100-80gb").intra_node_bw_gbps * 1e9 * C.INTRA_NODE_LINK_FRACTION
    pure_dp = make_inputs(dp=64, world=64)           # 8 DP ranks per node: 8 NICs, capped by NVLink
    assert dp_link_bw(pure_dp, 64) == pytest.approx(min(nvlink, 8 * nic))
    tp8 = make_inputs(tp=8, dp=8, world=64)          # one DP rank per node: one NIC
    assert dp_link_bw(tp8, 8) == pytest.approx(nic)
    tp2 = make_inputs(tp=2, dp=32, world=64)         # four per node
    assert dp_link_bw(tp2, 32) == pytest.approx(min(nvlink, 4 * nic))
    assert dp_link_bw(tp8, 8) < dp_link_bw(tp2, 32) <= dp_link_bw(pure_dp, 64)


def test_nvlink_domain_spans_compute_trays():
    gb200 = find_gpu("gb200")
    assert gb200.gpus_per_node == 4 and gb200.nvlink_domain_gpus == 72
    inside = make_inputs(gpu=gb200, gpus_per_node=4, dp=64, world=64)
    across = make_inputs(gpu=gb200, gpus_per_node=4, dp=128, world=128)
    nvlink = gb200.intra_node_bw_gbps * 1e9 * C.INTRA_NODE_LINK_FRACTION
    assert link_bw(inside, 64) == pytest.approx(nvlink)
    assert link_bw(across, 128, 4) < nvlink
    # a B200 node of 8 has no such domain: 64 GPUs are 8 nodes
    b200 = make_inputs(gpu=find_gpu("b200"), dp=64, world=64)
    assert link_bw(b200, 64) < find_gpu("b200").intra_node_bw_gbps * 1e9 * C.INTRA_NODE_LINK_FRACTION


def test_interleaved_pipeline_overlaps_p2p_unless_turned_off():
    base = {"tp": 8, "pp": 8, "vpp": 4, "dp": 2, "world": 128, "layers": 64, "grad_accum": 64}
    on = step_time(make_inputs(**base))
    off = step_time(make_inputs(**base, overlap_p2p=False))
    assert on.pp_comm == pytest.approx(off.pp_comm * (1 - C.P2P_OVERLAP_FRACTION))
    # without interleaving there is nothing to overlap the sends with
    plain = dict(base, vpp=1)
    assert step_time(make_inputs(**plain)).pp_comm == step_time(make_inputs(**plain, overlap_p2p=False)).pp_comm


def test_expert_all_to_all_is_its_own_line():
    moe = make_inputs(experts=8, top_k=2, moe_ffn=14336, ep=8, dp=8, world=8)
    t = step_time(moe)
    assert t.ep_comm > 0 and "ep_comm" in t.as_dict()
    dense_tp = step_time(dataclasses.replace(moe, ep=1))
    assert dense_tp.ep_comm == 0
    total = sum(t.as_dict().values())
    assert t.step_time == pytest.approx(total)
    assert estimate_inputs(moe).to_dict()["time_s"]["ep_comm"] == pytest.approx(t.ep_comm)


def test_attention_efficiency_grows_with_sequence_and_head_size():
    short, long = make_inputs(seq=512), make_inputs(seq=32768)
    ceiling = C.FLASH_ATTENTION_PEAK_FRACTION * attention_kernel_factor(long)
    assert attention_efficiency(short) < attention_efficiency(long) < ceiling
    small_heads = make_inputs(heads=64, kv_heads=64, head_dim=64)
    assert attention_efficiency(small_heads) < attention_efficiency(make_inputs())


def test_power_capped_part_is_slower_than_the_same_chip_uncapped():
    capped, full = find_gpu("h100-sxm-500w"), find_gpu("h100-sxm")
    assert capped.power_limit_w == 500 and capped.bf16_tflops == full.bf16_tflops
    i_cap, i_full = make_inputs(gpu=capped), make_inputs(gpu=full)
    assert sustained_clock(i_full) == 1.0 and 0 < sustained_clock(i_cap) < 1
    assert step_time(i_cap).compute > step_time(i_full).compute


def test_fragmentation_is_not_charged_on_static_buffers():
    # twice the layers doubles parameters, gradients and optimizer state; with full recompute (lifetimes that
    # interleave, so fragmentation is charged) and the same micro batch, the fragmentation grows only with what
    # the allocator hands out per step
    small = make_inputs(layers=16, dp=1, world=1, recompute="full")
    big = make_inputs(layers=32, dp=1, world=1, recompute="full")
    s, b = one_stage(small, 0, 16), one_stage(big, 0, 32)
    assert b.params + b.grads + b.optimizer > 1.9 * (s.params + s.grads + s.optimizer)
    assert s.detail["fragmentation"] == pytest.approx(C.ALLOCATOR_FRAGMENTATION * (s.activations + s.buffers))
    assert b.detail["fragmentation"] == pytest.approx(C.ALLOCATOR_FRAGMENTATION * (b.activations + b.buffers))


def test_gemm_speed_follows_the_gpus_measured_matmul_ceiling():
    a100, h100 = find_gpu("a100-80gb"), find_gpu("h100-sxm")
    assert 0.5 < h100.matmul_achievable_fraction < a100.matmul_achievable_fraction < 1
    i = make_inputs(gpu=h100)
    assert gemm_speed(i) == pytest.approx(h100.bf16_tflops * 1e12 * h100.matmul_achievable_fraction
                                          * C.GEMM_PEAK_FRACTION)
    # halving the part's measured ceiling doubles a large GEMM's FLOP time, not its bytes
    slow = make_inputs(gpu=dataclasses.replace(h100, matmul_achievable_fraction=h100.matmul_achievable_fraction / 2))
    big, big_slow = gemm(i, 8192, 8192, 8192), gemm(slow, 8192, 8192, 8192)
    assert big_slow.flops == pytest.approx(2 * big.flops) and big_slow.bytes == pytest.approx(big.bytes)
    # an unmeasured part gets the default share
    plain = make_inputs(gpu=dataclasses.replace(h100, matmul_achievable_fraction=None, matmul_achievable_fraction_fp8=None))
    assert gemm_speed(plain) == pytest.approx(h100.bf16_tflops * 1e12 * C.MATMUL_ACHIEVABLE_DEFAULT * C.GEMM_PEAK_FRACTION)
    # FP8: the ratio of the measured FP8 and 16-bit ceilings where both are measured, else FP8_GEMM_SPEEDUP
    ratio = h100.fp8_tflops * h100.matmul_achievable_fraction_fp8 / (h100.bf16_tflops * h100.matmul_achievable_fraction)
    assert gemm_speed(i, fp8=True) == pytest.approx(gemm_speed(i) * ratio)
    assert 1 < ratio < 2
    assert gemm_speed(plain, fp8=True) == pytest.approx(gemm_speed(plain) * C.FP8_GEMM_SPEEDUP)


def test_unfused_softmax_backward_moves_its_own_bytes():
    i = make_inputs(flash=False, seq=2048)
    fwd = attention_forward(i)
    bwd = attention_backward(i, fwd)
    scores = i.micro * i.heads * i.seq * i.seq
    hbm = i.gpu.hbm_bandwidth_tbps * 1e12 * C.HBM_ACHIEVABLE_FRACTION
    # the causal fused softmax skips the score reads above the diagonal: half of the forward's 2 bytes, of the
    # backward's 4 (gradient and probabilities)
    skip = C.CAUSAL_SOFTMAX_SKIPPED_SHARE
    softmax_fwd = (C.UNFUSED_SOFTMAX_BYTES_PER_SCORE - 2 * skip) * scores / hbm
    softmax_bwd = (C.UNFUSED_SOFTMAX_BACKWARD_BYTES_PER_SCORE - 4 * skip) * scores / hbm
    assert bwd.flops == pytest.approx(2 * fwd.flops)
    # the batched GEMMs' operand bytes double, the softmax / dropout bytes are their backward's own
    assert bwd.bytes - softmax_bwd == pytest.approx(2 * (fwd.bytes - softmax_fwd))


def test_causal_softmax_skips_reads_only_where_the_fused_kernel_runs(monkeypatch):
    def softmax_bytes(seq: int) -> tuple[float, float]:
        i = make_inputs(flash=False, seq=seq)
        fwd = attention_forward(i)
        gemms = gemm(i, i.seq, i.head_dim, i.seq, 2 * i.micro * i.heads).bytes
        return fwd.bytes - gemms, attention_backward(i, fwd).bytes - 2 * gemms
    inside = softmax_bytes(C.FUSED_SOFTMAX_MAX_KEYS)
    beyond = softmax_bytes(2 * C.FUSED_SOFTMAX_MAX_KEYS)
    # per score (4x the scores at twice the length): the fused kernel's triangle inside its limit, whole rows beyond
    assert inside[0] / (beyond[0] / 4) == pytest.approx((C.UNFUSED_SOFTMAX_BYTES_PER_SCORE - 1.0)
                                                        / C.UNFUSED_SOFTMAX_BYTES_PER_SCORE)
    assert inside[1] / (beyond[1] / 4) == pytest.approx((C.UNFUSED_SOFTMAX_BACKWARD_BYTES_PER_SCORE - 2.0)
                                                        / C.UNFUSED_SOFTMAX_BACKWARD_BYTES_PER_SCORE)
    # no skipped share: the full-row bytes at every length
    monkeypatch.setattr(C, "CAUSAL_SOFTMAX_SKIPPED_SHARE", 0.0)
    full = softmax_bytes(C.FUSED_SOFTMAX_MAX_KEYS)
    assert full[0] > inside[0] and full[1] > inside[1]


def test_moe_token_permutation_costs_bytes_by_top_k():
    def moe_bytes(top_k: int) -> float:
        lin, _ = layer_forward(make_inputs(experts=64, top_k=top_k, moe_ffn=1024, ep=8, dp=8, world=8))
        return lin.bytes
    one, eight = moe_bytes(1), moe_bytes(8)
    i = make_inputs(experts=64, top_k=1, moe_ffn=1024, ep=8, dp=8, world=8)
    hbm = i.gpu.hbm_bandwidth_tbps * 1e12 * C.HBM_ACHIEVABLE_FRACTION
    permute_per_copy = C.MOE_PERMUTE_BYTES_PER_ELEMENT * i.micro * i.seq * i.hidden / hbm
    # seven more routed copies: at least their permute / unpermute traffic more
    assert eight - one >= 7 * permute_per_copy * 0.999


def test_flash_attention_share_follows_the_kernel_and_the_architecture():
    # FlashAttention-2 (and TE, which runs it on Ampere) keeps about twice the share of the peak on A100 that it keeps
    # on H100 (Dao 2023 vs Shah et al. 2024); the Triton kernel runs 1.3-1.5x (forward) / ~2x (backward) slower than it
    a100, h100 = make_inputs(gpu=find_gpu("a100-80gb")), make_inputs(gpu=find_gpu("h100-sxm"))
    assert attention_kernel_factor(h100) == attention_kernel_factor(h100, backward=True) == 1.0
    assert attention_efficiency(a100) == pytest.approx(attention_efficiency(h100) * C.FLASH2_AMPERE_FORWARD_GAIN)
    assert attention_efficiency(a100, backward=True) == pytest.approx(
        attention_efficiency(h100) * C.FLASH2_AMPERE_BACKWARD_GAIN)
    # over forward + backward (2.5x the forward's FLOPs) FlashAttention-2's Ampere share is ~2x the Hopper one
    a_both, h_both = (attention_forward(g).flops + attention_backward(g, attention_forward(g)).flops for g in (a100, h100))
    a_peak, h_peak = a100.gpu.bf16_tflops, h100.gpu.bf16_tflops
    assert 1.8 < (h_both * h_peak) / (a_both * a_peak) < 2.1
    for i in (a100, h100):
        triton = dataclasses.replace(i, flash_triton=True)
        fwd, tfwd = attention_forward(i), attention_forward(triton)
        assert tfwd.flops == pytest.approx(fwd.flops * C.FLASH_TRITON_FORWARD_SLOWDOWN)
        assert attention_backward(triton, tfwd).flops == pytest.approx(
            attention_backward(i, fwd).flops * C.FLASH_TRITON_BACKWARD_SLOWDOWN)
    # the unfused path has no kernel share: the architecture does not move it
    un_a, un_h = (dataclasses.replace(i, flash=False) for i in (a100, h100))
    assert attention_forward(un_a).flops * a_peak == pytest.approx(attention_forward(un_h).flops * h_peak, rel=0.15)
