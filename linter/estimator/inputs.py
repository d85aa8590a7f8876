"""From (spec, context) to the plain numbers the formulas use, or the list of what is missing.

Every number used is recorded with its provenance; anything not written in the config (a
framework default, a value derived from others, a CLI flag, a project-config key, or
trainlint's own assumption) is listed in the estimate's assumptions. Required values that
nothing gives are returned as :class:`MissingInput` items saying how to supply them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainlint.catalog import GPU
from trainlint.estimator.context import EstimateContext
from trainlint.provenance import Origin, Provenance, Value
from trainlint.spec import TrainingSpec
from trainlint.tokenizer_vocab import ASSUMED_VOCAB

MODEL_HOW = "give --model PRESET (e.g. --model llama2-7b) or --model path/to/config.json, or `model = ...` in [tool.trainlint]"


@dataclass(frozen=True)
class MissingInput:
    field: str
    what: str
    how: str

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "what": self.what, "how": self.how}


@dataclass(frozen=True)
class Assumption:
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

    framework: str
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
    dist_opt: bool
    offload_opt: str
    offload_params: str
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

    def repadded(self, tp: int) -> int:
        """The embedding rows with tensor-parallel size ``tp`` (a layout search changing TP)."""
        if not self.vocab_tokens:
            return self.vocab
        multiple = self.vocab_multiple * tp
        return -(-self.vocab_tokens // multiple) * multiple

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def moe(self) -> bool:
        return self.experts > 1

    @property
    def act_bytes(self) -> int:
        return 4 if self.dtype == "fp32" else 2

    @property
    def nodes(self) -> int:
        return max(1, -(-self.world // self.gpus_per_node))


MAX_COUNT = 10**12
"""Sizes and counts above this are not a real run (and would overflow float arithmetic)."""
ZERO_ALLOWED = frozenset({"parallel.zero_stage", "memory.recompute_num_layers", "model.num_experts"})
"""Integer inputs where 0 is meaningful; every other integer input must be at least 1."""


def _count(r: "_Reader", name: str, entry: Value) -> int | None:
    """A positive whole count from a spec value, or None (recorded as missing) when unusable."""
    try:
        value = int(entry.value)
    except (TypeError, ValueError, OverflowError):
        value = 0
    if not 1 <= value <= MAX_COUNT:
        r.missing.append(MissingInput(name, f"{name} has an unusable value {entry.value!r}", "fix it in the config"))
        return None
    return value


class _Reader:
    """Reads spec fields, falling back to defaults, recording provenance and what is missing."""

    def __init__(self, spec: TrainingSpec) -> None:
        self.spec = spec
        self.assumptions: list[Assumption] = []
        self.missing: list[MissingInput] = []

    def note(self, name: str, entry: Value) -> None:
        prov = entry.provenance
        if prov.origin is not Origin.FILE:
            self.assumptions.append(Assumption(name, entry.value, prov.origin.value, _source(prov)))

    def get(self, name: str, *, fallback: Any = None, why: str = "", missing: tuple[str, str] | None = None,
            cast: Any = None) -> Any:
        entry = self.spec.get(name)
        if entry is not None and entry.value is not None:
            try:
                value = cast(entry.value) if cast else entry.value
            except (TypeError, ValueError, OverflowError):
                value = None
            if value is None or (cast is int and not 1 <= value <= MAX_COUNT and name not in ZERO_ALLOWED) \
                    or (cast is int and name in ZERO_ALLOWED and not 0 <= value <= MAX_COUNT):
                self.missing.append(MissingInput(name, f"{name} has an unusable value {entry.value!r}",
                                                 "fix it in the config"))
                return fallback
            self.note(name, entry)
            return value
        if missing is not None:
            self.missing.append(MissingInput(name, missing[0], missing[1]))
            return fallback
        if fallback is not None and why:
            self.assumptions.append(Assumption(name, fallback, Origin.ASSUMED.value, why))
        return fallback

    def setting(self, names: tuple[str, ...], fallback: Any, why: str) -> Any:
        for name in names:
            entry = self.spec.settings.get(name)
            if entry is not None and entry.value is not None and not isinstance(entry.value, str):
                self.note(f"settings.{name}", entry)
                return entry.value
        return fallback


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


def resolve(spec: TrainingSpec, ctx: EstimateContext) -> tuple[Inputs | None, list[MissingInput], list[Assumption]]:
    """Plain inputs, what is missing, and every non-file input with its source."""
    r = _Reader(spec)
    fw = spec.framework
    gpu: GPU = ctx.gpu.value
    r.note("cluster.gpu", Value(gpu.id, ctx.gpu.provenance))

    layers = r.get("model.num_layers", missing=("number of transformer layers", MODEL_HOW), cast=int)
    hidden = r.get("model.hidden_size", missing=("hidden size", MODEL_HOW), cast=int)
    heads = r.get("model.num_attention_heads", missing=("number of attention heads", MODEL_HOW), cast=int)
    vocab = r.get("model.vocab_size", fallback=ASSUMED_VOCAB, cast=int,
                  why=f"the config's tokenizer options do not identify the tokenizer: {ASSUMED_VOCAB:,} tokens assumed "
                      "(--vocab-size N or `vocab-size` in [tool.trainlint] to set it)")
    seq = r.get("model.seq_length", missing=("sequence length", "set it in the config (--seq-length, seq_length) or give --model PRESET"), cast=int)
    model_missing = bool(r.missing)
    if model_missing:
        heads = hidden = layers = vocab = seq = 1  # placeholders: only the cluster checks below still run
    kv = r.get("model.num_kv_heads", fallback=heads, why="no GQA/MQA setting: one KV head per attention head", cast=int)
    head_dim = r.get("model.kv_channels", fallback=hidden // heads, why="head dimension = hidden / heads", cast=int)
    gated = _bool(r.get("model.gated_mlp", fallback=False, why="no gated-MLP setting: two-matrix (GeLU) MLP"))
    ffn = r.get("model.ffn_hidden_size", fallback=4 * hidden, why="FFN size 4 x hidden (Megatron-LM default when not gated)", cast=int)
    tied = _bool(r.get("model.tied_embeddings", fallback=True, why="input embedding and output layer tied (Megatron-LM default)"))
    experts = r.get("model.num_experts", fallback=1, why="dense model (no experts)", cast=int) or 1
    top_k = r.get("model.moe_top_k", fallback=2 if experts > 1 else 1, why="MoE router top-k 2 (Megatron-LM default)", cast=int) if experts > 1 else 1
    moe_ffn = r.get("model.moe_ffn_hidden_size", fallback=ffn, why="expert FFN size = FFN size", cast=int) if experts > 1 else ffn

    tp = r.get("parallel.tensor", fallback=1, why="no tensor parallelism given: 1", cast=int)
    pp = r.get("parallel.pipeline", fallback=1, why="no pipeline parallelism given: 1", cast=int)
    vpp = r.get("parallel.virtual_pipeline", fallback=1, why="no interleaving", cast=int) if pp > 1 else 1
    cp = r.get("parallel.context", fallback=1, why="no context parallelism given: 1", cast=int)
    ep = r.get("parallel.expert", fallback=1, why="no expert parallelism given: 1", cast=int) if experts > 1 else 1
    etp = r.get("parallel.expert_tensor", fallback=tp, why="expert tensor parallel = tensor parallel", cast=int) if experts > 1 else tp
    sp = _bool(r.get("parallel.sequence_parallel", fallback=False, why="no sequence parallelism")) and tp > 1
    zero_default = 0
    if fw == "megatron" and spec.parallel.zero_stage is None:
        zero = 0  # Megatron-LM has no ZeRO stages (its distributed optimizer is read below)
    else:
        zero = r.get("parallel.zero_stage", fallback=zero_default,
                     why="no ZeRO stage given: 0" if fw != "fsdp" else "FSDP full sharding (ZeRO-3 equivalent)", cast=int)
    dist_opt = _bool(r.get("parallel.distributed_optimizer", fallback=False, why="no distributed optimizer")) if fw == "megatron" else False
    quiet = fw == "megatron"  # no offload options in Megatron-LM: nothing to report
    off_opt = str(r.get("parallel.offload_optimizer", fallback="none", why="" if quiet else "no optimizer offload") or "none").lower()
    off_par = str(r.get("parallel.offload_params", fallback="none", why="" if quiet else "no parameter offload") or "none").lower()

    vocab_tokens, vocab_multiple = vocab, _pad_multiple(r)
    vocab = _padded_vocab(r, vocab, tp)
    model_par = tp * pp * cp
    world_entry = spec.cluster.world_size
    dp_entry = spec.parallel.data
    world = None
    if world_entry is not None:
        world = _count(r, "cluster.world_size", world_entry)
        if world is None:
            return None, r.missing, r.assumptions
        r.note("cluster.world_size", world_entry)
    elif ctx.nodes is not None:
        world = _count(r, "cluster.nodes", ctx.nodes)
        per_node = _count(r, "cluster.gpus_per_node", ctx.gpus_per_node)
        if world is None or per_node is None:
            return None, r.missing, r.assumptions
        world *= per_node
        # one node by a framework's default (NeoX without a hostfile) x GPUs per node nothing states:
        # trainlint's assumption, not a fact (a user's --nodes with the default 8 per node is their choice)
        guessed = ctx.gpus_per_node.provenance.origin is Origin.ASSUMED \
            and ctx.nodes.provenance.origin in (Origin.DEFAULT, Origin.ASSUMED)
        r.assumptions.append(Assumption("cluster.world_size", world, (Origin.ASSUMED if guessed else Origin.DERIVED).value,
                                        f"nodes ({_source(ctx.nodes.provenance)}) x GPUs per node "
                                        f"({_source(ctx.gpus_per_node.provenance)})"
                                        + ("; the memory, speed and communication rules do not judge an assumed "
                                           "world size (--gpus-per-node N, or `gpus-per-node` in [tool.trainlint])"
                                           if guessed else "")))
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
        elif dp * model_par != world:
            r.missing.append(MissingInput("parallel.data", f"data parallel {dp} x TP {tp} x PP {pp} x CP {cp} "
                                          f"= {dp * model_par} GPUs but the world size is {world}",
                                          "make --nodes / --gpus-per-node agree with the config"))
            return None, r.missing, r.assumptions
    if world is None:
        world = _assumed_world(int(ctx.gpus_per_node.value), model_par, cp, ep)
        r.assumptions.append(Assumption("cluster.world_size", world, Origin.ASSUMED.value, ASSUMED_WORLD_NOTE.format(
            world=world, per_node=int(ctx.gpus_per_node.value), model_par=model_par)))
    if dp is None:
        if world % model_par:
            r.missing.append(MissingInput("parallel.data", f"world size {world} is not a multiple of TP x PP x CP = {model_par}",
                                          "fix --nodes / --gpus-per-node or the parallel sizes"))
            return None, r.missing, r.assumptions
        dp = world // model_par
        r.assumptions.append(Assumption("parallel.data", dp, Origin.DERIVED.value,
                                        f"world size {world} / (TP {tp} x PP {pp} x CP {cp})"))

    micro, ga, gb = _batch(r, dp)
    if r.missing:
        return None, r.missing, r.assumptions
    if model_missing:
        return None, r.missing, r.assumptions

    dtype = str(r.get("precision.dtype", fallback="bf16", why="no precision given: bf16 mixed precision assumed")).lower()
    fp8 = bool(r.get("precision.fp8", fallback=None, why=""))
    optimizer = str(r.get("precision.optimizer", fallback="adam", why="no optimizer given: Adam assumed") or "adam").lower()
    recompute = _norm_mode(r.get("memory.recompute", fallback="none", why="no activation recompute"))
    method = str(r.get("memory.recompute_method", fallback="uniform", why="recompute method uniform") if recompute == "full" else "uniform")
    rlayers = int(r.get("memory.recompute_num_layers", fallback=1, why="one layer per checkpoint", cast=int) if recompute == "full" else 0)
    flash = _bool(r.get("memory.flash_attention", fallback=True,
                        why="fused (flash) attention assumed: no s^2 score tensors kept"))
    part_act = _bool(r.get("memory.partition_activations", fallback=False, why="activations not partitioned"))

    ds = fw in ("deepspeed", "neox")
    reduce_bucket = float(r.setting(("zero_optimization.reduce_bucket_size", "reduce_bucket_size"), 5e8, "")) if ds else 0.0
    allgather_bucket = float(r.setting(("zero_optimization.allgather_bucket_size", "allgather_bucket_size"), 5e8, "")) if ds else 0.0
    max_live = float(r.setting(("zero_optimization.stage3_max_live_parameters", "stage3_max_live_parameters"), 1e9, "")) if ds else 0.0
    prefetch = float(r.setting(("zero_optimization.stage3_prefetch_bucket_size", "stage3_prefetch_bucket_size"), 5e7, "")) if ds else 0.0
    if ds:
        overlap_dp = _bool(r.setting(("zero_optimization.overlap_comm", "overlap_comm"), zero >= 3, ""))
    elif fw == "fsdp":
        overlap_dp = True
    else:
        overlap_dp = _bool(r.setting(("overlap_grad_reduce", "--overlap-grad-reduce"), False, ""))
    overlap_tp = _bool(r.setting(("tp_comm_overlap", "--tp-comm-overlap"), False, ""))

    inputs = Inputs(
        framework=fw, gpu=gpu, gpus_per_node=int(ctx.gpus_per_node.value),
        layers=layers, hidden=hidden, heads=heads, kv_heads=kv, head_dim=head_dim, ffn=ffn, gated=gated,
        vocab=vocab, seq=seq, tied=tied, experts=experts, top_k=top_k, moe_ffn=moe_ffn,
        tp=tp, pp=pp, vpp=max(1, vpp), cp=cp, ep=ep, etp=etp, dp=dp, world=world, sp=sp, zero=zero,
        dist_opt=dist_opt, offload_opt=off_opt, offload_params=off_par,
        micro=micro, grad_accum=ga, global_batch=gb, dtype=dtype, fp8=bool(fp8), optimizer=optimizer,
        recompute=recompute, recompute_method=method, recompute_layers=max(1, rlayers), flash=flash,
        partition_activations=part_act, reduce_bucket=reduce_bucket, allgather_bucket=allgather_bucket,
        max_live_params=max_live, prefetch_bucket=prefetch, overlap_dp=overlap_dp, overlap_tp=overlap_tp,
        assumptions=r.assumptions,
        vocab_tokens=vocab_tokens if vocab_multiple else 0, vocab_multiple=max(1, vocab_multiple),
    )
    if ctx.gpus_per_node.provenance.origin is not Origin.FILE:
        r.note("cluster.gpus_per_node", ctx.gpus_per_node)
    return inputs, [], r.assumptions


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
    return any(a.field == "cluster.world_size" and a.origin == Origin.ASSUMED.value
               for a in getattr(est, "assumptions", ()) or ())


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


def _batch(r: _Reader, dp: int) -> tuple[int, int, int]:
    spec = r.spec
    mb_e, ga_e, gb_e = spec.batch.micro_batch, spec.batch.grad_accum, spec.batch.global_batch
    missing_before = len(r.missing)
    mb, ga, gb = (_count(r, name, e) if e is not None and e.value is not None else None
                  for name, e in (("batch.micro_batch", mb_e), ("batch.grad_accum", ga_e), ("batch.global_batch", gb_e)))
    if len(r.missing) > missing_before:
        return 0, 0, 0
    for name, entry in (("batch.micro_batch", mb_e), ("batch.grad_accum", ga_e), ("batch.global_batch", gb_e)):
        if entry is not None and entry.value is not None:
            r.note(name, entry)
    how = "set train_micro_batch_size_per_gpu / --micro-batch-size and the global batch in the config"
    if mb is None and gb is not None and ga is not None:
        mb = gb // (ga * dp) if ga * dp else None
        r.assumptions.append(Assumption("batch.micro_batch", mb, Origin.DERIVED.value, "global / (grad accum x DP)"))
    if mb is None:
        r.missing.append(MissingInput("batch.micro_batch", "micro-batch size per GPU", how))
        return 0, 0, 0
    if ga is None and gb is not None:
        ga = max(1, gb // (mb * dp))
        r.assumptions.append(Assumption("batch.grad_accum", ga, Origin.DERIVED.value, "global / (micro x DP)"))
    if ga is None:
        ga = 1
        r.assumptions.append(Assumption("batch.grad_accum", 1, Origin.ASSUMED.value, "no gradient accumulation given: 1"))
    if gb is None:
        gb = mb * ga * dp
        r.assumptions.append(Assumption("batch.global_batch", gb, Origin.DERIVED.value, "micro x grad accum x DP"))
    return mb, ga, gb
