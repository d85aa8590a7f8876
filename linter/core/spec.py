"""TrainingSpec: the framework-neutral description of one training run.

Adapters fill it from DeepSpeed JSON, Megatron-LM arguments or GPT-NeoX YAML; the estimator
and the rules read only this. Every field is ``Value | None``: ``None`` means nothing says
(not the file, not a framework default, not the project config), and the consumers must
say so rather than guess.

Conventions (the same whatever the framework calls them):

* ``parallel.tensor`` is Megatron's tensor-model-parallel size, NeoX's ``model_parallel_size``.
* ``parallel.pipeline`` is the number of pipeline stages; ``parallel.pipeline_engine`` says
  whether DeepSpeed's PipelineEngine is engaged (NeoX engages it for ``pipe_parallel_size >= 1``).
* ``parallel.data`` is the data-parallel degree, world / (TP x PP x CP) in Megatron.
* ``batch.global_batch`` is samples per optimizer step over all replicas.
* ``precision.dtype`` is the compute dtype (``fp32``, ``fp16``, ``bf16``); FP8 is ``precision.fp8``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterator

from trainlint.core.positions import Span
from trainlint.core.provenance import Provenance, Value

# Values of TrainingSpec.dialect for Megatron runs.
MEGATRON_LM = "megatron-lm"                # current Megatron-LM
MEGATRON_DEEPSPEED = "megatron-deepspeed"  # Microsoft's Megatron-DeepSpeed fork
MEGATRON_LEGACY = "legacy"                 # old Megatron-LM copies (v1.1.5 in DeepSpeedExamples, ...)


@dataclass
class ModelSpec:
    """The model's shape: architecture, layers, widths, heads, vocabulary, positions, experts."""

    architecture: Value | None = None        # gpt | bert | t5 | mamba | hybrid | other
    num_layers: Value | None = None
    hidden_size: Value | None = None
    num_attention_heads: Value | None = None
    num_kv_heads: Value | None = None        # GQA / MQA groups; equals heads without GQA
    kv_channels: Value | None = None         # head dimension
    ffn_hidden_size: Value | None = None
    gated_mlp: Value | None = None           # SwiGLU / GeGLU: three FFN matrices
    vocab_size: Value | None = None          # the tokenizer's size (padded already when vocab_pad_multiple is None)
    vocab_pad_multiple: Value | None = None  # the framework pads vocab_size to a multiple of this x TP
    seq_length: Value | None = None
    max_position_embeddings: Value | None = None
    tied_embeddings: Value | None = None
    num_experts: Value | None = None         # None or 1: dense
    moe_top_k: Value | None = None
    moe_ffn_hidden_size: Value | None = None
    moe_shared_expert_ffn: Value | None = None
    """Total FFN width of the shared experts every token of a MoE layer also goes through (Megatron
    ``--moe-shared-expert-intermediate-size``: DeepSeek-V3 and Kimi-K2 2048); None: no shared expert."""
    param_count: Value | None = None         # given by the config or derived
    hidden_dropout: Value | None = None
    """Dropout probability on the residual branches (after attention and MLP) and the embedding, as
    written (Megatron ``--hidden-dropout``, NeoX ``hidden_dropout``); None: not stated (the framework
    defaults, 0.1 in both, keep a mask). At 0 torch's dropout is the identity: no mask is kept."""
    named: Value | None = None
    """The model the config names but trainlint could not read the shape of (a Hub id that is neither a
    preset nor in the local Hugging Face cache): the estimate's request for the shape names it."""
    latent_attention: Value | None = None
    """Multi-latent attention (DeepSeek-V2 MLA; Megatron ``--multi-latent-attention``), as written: the
    query/key/value head sizes are the latent projection's, not ``hidden_size / num_attention_heads``."""
    latent_dims: Value | None = None
    """Multi-latent attention's projection sizes, a dict of ``q_lora_rank`` (0: the query is not
    compressed), ``kv_lora_rank``, ``qk_head_dim`` (the part of a query/key head without rotary position),
    ``qk_rope_head_dim`` and ``v_head_dim`` (Megatron ``--q-lora-rank``, ``--kv-lora-rank``, ``--qk-head-dim``,
    ``--qk-pos-emb-head-dim``, ``--v-head-dim``, the framework's defaults where not written); None without MLA."""
    grouped_query_attention: Value | None = None
    """Grouped-query attention switched on, as written (Megatron ``--group-query-attention``): the
    config defines its KV heads (``num_kv_heads``), a model preset's do not apply."""


