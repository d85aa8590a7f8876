"""Model architectures: the presets shipped with trainlint, local Hugging Face ``config.json`` files,
and parameter counts.

The data lives in ``models.json`` of the ``trainlint.data`` package (``linter/data/`` in the source
tree); every figure there carries its source. This module
types it, resolves names the way people write them ("llama2-7b", "meta-llama/Llama-2-7b-hf"), and
counts parameters from the architecture so an estimate never has to trust a nominal "7B". Apart from
:mod:`trainlint.presets.catalog` (the GPUs), so that a check that names no model never builds these tables.

Nothing here downloads anything: ``read_hf_config`` reads a file already on disk.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from trainlint.presets.catalog import CatalogError, lookup_name, opt_float, read_package_json
from trainlint.core.provenance import Provenance, Value
from trainlint.core.spec import TrainingSpec

__all__ = [
    "MLAConfig",
    "ModelPreset",
    "ParamCount",
    "count_parameters",
    "describe_param_error",
    "fill_model",
    "find_model_preset",
    "load_model_presets",
    "model_preset_from_dict",
    "read_hf_config",
]


@dataclass(frozen=True)
class MLAConfig:
    """DeepSeek multi-head latent attention dimensions."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class ParamCount:
    """A model's parameters: in total, active per token, and in embeddings."""

    total: int
    active: int  # per token: MoE counts only the routed top-k + shared experts
    embedding: int  # input embedding + untied output layer + learned positions

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding


@dataclass(frozen=True)
class ModelPreset:
    """Architecture facts of a decoder-only transformer."""

    id: str
    name: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    ffn_hidden_size: int
    vocab_size: int
    gated_mlp: bool = True
    max_position_embeddings: int | None = None
    seq_length: int | None = None
    tied_embeddings: bool = False
    head_dim: int | None = None
    activation: str = "silu"
    norm: str = "rmsnorm"  # rmsnorm | layernorm (layernorm has a bias)
    position_embedding: str = "rope"
    learned_position_embeddings: bool = False
    attention_bias: str = "none"  # none | qkv | all
    mlp_bias: bool = False
    parallel_residual: bool = False
    num_experts: int | None = None
    moe_top_k: int | None = None
    moe_ffn_hidden_size: int | None = None
    num_shared_experts: int = 0
    first_dense_layers: int = 0
    router_bias: bool = False
    mla: MLAConfig | None = None
    family: str | None = None
    hf_repo: str | None = None
    published_params: float | None = None
    published_active_params: float | None = None
    published_params_source: str | None = None
    source: str | None = None
    gated_activation: str | None = None
    """How the modeling code this preset was read for computes a gated MLP's activation (the spec's
    ``memory.gated_activation``): ``unfused`` for a Hugging Face config.json, whose transformers modeling code runs
    ``down_proj(act_fn(gate_proj(x)) * up_proj(x))`` as separate ops (LlamaMLP, MistralMLP, Qwen2MLP ...), keeping the
    activation's output for the multiply; None: not known (the run's framework says)."""
    aliases: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts and self.num_experts > 1)

    def params(self) -> ParamCount:
        return count_parameters(self)


# --------------------------------------------------------------------------- parameter count


def _q_and_kv_dims(m: ModelPreset) -> tuple[int, int]:
    """Width of the query and of each of K/V projections.

    Without an explicit head_dim the query projection is hidden_size wide; this matters for
    GPT-3 XL whose Table 2.1 heads x d_head (24 x 128) does not equal d_model (2048).
    """
    if m.head_dim is not None:
        return m.num_attention_heads * m.head_dim, m.num_kv_heads * m.head_dim
    return m.hidden_size, m.hidden_size * m.num_kv_heads // m.num_attention_heads


def _attention_params(m: ModelPreset) -> int:
    h = m.hidden_size
    if m.mla is not None:
        return _mla_params(m, m.mla)
    q, kv = _q_and_kv_dims(m)
    weights = h * q + 2 * h * kv + q * h
    bias = {"none": 0, "qkv": q + 2 * kv, "all": q + 2 * kv + h}.get(m.attention_bias)
    if bias is None:
        raise CatalogError(f"{m.id}: attention_bias must be none, qkv or all, not {m.attention_bias!r}")
    return weights + bias


def _mla_params(m: ModelPreset, a: MLAConfig) -> int:
    h, n = m.hidden_size, m.num_attention_heads
    qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim
    if a.q_lora_rank:
        # down-projection, its RMSNorm, up-projection to all heads
        q = h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * n * qk_head
    else:
        q = h * n * qk_head
    # joint KV down-projection (+ the shared rotary key), its RMSNorm, up-projection to K_nope and V
    kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
    kv += a.kv_lora_rank * n * (a.qk_nope_head_dim + a.v_head_dim)
    out = n * a.v_head_dim * h
    return q + kv + out


