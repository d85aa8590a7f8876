"""From (spec, context) to the plain numbers the formulas use, or the list of what is missing.

Every number used is recorded with its provenance; anything not written in the config (a
framework default, a value derived from others, a CLI flag, a project-config key, or
trainlint's own assumption) is listed in the estimate's assumptions. Required values that
nothing gives are returned as :class:`MissingInput` items saying how to supply them.
"""

from __future__ import annotations

from trainlint.core.numbers import short

import operator
from dataclasses import dataclass, field, replace
from typing import Any

from trainlint.presets.catalog import GPU
from trainlint.estimator.context import EstimateContext
from trainlint.core.framework import data_parallel_size
from trainlint.core.provenance import Origin, Provenance, Value, first_span
from trainlint.core.spec import MEGATRON_LEGACY, TrainingSpec

MODEL_HOW = "give --model PRESET (e.g. --model llama2-7b) or --model path/to/config.json, or `model = ...` in [tool.trainlint]"


@dataclass(frozen=True)
class MissingInput:
    """An input the estimate needs that nothing gives: the field, what it is, and how to give it."""

    field: str
    what: str
    how: str

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "what": self.what, "how": self.how}


@dataclass(frozen=True)
class Assumption:
    """A value the estimate used that the config does not state: the field, the value, its origin and source."""

    field: str
    value: Any
    origin: str
    source: str

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if not isinstance(value, (str, int, float, bool)) and value is not None:
            value = str(value)
        return {"field": self.field, "value": value, "origin": self.origin, "source": self.source}