@dataclass
class ParallelSpec:
    """How the run is split over GPUs: tensor, pipeline, context, expert and data parallelism."""

    tensor: Value | None = None
    pipeline: Value | None = None
    virtual_pipeline: Value | None = None    # model chunks per pipeline rank (interleaving)
    context: Value | None = None
    expert: Value | None = None
    expert_tensor: Value | None = None
    data: Value | None = None
    sequence_parallel: Value | None = None
    zero_stage: Value | None = None          # DeepSpeed ZeRO 0..3
    distributed_optimizer: Value | None = None  # Megatron --use-distributed-optimizer
    offload_optimizer: Value | None = None   # none | cpu | nvme
    offload_params: Value | None = None      # none | cpu | nvme
    pipeline_engine: Value | None = None     # DeepSpeed PipelineEngine engaged
    uneven_pipeline: Value | None = None
    """The first setting that splits the layers unevenly over the pipeline stages, as written
    (Megatron ``--decoder-first-pipeline-num-layers``, ``--pipeline-model-parallel-layout``, a hybrid
    layer pattern, encoder/decoder layer counts); None: an even split."""
    pipeline_split_extra: Value | None = None
    """Extra layers counted in the pipeline split, as written: a list of the flags given
    (Megatron ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``)."""
    stage_layers: Value | None = None
    """Decoder layers of every chunk of every pipeline rank, ``[[rank 0 chunk 0, ...], ...]``, where the
    config splits them other than evenly (read by adapters/megatron/pipeline_split.py); None: even."""
    virtual_stage_layers: Value | None = None
    """Layers per virtual pipeline stage as written (Megatron ``--num-layers-per-virtual-pipeline-stage``);
    ``virtual_pipeline`` is the chunk count derived from it."""
    virtual_stages: Value | None = None
    """Virtual stages per pipeline rank as written (Megatron ``--num-virtual-stages-per-pipeline-rank``)."""


@dataclass
class BatchSpec:
    """The batch: micro batch, gradient accumulation, global batch and any ramp-up schedule."""

    micro_batch: Value | None = None
    grad_accum: Value | None = None
    global_batch: Value | None = None
    schedule: Value | None = None
    """A batch-size ramp-up or schedule, as written (Megatron ``--rampup-batch-size``,
    Megatron-DeepSpeed ``--step-batch-size-schedule``): the global batch of the first steps is the
    schedule's, not ``global_batch``. None: a constant batch."""
    trainer_micro_batch: Value | None = None
    """The Hugging Face Trainer's ``per_device_train_batch_size`` (given, or its default) when the DeepSpeed
    config it runs states its own micro batch (not "auto"): the Trainer requires the two to agree (TL137)."""
    trainer_grad_accum: Value | None = None
    """The same for ``gradient_accumulation_steps``."""


@dataclass
class PrecisionSpec:
    """Training precision: the compute dtype, the fp16/bf16 switches as written, FP8, the gradient dtype."""

    dtype: Value | None = None               # fp32 | fp16 | bf16
    fp16_enabled: Value | None = None        # as written, for conflict checks
    bf16_enabled: Value | None = None
    fp8: Value | None = None                 # None | e4m3 | hybrid | ...
    fp8_params: Value | None = None          # True: FP8 primary weights (Megatron --fp8-param-gather: TE fp8_model_init)
    grad_accum_dtype: Value | None = None    # fp32 main grads (Megatron) or as DeepSpeed's data_types
    optimizer: Value | None = None           # adam | adamw | sgd | lamb | onebitadam | adafactor | ...


