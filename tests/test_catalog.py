"""GPU catalog, model presets, name lookup, local HF config.json reading, parameter counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.presets.catalog import (
    GPU,
    CatalogError,
    find_gpu,
    gpu_references,
    load_gpus,
    name_collisions,
)
from trainlint.presets.models import (
    ModelPreset,
    count_parameters,
    describe_param_error,
    find_model_preset,
    load_model_presets,
    read_hf_config,
)

GPUS = load_gpus()
PRESETS = load_model_presets()
REFS = gpu_references()

NUMERIC_GPU_FIELDS = (
    "memory_gb", "memory_gib", "bf16_tflops", "fp16_tflops", "fp8_tflops", "tf32_tflops",
    "fp32_tflops", "hbm_bandwidth_tbps", "intra_node_bw_gbps", "inter_node_bw_gbps", "gpus_per_node",
)
REQUIRED_GPUS = ("v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "mi300x", "l4")


# ----------------------------------------------------------------------------- GPU data


def test_required_gpus_present() -> None:
    assert set(REQUIRED_GPUS) <= set(GPUS)


@pytest.mark.parametrize("gid", sorted(GPUS))
def test_gpu_schema(gid: str) -> None:
    g = GPUS[gid]
    assert g.name and g.vendor in {"nvidia", "amd"}
    assert g.architecture in {"volta", "ampere", "hopper", "blackwell", "cdna3", "ada"}
    assert g.memory_gb > 0
    # GiB reported by the driver is a bit below the marketed GB, never far from it
    assert g.memory_gib is not None and 0.9 * g.memory_gb <= g.memory_gib <= g.memory_gb
    assert g.bf16_tflops is None or g.bf16_tflops > 0
    assert g.supports_bf16 == (g.bf16_tflops is not None)
    assert g.supports_fp8 == (g.fp8_tflops is not None)
    assert g.fp16_tflops and g.fp32_tflops and g.hbm_bandwidth_tbps
    # tensor-core half precision is always well above the vector FP32 peak
    assert g.fp16_tflops > 2 * g.fp32_tflops
    if g.fp8_tflops is not None:
        assert g.fp8_tflops == pytest.approx(2 * g.fp16_tflops, rel=0.01)
    # one direction over the node fabric is far below the GPU's own memory bandwidth
    assert g.intra_node_bw_gbps is not None and g.intra_node_bw_gbps < 1000 * g.hbm_bandwidth_tbps
    if g.inter_node_bw_gbps is not None:
        assert g.inter_node_system and g.inter_node_bw_gbps <= g.intra_node_bw_gbps
    else:
        assert any("inter_node_bw_gbps is null" in n for n in g.notes), "a null figure needs a note saying why"


@pytest.mark.parametrize("gid", sorted(GPUS))
def test_every_figure_has_a_source(gid: str) -> None:
    g = GPUS[gid]
    for name in NUMERIC_GPU_FIELDS:
        if getattr(g, name) is not None:
            assert name in g.sources, f"{gid}.{name} has no source"
    if g.peak_tflops_sparse:
        assert "peak_tflops_sparse" in g.sources
    for name, citation in g.sources.items():
        key = citation.split(":", 1)[0]
        assert key in REFS or key == "assumption, not a vendor figure", f"{gid}.{name}: unknown reference {key!r}"
    for ref in REFS.values():
        assert ref["title"] and ref["url"]


@pytest.mark.parametrize("gid", sorted(GPUS))
def test_dense_figures_are_half_the_sparse_ones(gid: str) -> None:
    g = GPUS[gid]
    for dtype, sparse in g.peak_tflops_sparse.items():
        dense = g.peak_tflops(dtype)
        assert dense is not None and dense < sparse
        assert dense == pytest.approx(sparse / 2, rel=0.005), f"{gid} {dtype}"


def test_known_datasheet_figures() -> None:
    assert GPUS["h100-sxm"].bf16_tflops == pytest.approx(989, abs=1)  # not the 1,979 "with sparsity"
    assert GPUS["h100-sxm"].fp8_tflops == pytest.approx(1979, abs=1)
    assert GPUS["h200"].bf16_tflops == GPUS["h100-sxm"].bf16_tflops
    assert GPUS["h200"].hbm_bandwidth_tbps == 4.8
    assert GPUS["a100-80gb"].bf16_tflops == 312 and GPUS["a100-40gb"].tf32_tflops == 156
    assert GPUS["a100-40gb"].hbm_bandwidth_tbps < GPUS["a100-80gb"].hbm_bandwidth_tbps
    assert GPUS["v100-32gb"].bf16_tflops is None and GPUS["v100-32gb"].fp16_tflops == 125
    assert GPUS["a100-80gb"].fp8_tflops is None
    assert GPUS["mi300x"].bf16_tflops == pytest.approx(1307.4)
    assert GPUS["b200"].bf16_tflops == pytest.approx(2250)
    assert GPUS["l4"].bf16_tflops == pytest.approx(121)
    # one convention: unidirectional per GPU
    assert GPUS["h100-sxm"].intra_node_bw_gbps == 450 and GPUS["h100-sxm"].inter_node_bw_gbps == 50
    assert GPUS["a100-80gb"].intra_node_bw_gbps == 300 and GPUS["a100-80gb"].inter_node_bw_gbps == 25


def test_peak_tflops_accessor() -> None:
    g = GPUS["h100-sxm"]
    assert g.peak_tflops("BF16") == g.peak_tflops("bfloat16") == g.bf16_tflops
    assert GPUS["v100-32gb"].peak_tflops("bf16") is None
    with pytest.raises(CatalogError):
        g.peak_tflops("int4")
    assert g.memory_bytes == pytest.approx(81559 * 2**20, rel=1e-4)


# ----------------------------------------------------------------------------- lookup


@pytest.mark.parametrize(
    "name, gid",
    [
        ("H100", "h100-sxm"), ("h100", "h100-sxm"), ("h100-80gb", "h100-sxm"), ("H100 SXM5", "h100-sxm"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("h100-sxm", "h100-sxm"), ("H100-PCIe", "h100-pcie"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("a100_40gb", "a100-40gb"), ("MI300X", "mi300x"),
        ("AMD Instinct MI300X", "mi300x"), ("V100", "v100-32gb"), ("L4", "l4"), ("B200", "b200"),
    ],
)
def test_find_gpu_aliases(name: str, gid: str) -> None:
    assert find_gpu(name).id == gid


def test_find_gpu_ambiguous_a100() -> None:
    with pytest.raises(CatalogError, match="ambiguous") as err:
        find_gpu("A100")
    assert set(err.value.suggestions) == {"a100-40gb", "a100-80gb"}


def test_find_gpu_did_you_mean() -> None:
    with pytest.raises(CatalogError) as err:
        find_gpu("h100-sxn")
    assert "did you mean `h100-sxm`" in str(err.value)
    assert err.value.suggestions[0] == "h100-sxm"


def test_find_gpu_unknown_lists_known() -> None:
    with pytest.raises(CatalogError, match=r"unknown GPU 'tpu-v5p'.*known: .*h100-sxm"):
        find_gpu("tpu-v5p")


@pytest.mark.parametrize(
    "name", ["llama2-7b", "Llama-2-7b", "meta-llama/Llama-2-7b-hf", "LLAMA-2-7B", "llama_2_7b", "Llama-2-7b-hf"]
)
def test_find_model_preset_aliases(name: str) -> None:
    assert find_model_preset(name).id == "llama2-7b"


@pytest.mark.parametrize(
    "name, pid",
    [
        ("meta-llama/Llama-3.1-70B", "llama3.1-70b"), ("Meta-Llama-3-8B", "llama3-8b"),
        ("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"), ("EleutherAI/pythia-1.4b-deduped", "pythia-1.4b"),
        ("GPT-3 XL", "gpt3-1.3b"), ("gpt-3-175b", "gpt3-175b"), ("Qwen/Qwen2.5-72B", "qwen2.5-72b"),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"), ("EleutherAI/gpt-neox-20b", "gpt-neox-20b"),
    ],
)
def test_find_model_preset_more_aliases(name: str, pid: str) -> None:
    assert find_model_preset(name).id == pid


def test_find_model_preset_did_you_mean() -> None:
    with pytest.raises(CatalogError) as err:
        find_model_preset("llama2-7c")
    assert "llama2-7b" in err.value.suggestions
    assert "did you mean" in str(err.value)


def test_no_name_resolves_to_two_entries() -> None:
    assert name_collisions(GPUS) == []
    assert name_collisions(PRESETS) == []


@pytest.mark.parametrize("name, pid", [("GPT-3 13B", "gpt3-13b"), ("gpt3-1.3b", "gpt3-1.3b"), ("GPT-3-1.3B", "gpt3-1.3b"),
                                       ("Llama-3.1-8B", "llama3.1-8b"), ("Meta-Llama-3-8B", "llama3-8b")])
def test_dotted_sizes_stay_distinct(name: str, pid: str) -> None:
    assert find_model_preset(name).id == pid


def test_loaders_return_copies() -> None:
    extra = load_gpus()
    extra["my-gpu"] = GPUS["l4"]
    assert "my-gpu" not in load_gpus()


# ----------------------------------------------------------------------------- presets


@pytest.mark.parametrize("pid", sorted(PRESETS))
def test_preset_schema(pid: str) -> None:
    m = PRESETS[pid]
    assert m.source and m.published_params and m.published_params_source
    assert m.num_attention_heads % m.num_kv_heads == 0
    assert m.norm in {"rmsnorm", "layernorm"} and m.attention_bias in {"none", "qkv", "all"}
    assert m.seq_length and m.max_position_embeddings and m.seq_length <= m.max_position_embeddings
    if m.head_dim is None and m.mla is None and m.hidden_size % m.num_attention_heads:
        assert any("head_dim" in n for n in m.notes), "inconsistent heads need a note"
    if m.is_moe:
        assert m.moe_top_k and m.moe_ffn_hidden_size and m.published_active_params
        assert m.moe_top_k <= (m.num_experts or 0)


def test_required_presets_present() -> None:
    required = {
        "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-8b", "llama3.1-70b",
        "llama3.1-405b", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "gpt-neox-20b",
        *(f"gpt3-{s}" for s in ("125m", "350m", "760m", "1.3b", "2.7b", "6.7b", "13b", "175b")),
        *(f"pythia-{s}" for s in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b")),
    }
    assert required <= set(PRESETS)


@pytest.mark.parametrize("pid", sorted(PRESETS))
def test_parameter_count_within_2_percent(pid: str) -> None:
    m = PRESETS[pid]
    c = count_parameters(m)
    assert m.published_params
    assert abs(c.total - m.published_params) / m.published_params < 0.02, describe_param_error(m)
    if m.published_active_params:
        assert abs(c.active - m.published_active_params) / m.published_active_params < 0.02
    else:
        assert c.active == c.total


def test_exact_parameter_counts() -> None:
    # counts that are published to the parameter, so the formula must hit them exactly
    assert count_parameters(PRESETS["llama2-7b"]).total == 6_738_415_616
    assert count_parameters(PRESETS["gpt-neox-20b"]).total == 20_554_567_680
    pythia = PRESETS["pythia-70m"]
    assert count_parameters(pythia).total == 70_426_624
    # Pythia's embeddings are untied: the non-embedding count is the paper's 18,915,328
    assert count_parameters(pythia).non_embedding == 18_915_328
    assert count_parameters(PRESETS["llama3-8b"]).total == 8_030_261_248


# ----------------------------------------------------------------------------- HF config.json


def _write(tmp_path: Path, name: str, cfg: dict[str, object]) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return d


LLAMA2_7B_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 11008, "max_position_embeddings": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "rms_norm_eps": 1e-05, "tie_word_embeddings": False,
    "vocab_size": 32000,
}


def _same_architecture(a: ModelPreset, b: ModelPreset) -> None:
    for f in ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "ffn_hidden_size",
              "vocab_size", "gated_mlp", "tied_embeddings", "num_experts", "moe_top_k", "norm"):
        assert getattr(a, f) == getattr(b, f), f
    assert count_parameters(a).total == count_parameters(b).total


def test_read_llama_config_dir_and_file(tmp_path: Path) -> None:
    d = _write(tmp_path, "Llama-2-7b-hf", LLAMA2_7B_CONFIG)
    for p in (d, d / "config.json", str(d)):
        m = read_hf_config(p)
        _same_architecture(m, PRESETS["llama2-7b"])
        assert m.max_position_embeddings == 4096 and m.position_embedding == "rope"


def test_read_mixtral_config(tmp_path: Path) -> None:
    cfg = {"model_type": "mixtral", "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
           "max_position_embeddings": 32768, "num_attention_heads": 32, "num_experts_per_tok": 2,
           "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8, "rms_norm_eps": 1e-05,
           "rope_theta": 1e6, "tie_word_embeddings": False, "vocab_size": 32000}
    m = read_hf_config(_write(tmp_path, "mixtral", cfg))
    _same_architecture(m, PRESETS["mixtral-8x7b"])
    assert count_parameters(m).active == count_parameters(PRESETS["mixtral-8x7b"]).active


def test_read_gpt_neox_config(tmp_path: Path) -> None:
    cfg = {"model_type": "gpt_neox", "hidden_act": "gelu", "hidden_size": 512, "intermediate_size": 2048,
           "max_position_embeddings": 2048, "num_attention_heads": 8, "num_hidden_layers": 6,
           "rotary_pct": 0.25, "tie_word_embeddings": False, "use_parallel_residual": True, "vocab_size": 50304,
           "layer_norm_eps": 1e-05}
    m = read_hf_config(_write(tmp_path, "pythia-70m", cfg))
    _same_architecture(m, PRESETS["pythia-70m"])
    assert m.parallel_residual and not m.gated_mlp


def test_read_gpt2_config(tmp_path: Path) -> None:
    cfg = {"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 768, "n_head": 12, "n_layer": 12,
           "n_positions": 1024, "n_inner": None, "vocab_size": 50257}
    m = read_hf_config(_write(tmp_path, "gpt2", cfg))
    assert (m.num_layers, m.hidden_size, m.ffn_hidden_size, m.tied_embeddings) == (12, 768, 3072, True)
    assert count_parameters(m).total == 124_439_808  # GPT-2 small as counted by transformers


def test_read_qwen2_config_has_qkv_bias(tmp_path: Path) -> None:
    cfg = {"model_type": "qwen2", "hidden_act": "silu", "hidden_size": 3584, "intermediate_size": 18944,
           "max_position_embeddings": 131072, "num_attention_heads": 28, "num_hidden_layers": 28,
           "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "vocab_size": 152064}
    m = read_hf_config(_write(tmp_path, "qwen", cfg))
    assert m.attention_bias == "qkv"
    _same_architecture(m, PRESETS["qwen2.5-7b"])


def test_read_deepseek_v3_config(tmp_path: Path) -> None:
    cfg = {"model_type": "deepseek_v3", "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432,
           "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
           "num_experts_per_tok": 8, "first_k_dense_replace": 3, "num_attention_heads": 128,
           "num_key_value_heads": 128, "num_hidden_layers": 61, "q_lora_rank": 1536, "kv_lora_rank": 512,
           "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
           "max_position_embeddings": 163840, "rms_norm_eps": 1e-06, "tie_word_embeddings": False}
    m = read_hf_config(_write(tmp_path, "dsv3", cfg))
    assert count_parameters(m) == count_parameters(PRESETS["deepseek-v3"])


def test_read_hf_config_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CatalogError, match="cannot read"):
        read_hf_config("meta-llama/Llama-2-7b-hf")  # a hub id is not fetched
    bad = tmp_path / "bad.json"
    bad.write_text('{"hidden_size": 4096,,}', encoding="utf-8")
    with pytest.raises(CatalogError, match="not valid JSON \\(line 1"):
        read_hf_config(bad)
    missing = {k: v for k, v in LLAMA2_7B_CONFIG.items() if k != "intermediate_size"}
    with pytest.raises(CatalogError, match="missing `intermediate_size`"):
        read_hf_config(_write(tmp_path, "incomplete", missing))
    wrong = dict(LLAMA2_7B_CONFIG, num_hidden_layers="32")
    with pytest.raises(CatalogError, match="must be an integer"):
        read_hf_config(_write(tmp_path, "wrongtype", wrong))
    arr = tmp_path / "arr.json"
    arr.write_text("[]", encoding="utf-8")
    with pytest.raises(CatalogError, match="JSON object"):
        read_hf_config(arr)


def test_gpu_dataclass_is_frozen() -> None:
    g: GPU = GPUS["h100-sxm"]
    with pytest.raises(AttributeError):
        g.memory_gb = 1  # type: ignore[misc]


def test_tuned_variants_resolve_to_their_base_preset():
    from trainlint.presets.catalog import CatalogError
    from trainlint.presets.models import find_model_preset

    assert find_model_preset("meta-llama/Meta-Llama-3-8B-Instruct").id == "llama3-8b"
    assert find_model_preset("meta-llama/Llama-2-7b-chat-hf").id == "llama2-7b"
    assert find_model_preset("Qwen/Qwen2.5-7B-Instruct").id == "qwen2.5-7b"
    with pytest.raises(CatalogError):
        find_model_preset("example-org/unknown-model-Instruct")
