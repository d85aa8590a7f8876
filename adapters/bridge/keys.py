"""Where a ConfigContainer field lands in Megatron-LM's argument names (facts from Megatron-Bridge's
``src/megatron/bridge/training/config.py`` and Megatron-Core's ``TransformerConfig`` /
``ModelParallelConfig`` / ``DistributedDataParallelConfig`` / ``OptimizerConfig`` field names).

Most of Bridge's model fields *are* Megatron-Core's, which Megatron-LM's arguments copy by name; the
few that differ are spelled out here (``num_moe_experts`` is ``--num-experts``; a virtual pipeline size is
``--num-virtual-stages-per-pipeline-rank``; ``share_embeddings_and_output_weights`` is the inverse of
``--untie-embeddings-and-output-weights``; ``gated_linear_unit`` is ``--swiglu``'s gate).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable


def _same(value: Any) -> Any:
    return value


def _negate(value: Any) -> Any:
    return (not value) if isinstance(value, bool) else None


def _dtype_name(value: Any) -> Any:
    """``torch.bfloat16`` (a dtype dumped by ``to_yaml`` as ``{_target_: torch.bfloat16, _call_: false}``,
    read here as its target string) -> ``bf16``; other values unchanged."""
    names = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32", "bfloat16": "bf16",
             "float16": "fp16", "float32": "fp32"}
    return names.get(value, value) if isinstance(value, str) else value


@dataclass(frozen=True)
class KeyMap:
    path: str
    """The ConfigContainer field, dotted (``model.tensor_model_parallel_size``)."""
    dest: str
    """Megatron-LM's argparse dest that means the same thing."""
    convert: Callable[[Any], Any] = _same
    listed_by_type: bool = False
    """The value is a list when Megatron-LM's argument is one (``--cp-comm-type p2p`` is ``['p2p']``): the
    spec builder asks the Megatron framework's key catalog for the argument's type (it is given the
    catalog: this table is the format's, not a reader of Megatron's schema)."""


_SAME_MODEL = (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size", "expert_model_parallel_size",
    "expert_tensor_parallel_size", "sequence_parallel", "num_layers", "hidden_size", "num_attention_heads",
    "ffn_hidden_size", "kv_channels", "num_query_groups", "seq_length", "max_position_embeddings", "hidden_dropout",
    "moe_router_topk", "moe_ffn_hidden_size", "moe_layer_freq", "bf16", "fp16", "fp8", "fp8_param_gather",
    "recompute_granularity", "recompute_method", "recompute_num_layers", "distribute_saved_activations",
    "transformer_impl", "attention_backend", "tp_comm_overlap", "overlap_p2p_comm", "make_vocab_size_divisible_by",
    "vocab_size", "pipeline_model_parallel_layout", "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
    "microbatch_group_size_per_vp_stage", "hybrid_override_pattern", "multi_latent_attention", "moe_token_dispatcher_type",
    "moe_grouped_gemm", "moe_router_load_balancing_type", "moe_aux_loss_coeff", "calculate_per_token_loss",
    "cross_entropy_loss_fusion", "gradient_accumulation_fusion", "deterministic_mode", "cp_comm_type",
    "hierarchical_context_parallel_sizes", "mtp_num_layers", "cuda_graph_impl",
    "normalization", "position_embedding_type", "add_bias_linear", "apply_query_key_layer_scaling",
    "attention_dropout", "overlap_moe_expert_parallel_comm", "fine_grained_activation_offloading",
)