@dataclass
class MemorySpec:
    """What saves activation memory: recomputation, flash attention, activation partitioning, CPU checkpointing."""

    recompute: Value | None = None           # none | selective | full
    recompute_method: Value | None = None    # uniform | block
    recompute_num_layers: Value | None = None
    flash_attention: Value | None = None
    partition_activations: Value | None = None
    cpu_checkpointing: Value | None = None
    cpu_offload_layers: Value | None = None
    """Transformer layers whose saved activations live in host memory between the passes (Megatron-Core
    ``--cpu-offloading-num-layers N`` with ``cpu_offloading_activations``, its default; Transformer Engine's
    CPU offload context). None or 0: none."""
    recompute_modules: Value | None = None
    """The submodules selective recompute runs again, as written (Megatron-Core ``--recompute-modules``,
    Bridge ``model.recompute_modules``; Megatron-Core's default ``["core_attn"]``)."""
    cross_entropy: Value | None = None
    """How the loss keeps the logits: ``fp32`` (Megatron's vocab-parallel cross entropy, fused or not, casts them
    to fp32 and keeps the fp32 softmax) or ``in-place`` (Transformer Engine's fused cross entropy writes the
    gradient into the 16-bit logits: Megatron ``--cross-entropy-loss-fusion --cross-entropy-fusion-impl te``).
    None: not stated (the fp32 form is taken)."""
    gated_activation: Value | None = None
    """How a gated MLP computes its activation: ``fused`` (one kernel that keeps only its input, the FC1 output:
    Megatron-Core's bias_swiglu_impl, its default ``bias_swiglu_fusion``) or ``unfused`` (``silu(gate) * up`` as
    separate ops, which keep the activation's output for the multiply's backward as well: Megatron-Core with
    ``--no-bias-swiglu-fusion``, core/transformer/mlp.py ``glu``). None: not stated (the fused form is taken)."""
    distribute_saved_activations: Value | None = None
    """Recomputed layers' saved inputs split over the tensor-parallel ranks (Megatron
    ``--distribute-saved-activations``): sequence parallelism is then not a free choice."""


@dataclass
class ClusterSpec:
    """The machines the run is launched on: GPU model, GPUs per node, nodes, world size."""

    gpu: Value | None = None                 # a GPU catalog id
    gpus_per_node: Value | None = None
    nodes: Value | None = None
    world_size: Value | None = None