def _mlp_params(h: int, f: int, gated: bool, bias: bool) -> int:
    if gated:
        return 3 * h * f + ((2 * f + h) if bias else 0)
    return 2 * h * f + ((f + h) if bias else 0)


def _norm_params(m: ModelPreset) -> int:
    return 2 * m.hidden_size if m.norm == "layernorm" else m.hidden_size


def count_parameters(m: ModelPreset) -> ParamCount:
    """Parameters from the architecture: embeddings, attention (GQA / MLA), MLP or MoE, norms."""
    h = m.hidden_size
    attn = _attention_params(m)
    norms = 2 * _norm_params(m)  # pre-attention and pre-MLP norm (NeoX parallel residual too)
    dense_mlp = _mlp_params(h, m.ffn_hidden_size, m.gated_mlp, m.mlp_bias)
    dense_layer = attn + norms + dense_mlp

    if m.is_moe:
        n_moe = m.num_layers - m.first_dense_layers
        n_dense = m.first_dense_layers
        f_e = m.moe_ffn_hidden_size or m.ffn_hidden_size
        expert = _mlp_params(h, f_e, m.gated_mlp, m.mlp_bias)
        experts_total = (m.num_experts or 0) + m.num_shared_experts
        router = h * (m.num_experts or 0) + ((m.num_experts or 0) if m.router_bias else 0)
        moe_layer = attn + norms + router + experts_total * expert
        top_k = m.moe_top_k or 1
        inactive_per_layer = ((m.num_experts or 0) - top_k) * expert
    else:
        n_moe, n_dense, moe_layer, inactive_per_layer = 0, m.num_layers, 0, 0

    embedding = m.vocab_size * h
    if not m.tied_embeddings:
        embedding += m.vocab_size * h
    if m.learned_position_embeddings:
        embedding += (m.max_position_embeddings or m.seq_length or 0) * h

    total = embedding + n_dense * dense_layer + n_moe * moe_layer + _norm_params(m)
    active = total - n_moe * inactive_per_layer
    return ParamCount(total=total, active=active, embedding=embedding)



# --------------------------------------------------------------------------- loading


def model_preset_from_dict(pid: str, d: Mapping[str, Any]) -> ModelPreset:
    """Build a ModelPreset from a models.json entry (also for plugins adding presets)."""
    mla = d.get("mla")
    return ModelPreset(
        id=pid,
        name=d.get("name", pid),
        num_layers=int(d["num_layers"]),
        hidden_size=int(d["hidden_size"]),
        num_attention_heads=int(d["num_attention_heads"]),
        num_kv_heads=int(d.get("num_kv_heads") or d["num_attention_heads"]),
        ffn_hidden_size=int(d["ffn_hidden_size"]),
        vocab_size=int(d["vocab_size"]),
        gated_mlp=bool(d.get("gated_mlp", True)),
        max_position_embeddings=d.get("max_position_embeddings"),
        seq_length=d.get("seq_length"),
        tied_embeddings=bool(d.get("tied_embeddings", False)),
        head_dim=d.get("head_dim"),
        activation=d.get("activation", "silu"),
        norm=d.get("norm", "rmsnorm"),
        position_embedding=d.get("position_embedding", "rope"),
        learned_position_embeddings=bool(d.get("learned_position_embeddings", False)),
        attention_bias=d.get("attention_bias", "none"),
        mlp_bias=bool(d.get("mlp_bias", False)),
        parallel_residual=bool(d.get("parallel_residual", False)),
        num_experts=d.get("num_experts"),
        moe_top_k=d.get("moe_top_k"),
        moe_ffn_hidden_size=d.get("moe_ffn_hidden_size"),
        num_shared_experts=int(d.get("num_shared_experts") or 0),
        first_dense_layers=int(d.get("first_dense_layers") or 0),
        router_bias=bool(d.get("router_bias", False)),
        mla=MLAConfig(**mla) if mla else None,
        family=d.get("family"),
        hf_repo=d.get("hf_repo"),
        published_params=opt_float(d.get("published_params")),
        published_active_params=opt_float(d.get("published_active_params")),
        published_params_source=d.get("published_params_source"),
        source=d.get("source"),
        aliases=tuple(d.get("aliases", ())),
        notes=tuple(d.get("notes", ())),
    )


@lru_cache(maxsize=1)
def _presets() -> dict[str, ModelPreset]:
    raw = read_package_json("models.json")["presets"]
    return {pid: model_preset_from_dict(pid, entry) for pid, entry in raw.items()}


