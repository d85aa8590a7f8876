"""The MoE token dispatcher as an engine fact (s34-acc-bridge-moe): which dispatcher the flags (and the stated
Megatron-Core release) select, what its permutation costs in HBM traffic, and which dispatcher Megatron-Bridge's
DeepSeek-V3 perf runs used per release."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from trainlint.estimator import coefficients as C
from trainlint.estimator.memory import moe_tokens_per_gpu
from trainlint.estimator.performance import hbm, layer_forward, moe_permute_bytes_per_element
from trainlint.presets.catalog import find_gpu

from test_estimator import make_inputs
from test_moe_grid_terms import _launch as moe_launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from calibration_files import BRIDGE_DISPATCHER_FLAGS, bridge_dispatcher, bridge_moe_ep_overlap


def _launch(extra: str, tmp_path: Path, release: str | None = None):
    """test_moe_grid_terms's launch (8 experts, top-2) with four expert-parallel ranks."""
    return moe_launch(f"--expert-model-parallel-size 4 {extra}", tmp_path, release)


def _dispatcher(extra: str, tmp_path: Path, sub: str, release: str | None = None):
    (tmp_path / sub).mkdir()
    entry = _launch(extra, tmp_path / sub, release).engine.moe_dispatcher
    return None if entry is None else entry.value


def test_the_flags_select_the_dispatcher(tmp_path: Path) -> None:
    # Megatron's default (allgather) is left to the estimator's own default
    assert _dispatcher("", tmp_path, "a") is None
    assert _dispatcher("--moe-token-dispatcher-type alltoall", tmp_path, "b") == "alltoall"
    assert _dispatcher("--moe-token-dispatcher-type allgather", tmp_path, "c") == "allgather"
    # DeepEP (the flex default backend): its exchange, then Megatron's permute
    assert _dispatcher("--moe-token-dispatcher-type flex", tmp_path, "d") == "flex"
    # HybridEP: upstream (0.18 on) permutes inside its kernels only with the flag ...
    assert _dispatcher("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep", tmp_path, "e") == "flex"
    assert _dispatcher("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
                       "--moe-permute-fusion-into-hybridep", tmp_path, "f") == "flex-fused"
    # ... the releases before 0.18 always did
    assert _dispatcher("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep", tmp_path, "g",
                       "core_v0.16.0") == "flex-fused"
    assert _dispatcher("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep", tmp_path, "h",
                       "core_v0.18.0") == "flex"


def test_permutation_bytes_follow_the_dispatcher() -> None:
    base = make_inputs(experts=64, top_k=8, moe_ffn=1024, ep=8, etp=1, dp=8, micro=1)
    assert base.moe_dispatcher == "allgather"
    alltoall = dataclasses.replace(base, moe_dispatcher="alltoall")
    flex = dataclasses.replace(base, moe_dispatcher="flex")
    fused = dataclasses.replace(base, moe_dispatcher="flex-fused")
    assert moe_permute_bytes_per_element(base) == C.MOE_PERMUTE_BYTES_PER_ELEMENT
    assert moe_permute_bytes_per_element(flex) == C.MOE_PERMUTE_BYTES_PER_ELEMENT
    # 8 local experts per rank: the received copies are sorted into expert order and back
    assert moe_permute_bytes_per_element(alltoall) == C.MOE_PERMUTE_BYTES_PER_ELEMENT + C.MOE_SORT_CHUNKS_BYTES_PER_ELEMENT
    assert moe_permute_bytes_per_element(fused) == 0.0
    # one expert per rank: nothing to sort
    assert moe_permute_bytes_per_element(dataclasses.replace(alltoall, ep=64, dp=64)) == C.MOE_PERMUTE_BYTES_PER_ELEMENT
    # the step pays the sort's traffic on every routed copy of the MoE layers
    extra = layer_forward(alltoall)[0].bytes - layer_forward(base)[0].bytes
    copies = alltoall.moe_fraction * moe_tokens_per_gpu(alltoall) * alltoall.top_k * alltoall.hidden
    assert abs(extra - C.MOE_SORT_CHUNKS_BYTES_PER_ELEMENT * copies / hbm(alltoall)) < 1e-12
    assert layer_forward(fused)[0].bytes < layer_forward(base)[0].bytes < layer_forward(alltoall)[0].bytes