@dataclass
class EngineSpec:
    """What runs the step, whatever file format wrote the run: the adapters set these from the
    framework's own rules (citing them in each value's provenance note); the estimator reads
    these fields and never the file format or a raw framework key.

    Megatron-DeepSpeed and GPT-NeoX are Megatron front ends on DeepSpeed's engine: their
    optimizer, gradient buffers and data-parallel exchange are DeepSpeed's."""

    optimizer_owner: Value | None = None
    """``megatron`` (Megatron's own optimizer, with or without the distributed optimizer),
    ``deepspeed-zero`` (ZeRO stage 1-3), ``deepspeed-bf16`` (DeepSpeed's BF16_Optimizer),
    ``deepspeed`` (DeepSpeed at ZeRO 0 without BF16_Optimizer: FP16_Optimizer, fp32 or DDP).
    Megatron-FSDP and torch FSDP2 under Megatron-LM are ``megatron`` with their ``shard_stage``."""
    shard_stage: Value | None = None
    """What the owner shards over ``shard_group``: 0 nothing, 1 the fp32 master weights and
    optimizer states, 2 and the gradients, 3 and the 16-bit parameters."""
    shard_group: Value | None = None
    """``dp`` (DeepSpeed's data-parallel group) or ``dp_cp`` (Megatron's distributed optimizer
    and FSDP: data x context parallel ranks)."""
    grad_dtype: Value | None = None
    """dtype of the gradient buffer accumulated over micro-batches and reduced over DP:
    ``fp32`` (Megatron's main grads, BF16_Optimizer's fp32 grads) or ``bf16`` / ``fp16``."""
    offload_optimizer: Value | None = None   # none | cpu | nvme
    offload_params: Value | None = None      # none | cpu | nvme
    attention: Value | None = None
    """``flash`` (a fused kernel that keeps no s x s scores: FlashAttention, cuDNN / TE fused
    attention), ``flash-triton`` (the same algorithm as the Triton kernel of flash-attn 1.x,
    ``flash_attn.flash_attn_triton``: Megatron-DeepSpeed's ``--use-flash-attn-triton``; slower than
    FlashAttention-2's CUDA kernels) or ``unfused`` (scores materialised, with or without a fused softmax)."""
    moe_layer_interval: Value | None = None
    """Every k-th transformer layer is a MoE layer (1: every layer)."""
    moe_probs_on_output: Value | None = None
    """The MoE router's weights multiply the experts' outputs (top-k copies x hidden), which autograd keeps for the
    weights' gradient (Megatron-Core before 0.12); False / None: the experts apply them to their activation, whose
    input they keep anyway (0.12 on)."""
    moe_unfused_permute: Value | None = None
    """The MoE token dispatcher permutes with torch gather / scatter / scatter_add over zero-filled copies (Megatron-Core's
    allgather dispatcher up to 0.8) rather than moe_utils.permute / unpermute (0.9 on)."""
    moe_dispatcher: Value | None = None
    """How the MoE token dispatcher moves and orders the routed token copies: ``allgather`` (Megatron's default
    dispatcher), ``alltoall`` (NCCL all-to-all between a permute into rank order and a sort into local-expert order),
    ``flex`` (the flex dispatcher's DeepEP or HybridEP exchange, then one permute into expert order) or
    ``flex-fused`` (HybridEP with the permutation fused into its dispatch and combine kernels)."""
    moe_layer_pattern: Value | None = None
    """Which transformer layers are MoE layers where the config lists them, a list of 1 (MoE) and 0 (dense) per
    layer (Megatron ``--moe-layer-freq "([0]*3+[1]*58)"``); None: every ``moe_layer_interval``-th layer."""
    dp_overlap: Value | None = None
    """The data-parallel gradient reduction runs during the backward pass."""
    tp_overlap: Value | None = None
    """Tensor-parallel communication overlapped with GEMMs (Megatron --tp-comm-overlap)."""
    p2p_overlap: Value | None = None
    """Pipeline sends and receives overlapped with compute under the interleaved schedule (Megatron's
    default overlap_p2p_comm; ``--no-overlap-p2p-communication`` turns it off)."""
    ep_overlap: Value | None = None
    """The expert all-to-all overlapped with another micro-batch's compute (Megatron-Core
    ``--overlap-moe-expert-parallel-comm``, Bridge ``comm_overlap.overlap_moe_expert_parallel_comm``)."""
    sequence_exchange: Value | None = None
    """How the context-parallel ranks exchange the sequence: ``ring`` (Megatron's ring attention, K/V passed
    around) or ``all-to-all`` (DeepSpeed-Ulysses, Megatron-DeepSpeed ``--ds-sequence-parallel-size``: heads and
    sequence swapped around the attention core)."""
    reduce_bucket: Value | None = None        # elements (DeepSpeed reduce_bucket_size)
    allgather_bucket: Value | None = None     # elements (DeepSpeed allgather_bucket_size)
    zero3_max_live: Value | None = None       # elements (stage3_max_live_parameters)
    zero3_prefetch: Value | None = None       # elements (stage3_prefetch_bucket_size)
    deepspeed_flag: Value | None = None
    """A Megatron front end's switch to DeepSpeed's engine, as written: Megatron-DeepSpeed's
    ``--deepspeed`` (megatron/training.py setup_model_and_optimizer: ``if args.deepspeed:
    deepspeed.initialize``); None where the format has no such switch or it is not given. Whether
    DeepSpeed's engine owns the optimizer also depends on the dialect: ``optimizer_owner``."""
    batch_owner: Value | None = None
    """Whose batch settings the run uses: ``megatron`` (Megatron's flags, also under
    Megatron-DeepSpeed, which sets DeepSpeed's batch each step), ``deepspeed`` or ``neox``."""
    device_max_connections: Value | None = None
    """``CUDA_DEVICE_MAX_CONNECTIONS`` as the run's launch environment sets it (a string, as the process
    sees it: an ``export`` before the launch, a Megatron-Bridge ``env_vars`` default); None: not set."""
    cuda_alloc_conf: Value | None = None
    """``PYTORCH_CUDA_ALLOC_CONF`` as the run's launch environment sets it (``expandable_segments:True`` ...), a
    string as the process sees it; None: not set (PyTorch's caching allocator with fixed segments)."""
    deepspeed_micro_batch: Value | None = None
    """A Megatron front end's DeepSpeed JSON ``train_micro_batch_size_per_gpu``, as written: DeepSpeed's
    own bookkeeping when Megatron owns the batch (old Megatron copies feed ``--batch-size``, and
    DeepSpeed checks its triple against this). None for a DeepSpeed or NeoX run (``batch.micro_batch``)."""