def load_model_presets() -> dict[str, ModelPreset]:
    """The shipped model presets by id (a fresh dict: callers may add entries)."""
    return dict(_presets())



# --------------------------------------------------------------------------- name lookup

# Fine-tuned variants published beside a base model keep its config.json shape (same layers, widths,
# heads, vocabulary): "meta-llama/Llama-2-7b-chat-hf", "Qwen/Qwen2.5-7B-Instruct" are their base's preset.
_TUNED_SUFFIXES = ("-instruct", "-chat", "-hf", "-base", "-it")


def find_model_preset(name: str, presets: Mapping[str, ModelPreset] | None = None) -> ModelPreset:
    """Resolve "llama2-7b", "Llama-2-7b", "meta-llama/Llama-2-7b-hf" ... to a preset; an instruct / chat
    variant of a preset's model (``-Instruct``, ``-chat-hf``, ``-it``) resolves to that preset."""
    table = presets if presets is not None else _presets()
    try:
        return table[lookup_name(name, table, "model preset", {})]
    except CatalogError:
        base = name.strip()
        while True:
            suffix = next((x for x in _TUNED_SUFFIXES if base.lower().endswith(x)), None)
            if suffix is None:
                raise
            base = base[: -len(suffix)]
            try:
                return table[lookup_name(base, table, "model preset", {})]
            except CatalogError:
                continue


def preset_or_cached(name: str, presets: Mapping[str, ModelPreset] | None = None) -> tuple[ModelPreset, Path | None]:
    """The preset ``name`` resolves to, else the model the local Hugging Face cache holds for the Hub id
    ``name`` (its config.json, never downloaded) with that file's path; CatalogError when neither knows it
    (the message says the cache was looked in when ``name`` is an ``org/name`` id)."""
    from trainlint.presets.hf_cache import cached_file, is_repo_id

    try:
        return find_model_preset(name, presets), None
    except CatalogError as exc:
        cached = cached_file(name) if is_repo_id(name) else None
        if cached is None:
            if is_repo_id(name) and "/" in name:
                raise CatalogError(f"{exc} (nor is {name} in the local Hugging Face cache)") from None
            raise
        return read_hf_config(cached), cached


# --------------------------------------------------------------------------- HF config.json

# HF default of tie_word_embeddings per model_type when the key is absent (the *Config class
# defaults in transformers; PretrainedConfig itself defaults to True).
_TIED_DEFAULT = {"gpt2": True, "gpt_neox": False, "llama": False, "mistral": False,
                 "mixtral": False, "qwen2": False, "qwen2_moe": False, "deepseek_v3": False,
                 "deepseek_v2": False}
_GATED_ACTS = {"silu", "swiglu", "swish"}


# Architectures whose config has no FFN size: the MLP is 4 x hidden (BloomMLP, FalconMLP, GPTBigCodeMLP
# with n_inner None, in transformers/models/<type>/modeling_<type>.py).
_FFN_4H = {"bloom", "falcon", "gpt_bigcode", "RefinedWeb", "RefinedWebModel"}


def _ffn_size(cfg: Mapping[str, Any], path: str, model_type: str, hidden: int) -> int:
    for key in ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim"):
        if cfg.get(key) is not None:
            return _require(cfg, path, key)
    if model_type in {t.lower() for t in _FFN_4H}:
        return 4 * hidden
    return _require(cfg, path, "intermediate_size")


def _require(cfg: Mapping[str, Any], path: str, *keys: str) -> int:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                raise CatalogError(f"{path}: `{key}` must be an integer, got {value!r}")
            return value
    raise CatalogError(f"{path}: missing `{keys[0]}` (needed to describe the model)")


MAX_HF_CONFIG_BYTES = 4 * 1024 * 1024
"""A Hugging Face config.json is a few KB; a larger file (or /dev/zero) is not read."""


def _load_config_file(path: str | Path) -> tuple[Path, dict[str, Any]]:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    from trainlint.files.sources import read_bounded

    try:
        text = read_bounded(p, MAX_HF_CONFIG_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"cannot read Hugging Face config {str(p)!r}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(cfg, dict):
        raise CatalogError(f"{p}: expected a JSON object")
    # Multimodal wrappers keep the language model under text_config.
    if "text_config" in cfg and isinstance(cfg["text_config"], dict) and "hidden_size" not in cfg:
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get("model_type", cfg.get("model_type"))}
    return p, cfg


