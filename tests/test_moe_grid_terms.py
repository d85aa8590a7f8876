"""MoE engine facts of issue 30 (s33-moe): the experts' optimizer state sharded over the expert data-parallel
group, multi-latent attention's projections (DeepSeek-V3, Kimi-K2), Megatron's list form of --moe-layer-freq,
and the recompute modules the Megatron-Bridge MoE perf recipes set."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.adapters.megatron.spec_build import moe_layer_pattern
from trainlint.estimator.memory import (expert_shard_group, layer_params, mla_params, stage_expert_params_per_gpu,
                                        static_bytes)
from trainlint.estimator.performance import attention_projections
from trainlint.files.sources import SourceText

from test_estimator import make_inputs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from calibration_files import bridge_recompute_modules

DSV3_MLA = {"mla_q_rank": 1536, "mla_kv_rank": 512, "mla_qk_head": 128, "mla_rope_head": 64, "mla_v_head": 128}


def _dsv3(**over):
    base = {"layers": 61, "hidden": 7168, "heads": 128, "kv_heads": 128, "head_dim": 128, "ffn": 18432, "experts": 256,
            "top_k": 8, "moe_ffn": 2048, "vocab": 129280, "ep": 64, "etp": 1, "tp": 1, "pp": 4, "dp": 64, "dist_opt": True,
            **DSV3_MLA}
    base.update(over)
    return make_inputs(**base)


def test_expert_state_is_sharded_over_the_expert_data_parallel_group() -> None:
    i = _dsv3()
    # Megatron-Core's expert grid: (TP x CP x DP) / (EP x ETP) = 64 / 64: nothing shards the experts' state
    assert expert_shard_group(i) == 1
    assert expert_shard_group(dataclasses.replace(i, ep=8)) == 8
    assert expert_shard_group(dataclasses.replace(i, tp=2, dp=32, ep=8)) == 8
    n_exp = stage_expert_params_per_gpu(i, 16)
    assert n_exp > 0
    dense_only = static_bytes(i, 2 * n_exp)
    split = static_bytes(i, 2 * n_exp, n_exp)
    # the same parameters, half of them experts: their fp32 master weights and moments are not sharded over DP
    assert split[2] > dense_only[2] * 1.5
    assert split[0] == dense_only[0]
    # a dense model, or experts without expert parallelism, keep DP sharding
    assert expert_shard_group(dataclasses.replace(i, ep=1)) == 64
    assert expert_shard_group(make_inputs(dp=8)) == 8


def test_deepspeed_moe_carves_the_expert_group_out_of_dp() -> None:
    i = make_inputs(framework="deepspeed", zero=1, experts=8, ep=4, dp=8)
    assert i.owner.startswith("deepspeed")
    assert expert_shard_group(i) == 2


def test_mla_parameters_match_deepseek_v3() -> None:
    i = _dsv3()
    split, rep = mla_params(i)
    # DeepSeek-V3's attention block: 187M parameters (q 1536 / kv 512 latents, 128 heads of 128 + 64 rotary, v 128)
    assert 186e6 < split + rep < 188e6
    assert rep < 16e6  # the duplicated down projections and their norms
    plain = dataclasses.replace(i, mla_kv_rank=0)
    assert layer_params(plain)[0] > layer_params(i)[0] + 250e6  # MHA of 128 x 128 heads is 470M
    # the projections' GEMMs shrink with it
    assert attention_projections(i, 4096, False).flops < 0.5 * attention_projections(plain, 4096, False).flops
    # queries and keys carry the rotary part: 192 per head; values 128
    assert i.q_dim == 128 * 192 and 2 * i.kv_dim == 128 * (192 + 128) and i.o_dim == 128 * 128


def test_moe_layer_freq_list_is_read_without_evaluating() -> None:
    assert moe_layer_pattern("([0]*3+[1]*58)") == [0] * 3 + [1] * 58
    assert moe_layer_pattern("[1,0,1,0]") == [1, 0, 1, 0]
    assert moe_layer_pattern("[0]*1+[1, 1]*2") == [0, 1, 1, 1, 1]
    for text in ("__import__('os')", "[2]*3", "[0]*3+x", "", "([1]*9999999)"):
        assert moe_layer_pattern(text) is None


def test_megatron_launch_sets_mla_dims_and_moe_pattern() -> None:
    text = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 8 "
            "--multi-latent-attention --kv-lora-rank 256 --q-lora-rank 384 "
            "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 "
            "--num-experts 8 --expert-model-parallel-size 8 --moe-layer-freq '([0]*2+[1]*6)' --bf16\n")
    (spec,) = MegatronAdapter().load(SourceText(str(Path("inline.sh").resolve()), text), LoadContext()).specs
    assert spec.model.latent_dims.value == {"q_lora_rank": 384, "kv_lora_rank": 256, "qk_head_dim": 128,
                                            "qk_rope_head_dim": 64, "v_head_dim": 128}
    assert spec.engine.moe_layer_pattern.value == [0, 0] + [1] * 6
    i = make_inputs(layers=8, experts=8, moe_layers=6)
    assert i.moe_fraction == 6 / 8


def _bridge_row(rid: str, gpu: str, precision: str) -> dict:
    return {"id": rid, "gpu": gpu, "precision": precision, "source": "Megatron-Bridge docs",
            "parallel": {"framework": "Megatron-Bridge"}, "model": {}, "batch": {}}


def test_bridge_moe_recipes_recompute_modules() -> None:
    row = _bridge_row("mbridge-2511-b200-pretrain-gptoss120b-bf16-64gpu-tp1pp1cp1vp1ep8-mbs4-gbs512-tokens_per_s",
                      "B200", "BF16")
    assert bridge_recompute_modules(row) == ("layernorm", "moe_act")
    row = _bridge_row("mbridge-2604-gb200-pretrain-deepseekv3-mxfp8-256gpu-tp1pp4cp1vp4ep64-mbs1-gbs4096-tokens_per_s",
                      "GB200", "MXFP8")
    assert bridge_recompute_modules(row) == ("mlp",)
    row = _bridge_row("mbridge-2608-gb200-pretrain-deepseekv3-mxfp8-256gpu-tp1pp4cp1vp4ep64-mbs1-gbs4096-tokens_per_s",
                      "GB200", "MXFP8")
    assert bridge_recompute_modules(row) == ("mla_up_proj",)
    # 25.09: the run script's per-GPU modules (v0.1.0rc4 scripts/performance/run_script.py)
    row = _bridge_row("mbridge-2509-gb200-pretrain-deepseekv3-fp8-256gpu-tp1pp4cp1vp4ep64-mbs1-gbs2048-tokens_per_s",
                      "GB200", "FP8")
    assert bridge_recompute_modules(row) == ("mla_up_proj",)
    row = _bridge_row("mbridge-2509-h100-pretrain-deepseekv3-fp8-1024gpu-tp2pp8cp1vp4ep64-mbs1-gbs8192-tokens_per_s",
                      "H100 80GB", "FP8")
    assert bridge_recompute_modules(row) == ("mla_up_proj", "mlp")
    # no preset of that release for other models: nothing is written
    row = _bridge_row("mbridge-2509-gb200-pretrain-qwen3-30b-a3b-fp8-8gpu-tp1pp1cp1vp1ep8-mbs4-gbs512-tokens_per_s",
                      "GB200", "FP8")
    assert bridge_recompute_modules(row) == ()


def _launch(extra: str, tmp_path: Path, release: str | None):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths
    from trainlint.project.config import discover

    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 "
                      "--num-attention-heads 8 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 "
                      f"--global-batch-size 64 --num-experts 8 --moe-router-topk 2 --bf16 {extra}\n")
    if release:
        (tmp_path / "pyproject.toml").write_text(f'[tool.trainlint]\nframework = {{megatron = "{release}"}}\n')
    project = discover(script, None, False)
    (result,) = check_paths([str(script)], builtin_adapters(), frameworks=project.framework_settings)
    (spec,) = result.specs
    return spec


def test_dispatcher_generation_follows_the_stated_release(tmp_path: Path) -> None:
    for sub in "abcd":
        (tmp_path / sub).mkdir()
    old = _launch("", tmp_path / "a", "core_v0.6.0")
    assert old.engine.moe_probs_on_output.value is True and old.engine.moe_unfused_permute.value is True
    mid = _launch("", tmp_path / "b", "core_v0.10.0")
    assert mid.engine.moe_probs_on_output.value is True and mid.engine.moe_unfused_permute.value is False
    new = _launch("", tmp_path / "c", "core_v0.13.0")
    assert new.engine.moe_probs_on_output.value is False and new.engine.moe_unfused_permute.value is False
    # nothing stated (upstream): the newest behaviour, no fact set
    up = _launch("", tmp_path / "d", None)
    assert up.engine.moe_probs_on_output is None


def test_old_dispatchers_cost_bytes_and_keep_the_expert_output() -> None:
    from trainlint.estimator.memory import layer_activation_bytes
    from trainlint.estimator.performance import layer_forward

    new = make_inputs(experts=8, top_k=2, moe_ffn=4096, tp=8, etp=8, sp=True, dp=1, micro=2)
    old = dataclasses.replace(new, moe_probs_on_output=True, moe_unfused_permute=True)
    a = new.act_bytes
    tokens = new.seq * new.micro  # gathered over TP = expert-TP
    grown = layer_activation_bytes(old, keep_scores=False) - layer_activation_bytes(new, keep_scores=False)
    assert grown == a * tokens * new.top_k * new.hidden
    assert layer_forward(old)[0].bytes > layer_forward(new)[0].bytes
    # the permute runs on the tokens gathered over expert-TP (all 8 TP shards here), not the TP sequence shard
    extra = layer_forward(old)[0].bytes - layer_forward(new)[0].bytes
    new1, old1 = dataclasses.replace(new, etp=1), dataclasses.replace(old, etp=1)
    extra1 = layer_forward(old1)[0].bytes - layer_forward(new1)[0].bytes
    assert abs(extra / extra1 - 8) < 1e-6


def test_shared_experts_are_a_dense_mlp_beside_the_routed_ones() -> None:
    from trainlint.estimator.memory import layer_activation_bytes
    from trainlint.estimator.performance import mlp_gemms

    routed = _dsv3()
    shared = dataclasses.replace(routed, moe_shared_ffn=2048)
    # DeepSeek-V3: one shared expert of 2048 = 3 x 7168 x 2048 = 44M parameters per MoE layer, TP-split
    assert abs((layer_params(shared)[0] - layer_params(routed)[0]) - routed.moe_fraction * 3 * 7168 * 2048) < 1
    assert layer_params(shared)[2] == layer_params(routed)[2]
    assert mlp_gemms(shared)[1].flops > mlp_gemms(routed)[1].flops
    assert layer_activation_bytes(shared, keep_scores=False) > layer_activation_bytes(routed, keep_scores=False)
    text = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 8 "
            "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 "
            "--num-experts 8 --moe-shared-expert-intermediate-size 512 --bf16\n")
    (spec,) = MegatronAdapter().load(SourceText(str(Path("inline.sh").resolve()), text), LoadContext()).specs
    assert spec.model.moe_shared_expert_ffn.value == 512