@dataclass
class RunSpec:
    """How long the run trains, and whether its shape comes from the checkpoint it loads."""

    train_iters: Value | None = None
    train_samples: Value | None = None
    shape_from_checkpoint: Value | None = None
    """The model shape and parallel sizes come from the checkpoint loaded, not from the config
    (Megatron ``--use-checkpoint-args``: load_args_from_checkpoint overrides the flags); None or
    false: the config's own."""
    fine_tuning: Value | None = None
    """Why the run starts from trained weights, spelled as the config says it (``--finetune``,
    ``--pretrained-checkpoint``, ``--sft``, ``--load with --no-load-optim``, ``finetune: true``); None: from
    scratch or resumed (a bare ``--load`` is how pre-training resumes)."""
    task: Value | None = None
    """The task an evaluation / fine-tuning entry point runs, as written (Megatron ``--task RACE``)."""
    mode: Value | None = None
    """What the file's launcher runs the arguments for, when the file says so instead of naming an entry
    point (a Megatron-LM functional-test YAML's ``MODE: pretraining | inference | rl``); None: training."""
    unmodelled: Value | None = None
    """Settings given whose effect the estimator does not model: a list of ``[flag, why]`` pairs
    (a hybrid Mamba pattern, a frozen language model, FSDP sharding), in the adapter's order."""
    other_model: Value | None = None
    """A setting only another model's training script reads (a T5 decoder, a BERT head, a vision
    encoder's input), as ``[flag, why]``: the file describes that model, not a GPT decoder."""
    launch_only: Value | None = None
    """Layout settings written but only known at launch (``--tensor-model-parallel-size $TP``), as
    ``[flag, why]`` pairs: an estimate would silently take the framework's default for them."""
    open_arguments: Value | None = None
    """The launch command may hold arguments trainlint cannot see: a list of what they come from
    (``$EXTRA_ARGS`` from the environment, ``"$@"``, a variable of an unreadable sourced file). None: every
    argument of the command is read, so a flag that is not written is not given (Megatron's checks of
    required flags)."""
    other_release: Value | None = None
    """The flags that show a Megatron-LM script is written for another release or a fork than
    the one it is checked against (assumed, no framework source beside it): a list of flags the
    assumed release does not define. The launch rules of that release speak as warnings on it."""


SECTIONS = ("model", "parallel", "batch", "precision", "memory", "cluster", "run", "engine")