def read_hf_config(path: str | Path) -> ModelPreset:
    """A ModelPreset from a LOCAL Hugging Face ``config.json`` (file or model directory).

    Understands the llama / mistral / mixtral / qwen2 / gpt_neox / gpt2 / deepseek_v3 field
    names. Never downloads: a hub id that is not a local path raises CatalogError.
    """
    p, cfg = _load_config_file(path)
    where = str(p)
    model_type = str(cfg.get("model_type", "")).lower()
    act = str(cfg.get("hidden_act", cfg.get("activation_function", "gelu"))).lower()

    if model_type == "gpt2" or ("n_embd" in cfg and "hidden_size" not in cfg):
        h = _require(cfg, where, "n_embd")
        heads = _require(cfg, where, "n_head")
        n_pos = cfg.get("n_positions") or cfg.get("n_ctx")
        return ModelPreset(
            id=f"hf:{p.parent.name or p.stem}", name=cfg.get("_name_or_path") or p.parent.name or "gpt2",
            num_layers=_require(cfg, where, "n_layer"), hidden_size=h, num_attention_heads=heads,
            num_kv_heads=heads, ffn_hidden_size=cfg.get("n_inner") or 4 * h,
            vocab_size=_require(cfg, where, "vocab_size"), gated_mlp=False,
            max_position_embeddings=n_pos, seq_length=n_pos,
            tied_embeddings=bool(cfg.get("tie_word_embeddings", True)), activation=act,
            norm="layernorm", position_embedding="learned", learned_position_embeddings=True,
            attention_bias="all", mlp_bias=True, family="gpt2", source=f"local HF config {where}",
        )

    h = _require(cfg, where, "hidden_size", "d_model", "n_embd")
    heads = _require(cfg, where, "num_attention_heads", "n_head")
    # KV heads: GQA (num_key_value_heads; Falcon-40B's num_kv_heads / n_head_kv), or one shared KV head
    # with multi_query (Falcon-7B, StarCoder: FalconConfig / GPTBigCodeConfig multi_query)
    kv = cfg.get("num_key_value_heads") or cfg.get("num_kv_heads") or cfg.get("n_head_kv") \
        or (1 if cfg.get("multi_query") else heads)
    num_experts = cfg.get("num_local_experts") or cfg.get("n_routed_experts") or cfg.get("num_experts")
    gated = act in _GATED_ACTS or bool(cfg.get("gated_mlp"))
    is_neox = model_type == "gpt_neox"
    mla = None
    if cfg.get("kv_lora_rank"):
        mla = MLAConfig(
            q_lora_rank=cfg.get("q_lora_rank"), kv_lora_rank=int(cfg["kv_lora_rank"]),
            qk_nope_head_dim=int(cfg.get("qk_nope_head_dim", 128)),
            qk_rope_head_dim=int(cfg.get("qk_rope_head_dim", 64)), v_head_dim=int(cfg.get("v_head_dim", 128)),
        )
    if is_neox:
        attention_bias = "all"
    elif model_type.startswith("qwen2"):
        attention_bias = "qkv"  # Qwen2 always has q/k/v biases and no o_proj bias
    else:
        attention_bias = "all" if cfg.get("attention_bias") else "none"
    head_dim = cfg.get("head_dim")
    if head_dim is not None and head_dim * heads == h:
        head_dim = None  # redundant: keep the default so counts do not depend on it
    tied = cfg.get("tie_word_embeddings")
    if tied is None:
        tied = _TIED_DEFAULT.get(model_type, True)
    max_pos = cfg.get("max_position_embeddings")
    uses_layernorm = is_neox or ("layer_norm_eps" in cfg and "rms_norm_eps" not in cfg)
    norm = "layernorm" if uses_layernorm else "rmsnorm"
    # every model_type we know besides gpt2 (handled above) uses rotary embeddings
    rotary = is_neox or model_type in _TIED_DEFAULT or "rope_theta" in cfg or "rotary_emb_base" in cfg
    position = "rope" if rotary else "unknown"
    return ModelPreset(
        id=f"hf:{p.parent.name or p.stem}",
        name=cfg.get("_name_or_path") or p.parent.name or model_type or "hf-model",
        num_layers=_require(cfg, where, "num_hidden_layers", "n_layer", "num_layers"),
        hidden_size=h, num_attention_heads=heads, num_kv_heads=int(kv),
        ffn_hidden_size=_ffn_size(cfg, where, model_type, h),
        vocab_size=_require(cfg, where, "vocab_size"), gated_mlp=gated,
        max_position_embeddings=max_pos, seq_length=max_pos, tied_embeddings=bool(tied),
        head_dim=head_dim, activation=act,
        norm=norm, position_embedding=position,
        attention_bias=attention_bias, mlp_bias=bool(cfg.get("mlp_bias", is_neox)),
        parallel_residual=bool(cfg.get("use_parallel_residual", False)),
        num_experts=num_experts, moe_top_k=cfg.get("num_experts_per_tok") if num_experts else None,
        moe_ffn_hidden_size=(cfg.get("moe_intermediate_size") or cfg.get("intermediate_size")) if num_experts else None,
        num_shared_experts=int(cfg.get("n_shared_experts") or 0),
        gated_activation="unfused" if gated else None,
        first_dense_layers=int(cfg.get("first_k_dense_replace") or 0),
        router_bias=model_type == "deepseek_v3", mla=mla, family=model_type or None,
        source=f"local HF config {where}",
    )