def _row(rid: str, gpu: str) -> dict:
    return {"id": rid, "gpu": gpu, "precision": "FP8", "parallel": {"framework": "Megatron-Bridge / Megatron-Core"},
            "source": "github.com/NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md"}


def test_bridge_deepseek_dispatcher_by_release() -> None:
    # 25.11 (v0.2.0): HybridEP only on GB200 / GB300; B200 stays on the provider's alltoall
    assert bridge_dispatcher(_row("mbridge-2511-b200-pretrain-deepseekv3-fp8-mx-256gpu-x", "B200")) == "alltoall"
    assert bridge_dispatcher(_row("mbridge-2511-gb200-pretrain-deepseekv3-bf16-256gpu-x", "GB200")) == "hybridep"
    # 26.02 (v0.3.0): HybridEP on B200 too, with the same layout
    assert bridge_dispatcher(_row("mbridge-2602-b200-pretrain-deepseekv3-mxfp8-256gpu-x", "B200")) == "hybridep"
    # 25.09: token drop keeps alltoall on B200; DeepEP with the 1F1B all-to-all overlap on H100
    assert bridge_dispatcher(_row("mbridge-2509-b200-pretrain-deepseekv3-fp8-256gpu-x", "B200")) == "alltoall"
    h100 = _row("mbridge-2509-h100-pretrain-deepseekv3-fp8-1024gpu-x", "H100 80GB")
    assert bridge_dispatcher(h100) == "deepep" and bridge_moe_ep_overlap(h100)
    assert not bridge_moe_ep_overlap(_row("mbridge-2602-h100-pretrain-deepseekv3-fp8-1024gpu-x", "H100 80GB"))
    # Qwen3 MoE: HybridEP on GB200 / GB300 from 25.11, the provider's alltoall on B200 (235B), with the preset's
    # all-to-all overlap where it sets moe_a2a_overlap (v0.2.0 235B on B200, every tag's 235B on H100)
    qwen = _row("mbridge-2511-b200-pretrain-qwen3-235b-a22b-fp8-mx-64gpu-x", "B200")
    assert bridge_dispatcher(qwen) == "alltoall" and bridge_moe_ep_overlap(qwen)
    qwen = _row("mbridge-2602-b200-pretrain-qwen3-235b-a22b-mxfp8-256gpu-x", "B200")
    assert bridge_dispatcher(qwen) == "alltoall" and not bridge_moe_ep_overlap(qwen)
    assert bridge_dispatcher(_row("mbridge-2511-gb300-pretrain-qwen3-30b-a3b-fp8-mx-8gpu-x", "GB300")) == "hybridep"
    assert bridge_dispatcher(_row("mbridge-2604-b200-pretrain-qwen3-30b-a3b-mxfp8-8gpu-x", "B200")) == "hybridep"
    assert bridge_dispatcher(_row("mbridge-2509-b200-pretrain-qwen3-30b-a3b-fp8-8gpu-x", "B200")) == "alltoall"
    # a model no table covers: nothing written (Megatron's default)
    assert bridge_dispatcher(_row("mbridge-2602-b200-pretrain-mixtral-8x22b-bf16-64gpu-x", "B200")) == ""
    assert "--moe-permute-fusion-into-hybridep" in BRIDGE_DISPATCHER_FLAGS["hybridep"]