@dataclass
class TrainingSpec:
    """One training run as trainlint reads it, whatever the format: each section's values with their provenance."""

    framework: str
    path: str
    label: str = ""
    """Which run in the file this is, e.g. "pretrain_gpt.py at line 42" (several per script)."""
    sources: list[str] = field(default_factory=list)
    """Every file merged into this spec (NeoX multi-file runs, --deepspeed_config JSONs)."""
    named: bool = False
    """The user named these files as the run (a file given on the command line, a declared run, a
    launch command), so they are the whole run; False for a file met walking a directory, which may
    be one part of a split config (NeoX's ``local_setup.yml``)."""
    dialect: str = ""
    """Which variant of the framework the run targets, where it matters: ``megatron-lm``
    (current), ``megatron-deepspeed`` or ``legacy`` (old Megatron-LM copies)."""
    format: str = ""
    """The config format the run was read from, when it is not named by ``framework`` (a Megatron-Bridge
    ``ConfigContainer`` YAML is format ``bridge`` on the ``megatron`` engine): which adapter spells and
    writes its changes. Empty: the format is the framework's own."""
    core_configs_only: bool = False
    """The run builds Megatron-Core's config objects (``TransformerConfig``, ``ModelParallelConfig``,
    the schedules) directly, without Megatron-LM's argument parser and ``validate_args`` (a
    Megatron-Bridge ``ConfigContainer``): only Megatron-Core's own checks apply to it, and only on the
    values its files write (an unwritten field takes the recipe's or provider's default, not
    Megatron-LM's argparse default)."""
    entry_point: str | None = None
    """The training script a launch command runs (``pretrain_gpt.py``), when there is one."""
    target: Any = None
    """The framework variant and version the config was checked against, with where that came from
    (a :class:`trainlint.frameworks.target.FrameworkTarget`); None when the adapter does not say."""
    anchor: Span | None = None
    """Where the run is declared (the launch command of a script); findings about values that
    no file sets (framework defaults) point here. None: the start of ``path``."""
    model: ModelSpec = field(default_factory=ModelSpec)
    parallel: ParallelSpec = field(default_factory=ParallelSpec)
    batch: BatchSpec = field(default_factory=BatchSpec)
    precision: PrecisionSpec = field(default_factory=PrecisionSpec)
    memory: MemorySpec = field(default_factory=MemorySpec)
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    run: RunSpec = field(default_factory=RunSpec)
    engine: EngineSpec = field(default_factory=EngineSpec)
    settings: dict[str, Value] = field(default_factory=dict)
    """Framework-specific settings that launch-time checks need but that have no common
    meaning, keyed by the framework's own name (``zero_optimization.overlap_comm``,
    ``--recompute-activations``)."""

    unresolved: dict[str, Provenance] = field(default_factory=dict)
    """Settings that are written but not known statically (``--recompute-method $M``), keyed like
    ``settings``: a rule must not take the framework default for these."""

    def get(self, dotted: str) -> Value | None:
        """``spec.get("parallel.tensor")``."""
        section, _, name = dotted.partition(".")
        return getattr(getattr(self, section), name)

    def set(self, dotted: str, value: Value | None) -> None:
        section, _, name = dotted.partition(".")
        obj = getattr(self, section)
        if not hasattr(obj, name):
            raise AttributeError(f"TrainingSpec has no field {dotted!r}")
        setattr(obj, name, value)

    def value(self, dotted: str, fallback: Any = None) -> Any:
        """The bare value of a field, or ``fallback`` when nothing says."""
        entry = self.get(dotted)
        return fallback if entry is None else entry.value

    def copy(self) -> TrainingSpec:
        """A copy whose fields, settings and sources can be set without touching this run, and that
        later changes to this run do not reach. Values are immutable, so the sections and the
        dictionaries are copied, not the values (a deep copy cost most of a check's time)."""
        out = _shallow(self)
        for section in SECTIONS:
            setattr(out, section, _shallow(getattr(self, section)))
        out.settings = self.settings.copy()  # the table's own copy: a traced one stays traced (layout.reads)
        out.unresolved = self.unresolved.copy()
        out.sources = list(self.sources)
        return out

    def items(self) -> Iterator[tuple[str, Value]]:
        """Every set field as (``section.name``, Value)."""
        for section in SECTIONS:
            obj = getattr(self, section)
            for name in field_names(obj):
                entry = getattr(obj, name)
                if entry is not None:
                    yield f"{section}.{name}", entry

    def fingerprint(self) -> str:
        """Everything about this run but where it is written: framework, dialect, entry point, every
        value with its origin and spelling, the unresolved settings. Two specs with the same
        fingerprint get the same estimate, the same fixes and the same launch-time findings (up to
        positions), so results computed from a spec can be memoised on it across re-lints."""
        import json

        values = [(name, entry.value, entry.provenance.origin.value, entry.provenance.key) for name, entry in self.items()]
        settings = [(name, entry.value, entry.provenance.origin.value, entry.provenance.key)
                    for name, entry in sorted(self.settings.items())]
        unresolved = sorted((name, prov.origin.value, prov.key or "") for name, prov in self.unresolved.items())
        return json.dumps([self.framework, self.format, self.dialect, self.entry_point, values, settings, unresolved],
                          default=repr, separators=(",", ":"))

    def to_dict(self) -> dict:
        """A JSON-able view (values plus where they came from), matching schemas/spec.schema.json."""
        out: dict[str, Any] = {"framework": self.framework, "path": self.path, "label": self.label,
                               "sources": list(self.sources)}
        if self.dialect:
            out["dialect"] = self.dialect
        if self.entry_point:
            out["entry_point"] = self.entry_point
        if self.target is not None:
            out["target"] = self.target.to_dict()
        for section in SECTIONS:
            obj = getattr(self, section)
            out[section] = {}
            for f in fields(obj):
                entry = getattr(obj, f.name)
                if entry is not None:
                    out[section][f.name] = _value_dict(entry)
        out["settings"] = {k: _value_dict(v) for k, v in self.settings.items()}
        return out


def _shallow(obj: Any) -> Any:
    """``copy.copy`` of a plain dataclass instance (a new instance with the same attribute dict),
    without copy's generic protocol (``__reduce_ex__``, ~5x slower): every run's spec is copied
    for the findings kept across re-lints and for each estimate kept."""
    out = object.__new__(type(obj))
    # a copy is no read of a traced section (layout.reads): its attribute dicts are taken as they are
    object.__getattribute__(out, "__dict__").update(object.__getattribute__(obj, "__dict__"))
    return out


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(obj: Any) -> tuple[str, ...]:
    """A section's field names in order (``dataclasses.fields`` filters the class's fields on every
    call; :meth:`TrainingSpec.items` is asked for every estimate's fingerprint)."""
    cls = type(obj)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(obj))
    return names


def _value_dict(entry: Value) -> dict:
    prov = entry.provenance
    data: dict[str, Any] = {"value": entry.value, "origin": prov.origin.value}
    if prov.path:
        data["path"] = prov.path
    if prov.span:
        data["line"], data["column"] = prov.span.line, prov.span.column
    if prov.key:
        data["key"] = prov.key
    if prov.note:
        data["note"] = prov.note
    return data