def describe_param_error(m: ModelPreset) -> str:
    """"computed vs published" in one line, for reports and test failures."""
    c = count_parameters(m)
    if not m.published_params:
        return f"{m.id}: computed {c.total:,} (no published count)"
    err = (c.total - m.published_params) / m.published_params
    return f"{m.id}: published {m.published_params:,.0f}, computed {c.total:,} ({err:+.2%})"


# --------------------------------------------------------------------------- a spec's model from a preset
# (the estimate context fills --model / the project's `model` this way; the HF Trainer adapter fills
# --model_name_or_path while reading)

_PRESET_FIELDS = {
    "num_layers": "num_layers",
    "hidden_size": "hidden_size",
    "num_attention_heads": "num_attention_heads",
    "num_kv_heads": "num_kv_heads",
    "ffn_hidden_size": "ffn_hidden_size",
    "gated_mlp": "gated_mlp",
    "vocab_size": "vocab_size",
    "max_position_embeddings": "max_position_embeddings",
    "tied_embeddings": "tied_embeddings",
    "num_experts": "num_experts",
    "moe_top_k": "moe_top_k",
    "moe_ffn_hidden_size": "moe_ffn_hidden_size",
    "kv_channels": "head_dim",
    "seq_length": "seq_length",
}


def _foreign_attention(spec: TrainingSpec, preset: ModelPreset) -> set[str]:
    """Attention fields the preset must not fill because the config already implies another shape:
    its own head count or hidden size differs from the preset's (the preset's KV heads and head
    dimension belong to other heads), or it states MLA / GQA (Megatron --multi-latent-attention,
    --group-query-attention), whose KV heads the config defines."""
    heads, hidden = spec.model.num_attention_heads, spec.model.hidden_size
    differs = (heads is not None and heads.value is not None and heads.value != preset.num_attention_heads) or \
        (hidden is not None and hidden.value is not None and hidden.value != preset.hidden_size)
    shaped = any(_on(value) for value in (spec.model.latent_attention, spec.model.grouped_query_attention))
    return {"num_kv_heads", "kv_channels"} if differs or shaped else set()


def _on(setting: Value | None) -> bool:
    value = getattr(setting, "value", setting)
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))


def fill_model(spec: TrainingSpec, model: Value | None) -> TrainingSpec:
    """A copy of ``spec`` whose missing model fields come from ``model`` (a Value[ModelPreset]).

    Only missing fields are filled: what the config says wins. Each filled field keeps the
    model's origin (CLI for ``--model``, project-config, or ASSUMED) and names the preset.
    """
    if model is None:
        return spec
    preset: ModelPreset = model.value
    out = copy.copy(spec)
    out.model = copy.copy(spec.model)
    origin = model.provenance.origin
    foreign = _foreign_attention(spec, preset)
    for field_name, attr in _PRESET_FIELDS.items():
        if getattr(out.model, field_name) is not None or field_name in foreign:
            continue
        value = getattr(preset, attr)
        if value is None:
            continue
        note = f"{attr} of {model.provenance.note}"
        if field_name == "seq_length":
            note += " (its pre-training context; set the run's sequence length in the config to change)"
        setattr(out.model, field_name, Value(value, Provenance(origin, path=model.provenance.path,
                                                               key=model.provenance.key, note=note)))
    if out.model.param_count is None:
        out.model.param_count = Value(preset.params().total, Provenance(origin, note=f"parameters counted from {model.provenance.note}"))
    if preset.gated_activation and preset.gated_mlp and spec.memory.gated_activation is None:
        # the run's own framework did not say how it computes the activation (a DeepSpeed JSON or an HF Trainer run,
        # whose model is the one this config.json builds): the preset's modeling code does
        out.memory = copy.copy(spec.memory)
        out.memory.gated_activation = Value(preset.gated_activation, Provenance(
            origin, path=model.provenance.path, key=model.provenance.key,
            note=f"the gated activation of the modeling code of {model.provenance.note}"))
    return out