_HAND: tuple[KeyMap, ...] = (
    *(KeyMap(f"model.{name}", name) for name in _SAME_MODEL),
    KeyMap("model.virtual_pipeline_model_parallel_size", "num_virtual_stages_per_pipeline_rank"),
    KeyMap("model.num_moe_experts", "num_experts"),
    KeyMap("model.gated_linear_unit", "swiglu"),
    KeyMap("model.share_embeddings_and_output_weights", "untie_embeddings_and_output_weights", _negate),
    KeyMap("model.params_dtype", "params_dtype", _dtype_name),
    KeyMap("train.micro_batch_size", "micro_batch_size"),
    KeyMap("train.global_batch_size", "global_batch_size"),
    KeyMap("train.rampup_batch_size", "rampup_batch_size"),
    KeyMap("train.train_iters", "train_iters"),
    KeyMap("train.train_samples", "train_samples"),
    KeyMap("optimizer.optimizer", "optimizer"),
    KeyMap("optimizer.use_distributed_optimizer", "use_distributed_optimizer"),
    KeyMap("optimizer.main_grads_dtype", "main_grads_dtype", _dtype_name),
    KeyMap("optimizer.use_precision_aware_optimizer", "use_precision_aware_optimizer"),
    KeyMap("optimizer.lr", "lr"),
    KeyMap("ddp.use_distributed_optimizer", "use_distributed_optimizer"),
    KeyMap("ddp.overlap_grad_reduce", "overlap_grad_reduce"),
    KeyMap("ddp.overlap_param_gather", "overlap_param_gather"),
    KeyMap("ddp.use_megatron_fsdp", "use_megatron_fsdp"),
    KeyMap("ddp.data_parallel_sharding_strategy", "data_parallel_sharding_strategy"),
    KeyMap("ddp.grad_reduce_in_fp32", "grad_reduce_in_bf16", _negate),
    KeyMap("dist.use_megatron_fsdp", "use_megatron_fsdp"),
    KeyMap("dist.use_torch_fsdp2", "use_torch_fsdp2"),
    KeyMap("checkpoint.load", "load"),
    KeyMap("checkpoint.pretrained_checkpoint", "pretrained_checkpoint"),
    KeyMap("checkpoint.load_optim", "no_load_optim", _negate),
    KeyMap("tokenizer.tokenizer_type", "tokenizer_type"),
    KeyMap("tokenizer.vocab_size", "vocab_size"),
    KeyMap("tokenizer.tokenizer_model", "tokenizer_model"),
    # CommOverlapConfig applies its own value to the model's field (training/comm_overlap.py)
    KeyMap("comm_overlap.overlap_moe_expert_parallel_comm", "overlap_moe_expert_parallel_comm"),
)
"""The fields trainlint has always read (hand-listed, checked against the sources named above), then
:data:`CORE_KEYS`."""


def as_list(value: Any) -> Any:
    """A list-valued Megatron-LM argument (``--cp-comm-type p2p`` is ``['p2p']``) written as one value."""
    return value if isinstance(value, list) or value is None else [value]


def _core_keys() -> tuple[KeyMap, ...]:
    """Every other Megatron-Core config field a ConfigContainer writes that has a Megatron-LM argument
    (``core_fields.json``, built by ``scripts/build_bridge_fields.py`` from Megatron-Core's
    ``TransformerConfig`` / ``MLATransformerConfig`` / ``ModelParallelConfig`` (``model``),
    ``OptimizerConfig`` (``optimizer``) and ``DistributedDataParallelConfig`` (``ddp``) at the Megatron-LM
    commit Bridge pins): by the same name, or by the argument Megatron-LM fills the field from (the
    ``renamed`` table: ``model.num_layers_in_first_pipeline_stage`` is ``--decoder-first-pipeline-num-layers``,
    ``ddp.num_buckets`` is ``--ddp-num-buckets``, ``model.persist_layer_norm`` the inverse of
    ``--no-persist-layer-norm`` ...)."""
    import json
    from importlib import resources

    try:
        data = json.loads(resources.files("trainlint.adapters.bridge").joinpath("core_fields.json")
                          .read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    hand = {k.path for k in _HAND}
    out: list[KeyMap] = []

    def key_for(path: str, dest: str, how: str) -> KeyMap:
        if how == "negate":
            return KeyMap(path, dest, _negate)
        if path.endswith("_dtype"):
            return KeyMap(path, dest, _dtype_name)
        return KeyMap(path, dest, _same, listed_by_type=True)

    for section, names in data.get("same", {}).items():
        for name in names:
            path = f"{section}.{name}"
            if path not in hand:
                out.append(key_for(path, name, "same"))
    for path, (dest, how) in data.get("renamed", {}).items():
        if path not in hand:
            out.append(key_for(path, dest, how))
    return tuple(out)


CORE_KEYS: tuple[KeyMap, ...] = _core_keys()
KEYS = _HAND + CORE_KEYS
"""In order: where two Bridge fields name one dest (``ddp.use_distributed_optimizer`` and
``optimizer.use_distributed_optimizer``), a true one wins (Bridge's
``_validate_and_sync_distributed_optimizer_settings`` turns both on when either is)."""

EITHER_TRUE = frozenset({"use_distributed_optimizer", "use_megatron_fsdp", "overlap_moe_expert_parallel_comm"})
"""Dests that two Bridge fields feed and that are on when either is (config.py syncs them)."""



@lru_cache(maxsize=1)
def _fields_by_dest() -> dict[str, str]:
    out: dict[str, str] = {}
    for key in KEYS:
        out.setdefault(key.dest, key.path)  # the hand-written mapping first: the field a user writes
    return out


def field_of(dest: str) -> str | None:
    """The ConfigContainer field (dotted) that holds Megatron-LM's argument ``dest``, or None."""
    return _fields_by_dest().get(dest)