def test_bridge_dispatcher_of_the_later_releases_and_models() -> None:
    """26.06 reads the v0.5.0 presets (the Bridge of the NeMo 26.06 container), 26.08 the flat recipes of 067f987;
    GPT-OSS keeps its model's alltoall where the presets set no backend, Kimi-K2 takes HybridEP on GB300."""
    dsv3 = _row("mbridge-2606-gb200-pretrain-deepseekv3-mxfp8-256gpu-x", "GB200")
    assert bridge_dispatcher(dsv3) == "hybridep" and bridge_moe_ep_overlap(dsv3)
    b300 = _row("mbridge-2606-b300-pretrain-deepseekv3-mxfp8-256gpu-x", "B300")
    assert bridge_dispatcher(b300) == "hybridep" and not bridge_moe_ep_overlap(b300)
    h100 = _row("mbridge-260601-h100-pretrain-qwen3-30b-a3b-fp8-16gpu-x", "H100 80GB")
    assert bridge_dispatcher(h100) == "hybridep" and not bridge_moe_ep_overlap(h100)
    qwen = _row("mbridge-2608-gb300-pretrain-qwen3-235b-a22b-mxfp8-256gpu-x", "GB300")
    assert bridge_dispatcher(qwen) == "hybridep" and bridge_moe_ep_overlap(qwen)
    assert bridge_dispatcher(_row("mbridge-2602-b200-pretrain-gptoss120b-bf16-64gpu-x", "B200")) == "alltoall"
    assert bridge_dispatcher(_row("mbridge-2604-gb300-pretrain-gptoss120b-bf16-64gpu-x", "GB300")) == "alltoall"
    gb200 = _row("mbridge-2604-gb200-pretrain-gptoss120b-bf16-64gpu-x", "GB200")
    assert bridge_dispatcher(gb200) == "hybridep" and bridge_moe_ep_overlap(gb200)
    assert bridge_dispatcher(_row("mbridge-2606-gb300-pretrain-kimi-k2-mxfp8-256gpu-x", "GB300")) == "hybridep"
    # 26.02.01 Kimi-K2: v0.3.0 has no Kimi preset to read
    assert bridge_dispatcher(_row("mbridge-260201-gb300-pretrain-kimi-k2-mxfp8-256gpu-x", "GB300")) == ""


def test_expert_gradients_are_reduced_over_the_expert_data_parallel_group() -> None:
    from trainlint.estimator.memory import expert_shard_group
    from trainlint.estimator.performance import data_parallel, expert_exchange, link_bw, optimizer_time, ring_time

    # DeepSeek-V3-like experts on 8-GPU nodes: EP 8 inside a node, 64 data-parallel ranks over 8 nodes
    i = make_inputs(experts=256, top_k=8, moe_ffn=2048, hidden=7168, ep=8, etp=1, dp=64, dist_opt=True,
                    gpu=find_gpu("b200"))
    n_expert, n_dense = 4e9, 1e9
    ranks, bw = expert_exchange(i, n_expert)
    # (TP x CP x DP) / (EP x ETP) = 8 ranks, each on another node: one NIC per GPU, not the node's eight
    assert ranks == expert_shard_group(i) == 8
    assert bw == link_bw(i, 64, 1) < link_bw(i, 64, 8)
    plain = dataclasses.replace(i, overlap_dp=False)
    split = data_parallel(plain, n_dense + n_expert, 1.0, 0.5, n_expert)
    want = (ring_time(2.0 * n_dense, 64, link_bw(i, 64, 8), 1.0) + ring_time(2.0 * n_expert, 8, bw, 1.0)
            + ring_time(4.0 * n_dense, 64, link_bw(i, 64, 8), 1.0) + ring_time(4.0 * n_expert, 8, bw, 1.0))
    assert abs(split - want) < 1e-12 * want
    assert split > data_parallel(plain, n_dense + n_expert, 1.0, 0.5)
    # EP equal to DP: every expert is on one rank, nothing to reduce for them
    lone = dataclasses.replace(plain, ep=64)
    assert expert_shard_group(lone) == 1
    assert data_parallel(lone, n_dense + n_expert, 1.0, 0.5, n_expert) < data_parallel(lone, n_dense + n_expert, 1.0, 0.5)
    # the optimizer steps each expert parameter on 1/8 of the ranks, not 1/64
    assert optimizer_time(i, n_dense + n_expert, n_expert) > optimizer_time(i, n_dense + n_expert) * 4