@dataclass
class Inputs:
    """Everything the formulas read, as plain values."""

    gpu: GPU
    gpus_per_node: int
    # model
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    gated: bool
    vocab: int
    seq: int
    tied: bool
    experts: int
    top_k: int
    moe_ffn: int
    # parallel
    tp: int
    pp: int
    vpp: int
    cp: int
    ep: int
    etp: int
    dp: int
    world: int
    sp: bool
    zero: int
    """The ZeRO stage the config writes (descriptive: the engine fields below are what the formulas read)."""
    dist_opt: bool
    """Megatron's --use-distributed-optimizer as written (descriptive)."""
    offload_opt: str
    offload_params: str
    # engine (spec.engine): who owns the optimizer and how it shards
    owner: str
    """megatron | deepspeed | deepspeed-zero | deepspeed-bf16"""
    shard_stage: int
    """0 nothing sharded, 1 master weights + optimizer states, 2 + gradients, 3 + parameters"""
    shard_cp: bool
    """the shard group spans data x context parallel ranks (else data parallel only)"""
    grad_bytes: float
    """bytes per element of the gradient buffer accumulated and reduced over DP"""
    moe_interval: int
    """every k-th layer is a MoE layer"""
    # batch
    micro: int
    grad_accum: int
    global_batch: int
    # precision
    dtype: str
    fp8: bool
    optimizer: str
    # memory
    recompute: str
    recompute_method: str
    recompute_layers: int
    flash: bool
    partition_activations: bool
    # framework knobs
    reduce_bucket: float
    allgather_bucket: float
    max_live_params: float
    prefetch_bucket: float
    overlap_dp: bool
    overlap_tp: bool
    assumptions: list[Assumption] = field(default_factory=list)
    vocab_tokens: int = 0
    """The tokenizer's size before the framework's padding (0: ``vocab`` is not padded by TP)."""
    vocab_multiple: int = 1
    """``vocab`` = vocab_tokens rounded up to a multiple of vocab_multiple x TP (when vocab_tokens)."""
    fp8_params: bool = False
    """FP8 primary weights (Megatron --fp8-param-gather): no 16-bit weight beside TE's FP8 copy."""
    overlap_p2p: bool = True
    """Interleaved-pipeline sends and receives overlap compute (engine.p2p_overlap)."""
    cpu_checkpointing: bool = False
    """DeepSpeed activation checkpointing's ``cpu_checkpointing`` (Megatron-DeepSpeed --checkpoint-in-cpu,
    NeoX checkpoint_in_cpu): the checkpointed layer inputs live in host memory between the passes."""
    logits_in_place: bool = False
    """The loss writes its gradient into the 16-bit logits (Transformer Engine's fused cross entropy): no fp32
    copy of them (memory.cross_entropy)."""
    cpu_offload_layers: int = 0
    """Layers whose saved activations Megatron-Core / Transformer Engine offload to host memory between the
    passes (``--cpu-offloading-num-layers``); 0: none."""
    recompute_modules: tuple[str, ...] = ("core_attn",)
    """What selective recompute runs again (memory.recompute_modules; Megatron-Core's default core_attn)."""
    expandable_segments: bool = False
    """PyTorch's caching allocator runs with ``expandable_segments:True`` (engine.cuda_alloc_conf)."""
    overlap_ep: bool = False
    """The expert all-to-all overlaps another micro-batch's compute (engine.ep_overlap)."""
    moe_probs_on_output: bool = False
    """The router's weights multiply the experts' outputs, which are kept for their gradient (engine.moe_probs_on_output)."""
    moe_unfused_permute: bool = False
    """The token dispatcher permutes by gather / scatter over zero-filled copies (engine.moe_unfused_permute)."""
    moe_dispatcher: str = "allgather"
    """The MoE token dispatcher (engine.moe_dispatcher): allgather, alltoall, flex or flex-fused."""
    moe_shared_ffn: int = 0
    """FFN width of the shared experts of a MoE layer (model.moe_shared_expert_ffn); 0: none."""
    moe_layers: int = 0
    """MoE layers of the model where the config lists them (engine.moe_layer_pattern); 0: every
    ``moe_interval``-th layer."""
    mla_q_rank: int = 0
    """Multi-latent attention (model.latent_dims; all five 0 without MLA): the query's compressed rank (0: the
    query is projected from the hidden state directly)."""
    mla_kv_rank: int = 0
    """MLA: the compressed key/value rank (the latent the keys and values are up-projected from)."""
    mla_qk_head: int = 0
    """MLA: a query/key head's part without rotary position."""
    mla_rope_head: int = 0
    """MLA: a query/key head's rotary part (the key's is shared by the heads and projected with the latent)."""
    mla_v_head: int = 0
    """MLA: a value head's size."""
    cp_all_to_all: bool = False
    """The context-parallel group exchanges by all-to-all (DeepSpeed-Ulysses), not by ring (engine.sequence_exchange)."""
    stage_split: tuple[int, ...] = ()
    """Decoder layers per pipeline rank where the config splits them unevenly (``parallel.stage_layers``:
    a layout, first/last-stage layer counts, embedding/loss counted in the split); () = even. Valid for
    ``split_layout`` = (PP, VPP) only: a layout search changing either splits evenly."""
    split_layout: tuple[int, int] = (0, 0)
    gated_unfused: bool = False
    """The gated MLP's activation runs as separate ops (memory.gated_activation ``unfused``): its output is kept
    beside its input (memory.layer_activation_bytes)."""
    residual_dropout: bool = True
    """Dropout on the residual branches and the embedding keeps a mask (and the embedding an output
    copy); False when the config sets ``hidden_dropout`` to 0, where torch's dropout is the identity."""
    flash_triton: bool = False
    """The fused attention is the Triton kernel of flash-attn 1.x (engine.attention ``flash-triton``), not
    FlashAttention-2's CUDA kernels or cuDNN's (:func:`performance.attention_efficiency`)."""

    def repadded(self, tp: int) -> int:
        """The embedding rows with tensor-parallel size ``tp`` (a layout search changing TP)."""
        if not self.vocab_tokens:
            return self.vocab
        multiple = self.vocab_multiple * tp
        return -(-self.vocab_tokens // multiple) * multiple

    @property
    def mla(self) -> bool:
        return self.mla_kv_rank > 0

    @property
    def q_dim(self) -> int:
        """Width of the queries (MLA: heads x (nope + rotary) head size)."""
        if self.mla:
            return self.heads * (self.mla_qk_head + self.mla_rope_head)
        return self.heads * self.head_dim

    @property
    def o_dim(self) -> int:
        """Width of the attention output, the output projection's input (MLA: heads x v head size)."""
        return self.heads * self.mla_v_head if self.mla else self.q_dim

    @property
    def kv_dim(self) -> int:
        """Width of the keys and of the values, each (MLA: their mean, heads x (qk + rotary + v) / 2, so that
        K and V together are 2 x kv_dim)."""
        if self.mla:
            return self.heads * (self.mla_qk_head + self.mla_rope_head + self.mla_v_head) // 2
        return self.kv_heads * self.head_dim

    @property
    def moe(self) -> bool:
        return self.experts > 1

    @property
    def moe_fraction(self) -> float:
        """Share of the layers that are MoE layers (Megatron-DeepSpeed: layer numbers divisible by
        the expert interval; Megatron-LM --moe-layer-freq k likewise)."""
        if not self.moe:
            return 0.0
        if self.moe_layers and self.layers:
            return min(self.moe_layers, self.layers) / self.layers
        return (self.layers // max(1, self.moe_interval)) / self.layers if self.layers else 1.0

    @property
    def act_bytes(self) -> int:
        return 4 if self.dtype == "fp32" else 2

    @property
    def nodes(self) -> int:
        return max(1, -(-self.world // self.gpus_per_node))


def _recompute_modules(r: _Reader, spec: TrainingSpec) -> tuple[str, ...]:
    """The modules selective recompute runs again: as written, or Megatron-Core's default core_attn."""
    entry = spec.memory.recompute_modules
    if entry is None:
        return ("core_attn",)
    value = entry.value
    names = value.split() if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        return ("core_attn",)
    r.note("memory.recompute_modules", entry)
    return tuple(dict.fromkeys(names))


def _stage_split(r: _Reader, spec: TrainingSpec, layers: int, pp: int, vpp: int) -> tuple[int, ...]:
    """Decoder layers per pipeline rank from ``parallel.stage_layers``, or () for an even split: also when
    the stated split does not hold the model's layers over PP ranks of VPP chunks (Megatron refuses it)."""
    entry = spec.parallel.stage_layers
    if entry is None or pp <= 1 or not isinstance(entry.value, list):
        return ()
    rows = entry.value
    if len(rows) != pp or not all(isinstance(c, list) and len(c) == vpp and all(type(n) is int and n >= 0 for n in c)
                                  for c in rows):
        return ()
    split = tuple(sum(c) for c in rows)
    if sum(split) != layers:
        return ()
    r.note("parallel.stage_layers", entry)
    return split


MAX_COUNT = 10**12
"""Sizes and counts above this are not a real run (and would overflow float arithmetic)."""
ZERO_ALLOWED = frozenset({"parallel.zero_stage", "memory.recompute_num_layers", "model.num_experts",
                          "memory.cpu_offload_layers"})
"""Integer inputs where 0 is meaningful; every other integer input must be at least 1."""


def _count(r: _Reader, name: str, entry: Value) -> int | None:
    """A positive whole count from a spec value, or None (recorded as missing) when unusable."""
    try:
        value = int(entry.value)
    except (TypeError, ValueError, OverflowError):
        value = 0
    if not 1 <= value <= MAX_COUNT:
        r.missing.append(MissingInput(name, f"{name} has an unusable value {short(repr(entry.value))}", "fix it in the config"))
        return None
    return value


_SPLIT: dict[str, tuple[str, str]] = {}
"""A dotted field name (``parallel.tensor``) as (section, field), split once."""


class _Reader:
    """Reads spec fields, falling back to defaults, recording provenance and what is missing."""

    def __init__(self, spec: TrainingSpec) -> None:
        self.spec = spec
        self.assumptions: list[Assumption] = []
        self.missing: list[MissingInput] = []
        self.stale_batch = False

    def note(self, name: str, entry: Value) -> None:
        prov = entry.provenance
        if prov.origin is not Origin.FILE:
            # _value_: the member's value (what .value gives, without the enum descriptor's cost)
            self.assumptions.append(Assumption(name, entry.value, prov.origin._value_, _source(prov)))

    def get(self, name: str, *, fallback: Any = None, why: str = "", missing: tuple[str, str] | None = None,
            cast: Any = None) -> Any:
        split = _SPLIT.get(name)
        if split is None:  # the estimator's own field names: a few dozen
            section, _, field_name = name.partition(".")
            split = _SPLIT[name] = (section, field_name)
        entry = getattr(getattr(self.spec, split[0]), split[1])  # spec.get(name), without splitting the name each time
        if entry is not None and entry.value is not None:
            try:
                value = cast(entry.value) if cast else entry.value
            except (TypeError, ValueError, OverflowError):
                value = None
            if value is None or (cast is int and not 1 <= value <= MAX_COUNT and name not in ZERO_ALLOWED) \
                    or (cast is int and name in ZERO_ALLOWED and not 0 <= value <= MAX_COUNT):
                self.missing.append(MissingInput(name, f"{name} has an unusable value {short(repr(entry.value))}",
                                                 "fix it in the config"))
                return fallback
            self.note(name, entry)
            return value
        if missing is not None:
            self.missing.append(MissingInput(name, missing[0], missing[1]))
            return fallback
        if fallback is not None and why:
            self.assumptions.append(Assumption(name, fallback, _ASSUMED, why))
        return fallback


_ASSUMED = Origin.ASSUMED.value


def _guessed_world(entry: Value) -> str:
    """Where a world size the script states as a guess comes from: the place of the guess (the
    nodes from ${SLURM_NNODES:-1}), not of the GPUs per node beside it."""
    guess = next((p for p in entry.provenance.inputs if p.uncertain and p.span is not None), entry.provenance)
    at = f" at {guess.path}:{guess.span.line}" if guess.path and guess.span else ""
    return (f"the world size the script gives{at} when the branch or scheduler variable it depends on does not "
            "decide it (unknown until launch); the memory, speed and communication rules do not judge an assumed "
            "world size (--nodes N, or `nodes` in [tool.trainlint])")


def _cluster_override(ctx: EstimateContext) -> bool:
    """The cluster size comes from outside the file (a trainlint flag or the project config), which
    wins over a launcher's world size written in the file."""
    if ctx.nodes is None:
        return False
    outside = (Origin.CLI, Origin.PROJECT_CONFIG)
    return ctx.nodes.provenance.origin in outside or ctx.gpus_per_node.provenance.origin in outside


def _source(prov: Provenance) -> str:
    """Where a non-file value came from, without repeating its origin."""
    if prov.origin is Origin.PROJECT_CONFIG and prov.path:
        return f"{prov.path}: {prov.note}" if prov.note else prov.path
    return prov.note or prov.describe()


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


def _norm_mode(value: Any) -> str:
    text = str(value).lower() if value is not None else "none"
    if text in ("full", "uniform", "block", "true"):
        return "full"
    if text in ("selective", "core_attn", "attention"):
        return "selective"
    return "none"


def _model_how(spec: TrainingSpec) -> str:
    """How to give the model's shape; naming the model the config points at when trainlint could not read it."""
    named = spec.model.named
    if named is None or not named.value:
        return MODEL_HOW
    return (f"the config names model `{named.value}`, which is neither a trainlint preset nor in the local Hugging "
            f"Face cache: give --model path/to/its/config.json (or a preset), or `model = ...` in [tool.trainlint]")


@dataclass(frozen=True)
class _ModelPart:
    """What resolve() reads from the model section: the sizes (placeholders when some are
    missing), and the assumptions and missing inputs that reading adds, in resolve's order."""

    values: tuple
    assumptions: tuple[Assumption, ...]
    missing: tuple[MissingInput, ...]


class _Kept:
    """The last few results of a pure function of a spec section, keyed by the section's values
    (:func:`_section_key`): found by the values and their types, then compared whole, provenance
    included; never by identity or by path alone."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.entries: dict[tuple, tuple[tuple, Any]] = {}
        self.last: tuple[type, tuple, tuple, tuple[tuple, Any]] | None = None
        """The section type, its Values, the key and the entry of the last part found or kept: a run's
        variants (other world sizes, a fix's candidates) are shallow copies that keep the very Value
        objects of the sections they do not change, which are found again by identity (a frozen Value
        is the same value with the same provenance) without making their key."""

    def lookup(self, section: Any) -> tuple[tuple[tuple, tuple] | None, Any]:
        """(the key of ``section``, the part kept for it or None)."""
        entries = tuple(vars(section).values())
        last = self.last
        if last is not None and last[0] is type(section) and len(entries) == len(last[1]) \
                and all(map(operator.is_, entries, last[1])) and self.entries.get(last[2]) is last[3]:
            return (last[2], last[1]), last[3][1]
        key = _section_key(section)
        found = self.get(key)
        if found is not None and key is not None:
            self.last = (type(section), key[1], key[0], self.entries[key[0]])
        return key, found

    def get(self, key: tuple[tuple, tuple] | None) -> Any:
        if key is None:
            return None
        found = self.entries.get(key[0])
        return found[1] if found is not None and found[0] == key[1] else None

    def put(self, key: tuple[tuple, tuple] | None, found: Any, section_type: type | None = None) -> None:
        if key is None:
            return
        entries = dict(self.entries)  # a new dict, bound at once: safe across threads
        entries.pop(key[0], None)
        entry = entries[key[0]] = (key[1], found)
        while len(entries) > self.size:
            entries.pop(next(iter(entries)))  # the oldest
        self.entries = entries
        if section_type is not None:
            self.last = (section_type, key[1], key[0], entry)


_model_parts = _Kept()
_engine_parts = _Kept()


def _section_key(section: Any) -> tuple[tuple, tuple] | None:
    """A spec section as a key compared by value: the field values with their types (``1``,
    ``1.0`` and ``True`` are equal in Python but read and print differently) and a float's text
    (``-0.0``), hashable; and the fields' Values themselves (each value with its whole provenance),
    compared when the first part is found. None when a field holds anything but a number, a string,
    a boolean or None (a list compares equal across element types): such a section is not kept."""
    entries = tuple(vars(section).values())
    values: list[Any] = []
    for entry in entries:
        if entry is None:
            values.append(None)
            continue
        if type(entry) is not Value:
            return None
        value = entry.value
        kind = type(value)
        if kind is int or kind is str or kind is bool or value is None:
            values.append((kind, value))
        elif kind is float:
            values.append(repr(value))
        else:
            return None
    return tuple(values), entries


def _model_part(spec: TrainingSpec) -> _ModelPart:
    """The model section read as resolve() reads it, memoised on its values: a search over layouts
    (TL301's fixes, the world sizes the memory rules try, a layout's finalists) estimates many specs
    that differ from the config only in their layout, batch or cluster, never in the model."""
    key, part = _model_parts.lookup(spec.model)
    if part is None:
        part = _read_model(spec)
        _model_parts.put(key, part, type(spec.model))
    return part


def _read_model(spec: TrainingSpec) -> _ModelPart:
    from trainlint.adapters.hf.tokenizer_vocab import ASSUMED_VOCAB  # here: the module (file reading) is for the adapters
    r = _Reader(spec)
    how = _model_how(spec)
    layers = r.get("model.num_layers", missing=("number of transformer layers", how), cast=int)
    hidden = r.get("model.hidden_size", missing=("hidden size", how), cast=int)
    heads = r.get("model.num_attention_heads", missing=("number of attention heads", how), cast=int)
    vocab = r.get("model.vocab_size", fallback=ASSUMED_VOCAB, cast=int,
                  why=f"the config's tokenizer options do not identify the tokenizer: {ASSUMED_VOCAB:,} tokens assumed "
                      "(--vocab-size N or `vocab-size` in [tool.trainlint] to set it)")
    seq = r.get("model.seq_length", cast=int)
    if seq is None and spec.get("model.seq_length") is None:
        seq = _seq_from_positions(r)
    model_missing = bool(r.missing)
    if model_missing:
        heads = hidden = layers = vocab = seq = 1  # placeholders: only the cluster checks below still run
    kv = r.get("model.num_kv_heads", fallback=heads, why="no GQA/MQA setting: one KV head per attention head", cast=int)
    head_dim = r.get("model.kv_channels", fallback=hidden // heads, why="head dimension = hidden / heads", cast=int)
    gated = _bool(r.get("model.gated_mlp", fallback=False, why="no gated-MLP setting: two-matrix (GeLU) MLP"))
    ffn = r.get("model.ffn_hidden_size", fallback=4 * hidden, why="FFN size 4 x hidden (Megatron-LM default when not gated)", cast=int)
    tied = _bool(r.get("model.tied_embeddings", fallback=True, why="input embedding and output layer tied (Megatron-LM default)"))
    experts = r.get("model.num_experts", fallback=1, why="dense model (no experts)", cast=int) or 1
    top_k = r.get("model.moe_top_k", fallback=2 if experts > 1 else 1, why="MoE router top-k 2 (Megatron-LM default)",
                  cast=int) if experts > 1 else 1
    moe_ffn = r.get("model.moe_ffn_hidden_size", fallback=ffn, why="expert FFN size = FFN size", cast=int) if experts > 1 else ffn
    if model_missing:
        # the sizes above came from placeholders: say what they will be, not the placeholder's number
        relative = {"model.num_kv_heads": "heads", "model.kv_channels": "hidden / heads",
                    "model.ffn_hidden_size": "4 x hidden", "model.moe_ffn_hidden_size": "FFN size"}
        r.assumptions = [replace(a, value=relative[a.field]) if a.field in relative else a for a in r.assumptions]
    return _ModelPart((layers, hidden, heads, vocab, seq, model_missing, kv, head_dim, gated, ffn, tied, experts, top_k,
                       moe_ffn), tuple(r.assumptions), tuple(r.missing))


def resolve(spec: TrainingSpec, ctx: EstimateContext) -> tuple[Inputs | None, list[MissingInput], list[Assumption]]:
    """Plain inputs, what is missing, and every non-file input with its source."""
    r = _Reader(spec)
    gpu: GPU = ctx.gpu.value
    r.note("cluster.gpu", Value(gpu.id, ctx.gpu.provenance))

    part = _model_part(spec)
    r.assumptions.extend(part.assumptions)
    r.missing.extend(part.missing)
    layers, hidden, heads, vocab, seq, model_missing, kv, head_dim, gated, ffn, tied, experts, top_k, moe_ffn = part.values

    tp = r.get("parallel.tensor", fallback=1, why="no tensor parallelism given: 1", cast=int)
    pp = r.get("parallel.pipeline", fallback=1, why="no pipeline parallelism given: 1", cast=int)
    vpp = r.get("parallel.virtual_pipeline", fallback=1, why="no interleaving", cast=int) if pp > 1 else 1
    cp = r.get("parallel.context", fallback=1, why="no context parallelism given: 1", cast=int)
    ep = r.get("parallel.expert", fallback=1, why="no expert parallelism given: 1", cast=int) if experts > 1 else 1
    etp = r.get("parallel.expert_tensor", fallback=tp, why="expert tensor parallel = tensor parallel", cast=int) if experts > 1 else tp
    sp = _bool(r.get("parallel.sequence_parallel", fallback=False, why="no sequence parallelism")) and tp > 1
    zero = r.get("parallel.zero_stage", fallback=0, why="", cast=int) or 0
    dist_opt = _bool(r.get("parallel.distributed_optimizer", fallback=False, why=""))
    e = _engine(r, spec)
    off_opt, off_par = e["offload_optimizer"], e["offload_params"]

    vocab_tokens, vocab_multiple = vocab, _pad_multiple(r)
    vocab = _padded_vocab(r, vocab, tp)
    model_par = tp * pp * cp
    world_entry = spec.cluster.world_size
    dp_entry = spec.parallel.data
    world = None
    overridden = _cluster_override(ctx)
    if overridden and world_entry is not None:
        # --nodes / --gpus-per-node (or the project config) win over the launcher in the file
        # (context.py's precedence); the disagreement is reported with the file's value and line.
        if dp_entry is not None and world_entry.provenance in dp_entry.provenance.inputs:
            dp_entry = None  # DP was derived from the launcher's world size: derive it again
            r.stale_batch = True  # and so were any batch members derived from that DP
        file_world = world_entry
        world_entry = None
    else:
        file_world = None
    if world_entry is not None:
        world = _count(r, "cluster.world_size", world_entry)
        if world is None:
            return None, r.missing, r.assumptions
        if world_entry.provenance.uncertain:
            # the script's world size outside the branch or scheduler that decides it at launch (an
            # undecided `if`, ${SLURM_NNODES:-1} with no allocation): estimated with, but a guess
            r.assumptions.append(Assumption("cluster.world_size", world, _ASSUMED, _guessed_world(world_entry)))
        else:
            r.note("cluster.world_size", world_entry)
    elif ctx.nodes is not None:
        world = _count(r, "cluster.nodes", ctx.nodes)
        per_node = _count(r, "cluster.gpus_per_node", ctx.gpus_per_node)
        if world is None or per_node is None:
            return None, r.missing, r.assumptions
        world *= per_node
        source = f"nodes ({_source(ctx.nodes.provenance)}) x GPUs per node ({_source(ctx.gpus_per_node.provenance)})"
        if file_world is not None and file_world.value != world:
            fpath, fspan = first_span(file_world)
            where = f"{fpath}:{fspan.line}" if fpath and fspan else file_world.provenance.describe()
            source += f"; overrides the world size {file_world.value} the file states at {where}"
        # one node by a framework's default (NeoX without a hostfile) x GPUs per node nothing states:
        # trainlint's assumption, not a fact (a user's --nodes with the default 8 per node is their choice)
        guessed = ctx.gpus_per_node.provenance.origin is Origin.ASSUMED \
            and ctx.nodes.provenance.origin in (Origin.DEFAULT, Origin.ASSUMED)
        if guessed:
            source += ("; the memory, speed and communication rules do not judge an assumed world size "
                       "(--gpus-per-node N, or `gpus-per-node` in [tool.trainlint])")
        r.assumptions.append(Assumption("cluster.world_size", world, (Origin.ASSUMED if guessed else Origin.DERIVED).value,
                                        source))
    dp = None
    if dp_entry is not None:
        dp = _count(r, "parallel.data", dp_entry)
        if dp is None:
            return None, r.missing, r.assumptions
        r.note("parallel.data", dp_entry)
        if world is None:
            world = dp * model_par
            r.assumptions.append(Assumption("cluster.world_size", world, Origin.DERIVED.value,
                                            "data parallel x tensor x pipeline x context"))
        elif data_parallel_size(world, model_par) != dp:
            r.missing.append(MissingInput("parallel.data", f"data parallel {dp} x TP {tp} x PP {pp} x CP {cp} "
                                          f"= {dp * model_par} GPUs but the world size is {world}",
                                          "make --nodes / --gpus-per-node agree with the config"))
            return None, r.missing, r.assumptions
    if world is None:
        world = _assumed_world(int(ctx.gpus_per_node.value), model_par, cp, ep)
        r.assumptions.append(Assumption("cluster.world_size", world, Origin.ASSUMED.value, ASSUMED_WORLD_NOTE.format(
            world=world, per_node=int(ctx.gpus_per_node.value), model_par=model_par)))
    if dp is None:
        dp = data_parallel_size(world, model_par)  # the one DP computation (trainlint.core.framework)
        if dp is None:
            r.missing.append(MissingInput("parallel.data", f"world size {world} is not a multiple of TP x PP x CP = {model_par}",
                                          "fix --nodes / --gpus-per-node or the parallel sizes"))
            return None, r.missing, r.assumptions
        r.assumptions.append(Assumption("parallel.data", dp, Origin.DERIVED.value,
                                        f"world size {world} / (TP {tp} x PP {pp} x CP {cp})"))

    micro, ga, gb = _batch(r, dp)
    if r.missing:
        return None, r.missing, r.assumptions
    if model_missing:
        return None, r.missing, r.assumptions

    dtype = str(r.get("precision.dtype", fallback="bf16", why="no precision given: bf16 mixed precision assumed")).lower()
    fp8 = bool(r.get("precision.fp8", fallback=None, why=""))
    fp8_params = fp8 and _bool(r.get("precision.fp8_params", fallback=False, why=""))
    optimizer = str(r.get("precision.optimizer", fallback="adam", why="no optimizer given: Adam assumed") or "adam").lower()
    recompute = _norm_mode(r.get("memory.recompute", fallback="none", why="no activation recompute"))
    method = str(r.get("memory.recompute_method", fallback="uniform", why="recompute method uniform") if recompute == "full" else "uniform")
    rlayers = int(r.get("memory.recompute_num_layers", fallback=1, why="one layer per checkpoint", cast=int) if recompute == "full" else 0)
    flash = e["attention"] in ("flash", "flash-triton")
    part_act = _bool(r.get("memory.partition_activations", fallback=False, why="activations not partitioned"))
    cpu_ckpt = recompute == "full" and _bool(r.get("memory.cpu_checkpointing", fallback=False,
                                                   why="checkpointed activations kept on the GPU"))
    residual_dropout = _dropout_on(spec)
    split = _stage_split(r, spec, layers, pp, max(1, vpp))
    modules = _recompute_modules(r, spec) if recompute == "selective" else ("core_attn",)
    offload_layers = int(r.get("memory.cpu_offload_layers", fallback=0, cast=int) or 0)
    conf = spec.engine.cuda_alloc_conf
    expandable = conf is not None and "expandable_segments:true" in str(conf.value).replace(" ", "").lower()
    logits_in_place = str(r.get("memory.cross_entropy", fallback="fp32", why="") or "fp32") == "in-place"
    activation = spec.get("memory.gated_activation")  # a framework's default or a model's code, never assumed here
    gated_unfused = activation is not None and activation.value == "unfused"


    mla = _latent_dims(r, spec)
    inputs = Inputs(
        gpu=gpu, gpus_per_node=int(ctx.gpus_per_node.value),
        layers=layers, hidden=hidden, heads=heads, kv_heads=kv, head_dim=head_dim, ffn=ffn, gated=gated,
        vocab=vocab, seq=seq, tied=tied, experts=experts, top_k=top_k, moe_ffn=moe_ffn,
        tp=tp, pp=pp, vpp=max(1, vpp), cp=cp, ep=ep, etp=etp, dp=dp, world=world, sp=sp, zero=zero,
        dist_opt=dist_opt, offload_opt=off_opt, offload_params=off_par, owner=e["optimizer_owner"],
        shard_stage=e["shard_stage"], shard_cp=e["shard_group"] == "dp_cp", grad_bytes=_DTYPE_BYTES[e["grad_dtype"]],
        moe_interval=e["moe_layer_interval"],
        micro=micro, grad_accum=ga, global_batch=gb, dtype=dtype, fp8=bool(fp8), fp8_params=fp8_params, optimizer=optimizer,
        recompute=recompute, recompute_method=method, recompute_layers=max(1, rlayers), flash=flash,
        partition_activations=part_act, reduce_bucket=e["reduce_bucket"], allgather_bucket=e["allgather_bucket"],
        max_live_params=e["zero3_max_live"], prefetch_bucket=e["zero3_prefetch"], overlap_dp=e["dp_overlap"],
        overlap_tp=e["tp_overlap"], overlap_p2p=e["p2p_overlap"], overlap_ep=e["ep_overlap"],
        cp_all_to_all=e["sequence_exchange"] == "all-to-all",
        assumptions=r.assumptions,
        vocab_tokens=vocab_tokens if vocab_multiple else 0, vocab_multiple=max(1, vocab_multiple),
        residual_dropout=residual_dropout, cpu_checkpointing=cpu_ckpt, flash_triton=e["attention"] == "flash-triton",
        stage_split=split, split_layout=(pp, max(1, vpp)) if split else (0, 0), recompute_modules=modules,
        cpu_offload_layers=min(offload_layers, layers), logits_in_place=logits_in_place,
        expandable_segments=expandable, gated_unfused=gated_unfused,
        moe_layers=_moe_layers(r, spec, layers),
        moe_shared_ffn=r.get("model.moe_shared_expert_ffn", fallback=0, cast=int) if experts > 1 else 0,
        moe_probs_on_output=bool(e["moe_probs_on_output"]), moe_unfused_permute=bool(e["moe_unfused_permute"]),
        moe_dispatcher=e["moe_dispatcher"],
        mla_q_rank=mla[0], mla_kv_rank=mla[1], mla_qk_head=mla[2], mla_rope_head=mla[3], mla_v_head=mla[4],
    )
    if ctx.gpus_per_node.provenance.origin is not Origin.FILE:
        r.note("cluster.gpus_per_node", ctx.gpus_per_node)
    return inputs, [], r.assumptions


def _moe_layers(r: _Reader, spec: TrainingSpec, layers: int) -> int:
    """MoE layers where the config lists them per layer (engine.moe_layer_pattern) and the list has one entry
    per layer (Megatron checks the same); 0 otherwise (every moe_layer_interval-th layer)."""
    entry = spec.get("engine.moe_layer_pattern")
    pattern = entry.value if entry is not None else None
    if entry is None or not isinstance(pattern, list) or len(pattern) != layers:
        return 0
    r.note("engine.moe_layer_pattern", entry)
    return sum(1 for x in pattern if x == 1)


def _latent_dims(r: _Reader, spec: TrainingSpec) -> tuple[int, int, int, int, int]:
    """(q rank, kv rank, qk head, rotary head, v head) of multi-latent attention (model.latent_dims); zeros
    without MLA or when a size is unusable (then the attention is costed as multi-head attention of
    kv_channels-sized heads)."""
    entry = spec.get("model.latent_dims")
    dims = entry.value if entry is not None else None
    if not isinstance(dims, dict):
        return (0, 0, 0, 0, 0)
    keys = ("q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_rope_head_dim", "v_head_dim")
    values: list[int] = []
    for k in keys:
        v = dims.get(k)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_COUNT:
            return (0, 0, 0, 0, 0)
        values.append(v)
    if not all(values[1:]) or entry is None:
        return (0, 0, 0, 0, 0)
    r.note("model.latent_dims", entry)
    return (values[0], values[1], values[2], values[3], values[4])


def _dropout_on(spec: TrainingSpec) -> bool:
    """Whether residual dropout keeps masks: unless the config states a probability of 0. torch's
    dropout at p = 0 returns its input (aten/src/ATen/native/Dropout.cpp: "if (p == 0 || !train ||
    input.numel() == 0) return input"; the decomposition torch.compile uses returns a clone), so no
    mask is saved for the backward; Megatron's and NeoX's default 0.1 keeps one."""
    entry = spec.get("model.hidden_dropout")
    value = entry.value if entry is not None else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    return value != 0


ASSUMED_WORLD_NOTE = ("the config and its launch do not say how many GPUs: one node ({per_node} GPUs, rounded up to a "
                      "multiple of TP x PP x CP = {model_par}) assumed, {world} GPUs; the memory, speed and "
                      "communication rules do not judge an assumed world size (--nodes N, or `nodes` in [tool.trainlint])")


def _assumed_world(per_node: int, model_par: int, cp: int, ep: int) -> int:
    """One node, rounded up so that TP x PP x CP divides it and EP divides DP x CP (Megatron's layout rules)."""
    world = -(-per_node // model_par) * model_par
    for _ in range(4096):
        if ((world // model_par) * cp) % ep == 0:
            break
        world += model_par
    return world


def world_assumed(est: object) -> bool:
    """The estimate's world size is trainlint's own assumption (nothing in the config or the context said it)."""
    return any(a.field == "cluster.world_size" for a in unjudged(est))


def _pad_multiple(r: _Reader) -> int:
    entry = r.spec.model.vocab_pad_multiple
    return entry.value if entry is not None and type(entry.value) is int and entry.value >= 1 else 0


def _padded_vocab(r: _Reader, vocab: int, tp: int) -> int:
    """The embedding rows the framework builds: the tokenizer's size rounded up to a multiple of
    make-vocab-size-divisible-by x TP (Megatron-LM and GPT-NeoX _vocab_size_with_padding), when the
    spec says the framework pads (vocab_pad_multiple); the spec's size as it is otherwise."""
    entry = r.spec.model.vocab_pad_multiple
    if entry is None or type(entry.value) is not int or entry.value < 1:
        return vocab
    multiple = entry.value * tp
    rows = -(-vocab // multiple) * multiple
    if rows != vocab:
        r.assumptions.append(Assumption("model.vocab_size", rows, Origin.DERIVED.value,
                                        f"{vocab:,} padded to a multiple of {entry.value} x TP {tp} "
                                        "(_vocab_size_with_padding)"))
    return rows


BATCH_HOW = "fix the batch sizes so that global = micro x gradient accumulation x data parallel (see TL100)"


UNJUDGED = {"cluster.world_size": "--nodes N (and --gpus-per-node N)", "batch.micro_batch": "--micro-batch-size N",
            "model.seq_length": "--seq-length N"}
"""Inputs that, when trainlint assumed them, move memory and time too much for a rule to judge the
estimate: `estimate` states them; the rules stay silent and TL900 names the flag that sets each."""


def unjudged(est: object) -> list[Assumption]:
    """The assumptions of ``est`` that keep the memory, speed and communication rules silent."""
    return [a for a in getattr(est, "assumptions", ()) or () if a.field in UNJUDGED and a.origin == Origin.ASSUMED.value]


def _seq_from_positions(r: _Reader) -> int | None:
    """No sequence length: the longest the position embeddings allow, stated as assumed; else missing."""
    entry = r.spec.model.max_position_embeddings
    value = entry.value if entry is not None else None
    if type(value) is int and 1 <= value <= MAX_COUNT:
        r.assumptions.append(Assumption("model.seq_length", value, Origin.ASSUMED.value,
                                        f"no sequence length given: max position embeddings {value} assumed "
                                        "(--seq-length N to set it)"))
        return value
    r.missing.append(MissingInput("model.seq_length", "sequence length",
                                  "set it in the config (--seq-length, seq_length), or give `trainlint estimate "
                                  "--seq-length N`, or --model PRESET"))
    return None


def _batch(r: _Reader, dp: int) -> tuple[int, int, int]:
    """The batch triple as the framework will run it, or a refusal (a MissingInput on ``batch``).

    The adapters give each framework's own defaults and derivations (Megatron: global = micro x DP
    without --global-batch-size, accumulation = global / (micro x DP); GPT-NeoX: accumulation 1
    unless written; DeepSpeed: accumulation 1 when only one of train_batch_size / micro is given).
    What is left here is DeepSpeed's ``_set_batch_related_parameters`` (the missing member of the
    three from the other two and DP, by whole division) and every framework's assertion that
    global = micro x accumulation x DP: a triple that fails it is refused, never estimated."""
    spec = r.spec
    mb_e, ga_e, gb_e = spec.batch.micro_batch, spec.batch.grad_accum, spec.batch.global_batch
    if r.stale_batch:
        # the adapter derived these from a DP that --nodes changed: derive them again from the new DP
        ga_e, gb_e = (None if e is not None and e.provenance.origin is Origin.DERIVED else e for e in (ga_e, gb_e))
    missing_before = len(r.missing)
    mb, ga, gb = (_count(r, name, e) if e is not None and e.value is not None else None
                  for name, e in (("batch.micro_batch", mb_e), ("batch.grad_accum", ga_e), ("batch.global_batch", gb_e)))
    if len(r.missing) > missing_before:
        return 0, 0, 0
    for name, entry in (("batch.micro_batch", mb_e), ("batch.grad_accum", ga_e), ("batch.global_batch", gb_e)):
        if entry is not None and entry.value is not None:
            r.note(name, entry)
    how = "set train_micro_batch_size_per_gpu / --micro-batch-size and the global batch in the config"

    def refuse(what: str) -> tuple[int, int, int]:
        r.missing.append(MissingInput("batch", what, BATCH_HOW))
        return 0, 0, 0

    if (gb is not None and mb is not None and spec.dialect == MEGATRON_LEGACY
            and gb_e is not None and not (gb_e.provenance.key or "").startswith("--")):
        # Megatron v1.x (as DeepSpeedExamples vendor it) has no global batch of its own: its data
        # loader feeds --batch-size per GPU x DP each iteration, and DeepSpeed's engine derives its
        # own micro batch from the JSON's train_batch_size (train_batch // DP // accumulation) without
        # seeing --batch-size, so no framework compares the two: the run trains micro x accumulation x DP.
        # DeepSpeed still checks its own triple (config.py _set_batch_related_parameters /
        # _batch_assertion): the members the JSON gives must divide train_batch_size by whole numbers.
        jm_e = spec.engine.deepspeed_micro_batch
        jm = jm_e.value if jm_e is not None and type(jm_e.value) is int and jm_e.value >= 1 else None
        known = (jm or 1) * (ga or 1) * dp
        if gb % known or (jm is not None and ga is not None and gb != known):
            return refuse(f"the DeepSpeed JSON's train_batch_size {gb} is not "
                          f"{'micro ' + str(jm) + ' x ' if jm else ''}{'gradient accumulation ' + str(ga) + ' x ' if ga else ''}"
                          f"data parallel {dp} x a whole number: DeepSpeed refuses the batch triple")
        legacy_note = (f"Megatron v1.x feeds --batch-size {mb} x DP {dp} x accumulation {ga or 1}; the DeepSpeed "
                       f"JSON's train_batch_size {gb} only sets DeepSpeed's own bookkeeping")
        gb = None
    else:
        legacy_note = "micro x grad accum x DP"
    if mb is None and gb is not None and ga is not None:
        if gb % (ga * dp):
            return refuse(f"global batch {gb} is not divisible by gradient accumulation {ga} x data parallel {dp}: "
                          "the framework refuses the batch triple")
        mb = gb // (ga * dp)
        r.assumptions.append(Assumption("batch.micro_batch", mb, Origin.DERIVED.value, "global / (grad accum x DP)"))
    if mb is None and gb is None and (ga is None or (ga_e is not None and ga_e.provenance.origin is Origin.DEFAULT)):
        # nothing about the batch (a model-only fragment): one sample per GPU, stated, not judged
        mb = 1
        r.assumptions.append(Assumption("batch.micro_batch", 1, Origin.ASSUMED.value,
                                        "no batch size given: micro batch 1 assumed (--micro-batch-size N to set it)"))
    if mb is None:
        r.missing.append(MissingInput("batch.micro_batch", "micro-batch size per GPU", how))
        return 0, 0, 0
    if ga is None and gb is not None:
        if gb % (mb * dp):
            return refuse(f"global batch {gb} is not divisible by micro batch {mb} x data parallel {dp} = {mb * dp}: "
                          "the framework refuses the batch triple")
        ga = gb // (mb * dp)
        r.assumptions.append(Assumption("batch.grad_accum", ga, Origin.DERIVED.value, "global / (micro x DP)"))
    if ga is None:
        ga = 1
        r.assumptions.append(Assumption("batch.grad_accum", 1, Origin.ASSUMED.value, "no gradient accumulation given: 1"))
    if gb is None:
        gb = mb * ga * dp
        r.assumptions.append(Assumption("batch.global_batch", gb, Origin.DERIVED.value, legacy_note))
    if mb * ga * dp != gb:
        return refuse(f"global batch {gb} != micro {mb} x gradient accumulation {ga} x data parallel {dp} = "
                      f"{mb * ga * dp}: the framework refuses the batch triple")
    return mb, ga, gb


_DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}

# What the estimator takes when no adapter said what the engine does (a spec built in code):
# trainlint's own assumptions, each reported, never a framework's rule.
_ENGINE_FALLBACK: dict[str, tuple[Any, str]] = {
    "optimizer_owner": ("megatron", "no engine stated: the optimizer is assumed unsharded, with fp32 master weights"),
    "shard_stage": (0, "no engine stated: nothing sharded"),
    "shard_group": ("dp", "no engine stated: shards over data parallel"),
    "grad_dtype": ("fp32", "no engine stated: fp32 gradient buffer"),
    "offload_optimizer": ("none", "no optimizer offload"),
    "offload_params": ("none", "no parameter offload"),
    "attention": ("flash", "fused (flash) attention assumed: no s^2 score tensors kept"),
    "moe_layer_interval": (1, "every layer a MoE layer"),
    "dp_overlap": (False, ""),
    "tp_overlap": (False, ""),
    "p2p_overlap": (True, ""),
    "ep_overlap": (False, ""),
    "moe_probs_on_output": (False, ""),
    "moe_unfused_permute": (False, ""),
    "moe_dispatcher": ("allgather", ""),
    "sequence_exchange": ("ring", ""),
    "reduce_bucket": (5e8, ""),
    "allgather_bucket": (5e8, ""),
    "zero3_max_live": (1e9, ""),
    "zero3_prefetch": (5e7, ""),
}
_ENGINE_REPORTED = frozenset({"optimizer_owner", "shard_stage", "grad_dtype", "attention"})
"""Engine facts listed among the estimate's assumptions when no file wrote them (buckets and
overlap defaults stay quiet, as the framework defaults they are)."""
_ENGINE_CHOICES = {
    "optimizer_owner": ("megatron", "deepspeed", "deepspeed-zero", "deepspeed-bf16"),
    "shard_group": ("dp", "dp_cp"),
    "grad_dtype": tuple(_DTYPE_BYTES),
    "attention": ("flash", "flash-triton", "unfused"),
    "sequence_exchange": ("ring", "all-to-all"),
    "moe_dispatcher": ("allgather", "alltoall", "flex", "flex-fused"),
}


def _engine(r: _Reader, spec: TrainingSpec) -> dict[str, Any]:
    """The engine fields as plain values: what the adapter set, else a reported assumption
    (memoised on the engine section's values, as the model part is)."""
    key, found = _engine_parts.lookup(spec.engine)
    if found is None:
        before = len(r.assumptions)
        out = _read_engine(r, spec)
        found = (dict(out), tuple(r.assumptions[before:]))
        _engine_parts.put(key, found, type(spec.engine))
        return out
    r.assumptions.extend(found[1])
    return dict(found[0])


_CHOICE, _FLAG, _COUNT, _STAGE, _INTERVAL, _OFFLOAD = range(6)


def _engine_kind(name: str, fallback: Any) -> int:
    """How :func:`_read_engine` accepts a written value of ``name``: one of its choices, a boolean, a
    number >= 0 (a ZeRO stage 0-3, an interval of at least 1), or any text (the offload targets)."""
    if name in ("offload_optimizer", "offload_params"):
        return _OFFLOAD
    if name in _ENGINE_CHOICES:
        return _CHOICE
    if isinstance(fallback, bool):
        return _FLAG
    return {"shard_stage": _STAGE, "moe_layer_interval": _INTERVAL}.get(name, _COUNT)


_ENGINE_READ: tuple[tuple[str, str, Any, str, int, tuple, bool], ...] = tuple(
    (name, f"engine.{name}", fallback, why, _engine_kind(name, fallback), _ENGINE_CHOICES.get(name, ()),
     name in _ENGINE_REPORTED)
    for name, (fallback, why) in _ENGINE_FALLBACK.items())
"""Each engine field with what :func:`_read_engine` needs of it, made once (not per estimate): its
dotted name, fallback and why, how a written value is accepted, its choices, whether it is reported."""


def _read_engine(r: _Reader, spec: TrainingSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    engine = spec.engine
    assumed = Origin.ASSUMED.value
    for name, dotted, fallback, why, kind, choices, reported in _ENGINE_READ:
        entry = getattr(engine, name)
        value = entry.value if entry is not None else None
        if isinstance(value, str):
            value = value.lower()
        if kind == _OFFLOAD:
            ok = isinstance(value, str)
        elif value is None:
            ok = False
        elif kind == _CHOICE:
            ok = value in choices
        elif kind == _FLAG:
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
            if kind == _STAGE:
                ok = ok and value in (0, 1, 2, 3)
            elif kind == _INTERVAL:
                ok = ok and int(value) >= 1
        if ok:
            assert entry is not None  # ok needs a value, and a value comes from an entry
            if reported:
                r.note(dotted, entry)
            out[name] = value
        else:
            if why:
                r.assumptions.append(Assumption(dotted, fallback, assumed, why))
            out[name] = fallback
    if out["offload_optimizer"] not in ("cpu", "nvme"):
        out["offload_optimizer"] = "none"
    if out["offload_params"] not in ("cpu", "nvme"):
        out["offload_params"] = "none"
    out["moe_layer_interval"] = int(out["moe_layer_interval"])
    return out
