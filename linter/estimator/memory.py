"""Memory per GPU, by component, for every pipeline stage.

Pure functions of :class:`~trainlint.estimator.inputs.Inputs`. Bytes everywhere.

Byte conventions of each optimizer owner (per parameter held by the GPU, before sharding), read
from the frameworks' own sources; the formulas read the engine fields (owner, shard stage and
group, gradient dtype), never the file format:

* Megatron-LM (megatron/training/theoretical_memory_usage.py, num_bytes_per_parameter, and
  docs/user-guide/features/dist_optimizer.md at d98e8a6): bf16 params + fp32 main grads + fp32
  main params + fp32 Adam m, v = 2 + 4 + 12 = 18 bytes, or 6 + 12/d with
  --use-distributed-optimizer; fp16 params and grads: 20, or 4 + 16/d; fp32: 16, or 8 + 8/d.
* DeepSpeed (deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs,
  comment "18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit"):
  16-bit params and grads (2 + 2) plus 12 bytes of optimizer state (fp32 master, m, v) and the
  fp32 gradient partition the optimizer step uses (4); ZeRO shards the optimizer (stage >= 1),
  the gradients (>= 2) and the parameters (3) over the data-parallel group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainlint.estimator import coefficients as C
from trainlint.estimator.inputs import Inputs

COMPONENTS = ("params", "grads", "optimizer", "activations", "buffers", "overhead")


@dataclass
class StageMemory:
    stage: int
    layers: int
    params: float
    grads: float
    optimizer: float
    activations: float
    buffers: float
    overhead: float
    detail: dict[str, float] = field(default_factory=dict)
    in_flight: float = 1.0
    local_params: float = 0.0
    cache: float = 0.0
    """Blocks the caching allocator keeps reserved beyond ``total`` while the GPU has room, and
    releases when an allocation fails (ALLOCATOR_CACHE): in what a run shows, not in what it needs;
    at most the device memory left over ``total`` (the allocator frees cached blocks and retries
    before a cudaMalloc fails, c10/cuda/CUDACachingAllocator.cpp)."""

    @property
    def total(self) -> float:
        """What the stage needs: the bytes it allocates, the fragmentation the allocator cannot
        release, the CUDA context and NCCL's buffers. The verdicts (fits, TL201) compare this."""
        return self.params + self.grads + self.optimizer + self.activations + self.buffers + self.overhead

    @property
    def observed(self) -> float:
        """What nvidia-smi shows at the peak of a run with room to spare: the total plus the
        releasable allocator cache."""
        return self.total + self.cache

    @property
    def reserved(self) -> float:
        """What torch.cuda.max_memory_reserved would show: the observed peak without the CUDA
        context and NCCL buffers (which live outside the caching allocator)."""
        return self.observed - self.detail.get("cuda_context", 0.0) - self.detail.get("nccl", 0.0)


# --------------------------------------------------------------------------- parameters


_LAYER_PARAMS: dict[tuple, tuple[float, float, float]] = {}


def layer_params(i: Inputs) -> tuple[float, float, float]:
    """(tensor-parallel-split, replicated, expert) parameters of one layer, whole model, averaged
    over the layers when only every k-th layer is a MoE layer (the others keep a dense MLP).
    Memoised on what it reads: a layout search asks for the same model thousands of times."""
    key = (i.hidden, i.heads, i.kv_heads, i.head_dim, i.gated, i.ffn, i.experts, i.moe_ffn, i.moe_interval, i.layers,
           i.moe_layers, i.moe_shared_ffn, i.mla_q_rank, i.mla_kv_rank, i.mla_qk_head, i.mla_rope_head, i.mla_v_head)
    found = _LAYER_PARAMS.get(key)
    if found is None:
        if len(_LAYER_PARAMS) > 4096:
            _LAYER_PARAMS.clear()
        found = _LAYER_PARAMS[key] = _layer_params(i)
    return found


def _layer_params(i: Inputs) -> tuple[float, float, float]:
    h = i.hidden
    attn = float(h * (i.q_dim + 2 * i.kv_dim) + i.q_dim * h)
    mats = 3 if i.gated else 2
    norms = float(2 * h)
    if i.mla:
        split_attn, rep_attn = mla_params(i)
        attn, norms = split_attn, norms + rep_attn
    if i.moe:
        f = i.moe_fraction
        expert = f * i.experts * mats * h * i.moe_ffn
        shared = f * mats * h * i.moe_shared_ffn  # shared experts: a TP-split MLP beside the routed ones
        return float(attn + (1 - f) * mats * h * i.ffn + shared), float(norms + f * h * i.experts), float(expert)
    return float(attn + mats * h * i.ffn), float(norms), 0.0


def mla_params(i: Inputs) -> tuple[float, float]:
    """(tensor-parallel-split, replicated) parameters of one multi-latent attention block (DeepSeek-V2 Sec. 2.1;
    Megatron-Core multi_latent_attention.py): the down projections to the compressed query and key/value
    latents (the shared rotary key rides with the latter) and their norms are duplicated on every TP rank
    (``parallel_mode='duplicated'``); the up projections to every head's query, key and value and the output
    projection are split. Without a query rank the query is projected from the hidden state directly."""
    h, n = i.hidden, i.heads
    qk = i.mla_qk_head + i.mla_rope_head
    rep = h * (i.mla_kv_rank + i.mla_rope_head) + i.mla_kv_rank
    if i.mla_q_rank:
        rep += h * i.mla_q_rank + i.mla_q_rank
        split = i.mla_q_rank * n * qk
    else:
        split = h * n * qk
    split += i.mla_kv_rank * n * (i.mla_qk_head + i.mla_v_head) + n * i.mla_v_head * h
    return float(split), float(rep)


def layer_params_per_gpu(i: Inputs) -> float:
    split, rep, expert = layer_params(i)
    return split / i.tp + rep + expert / (i.ep * i.etp)


def uneven_split(i: Inputs) -> tuple[int, ...] | None:
    """The config's own split of the layers over the ranks (:attr:`Inputs.stage_split`) when it holds for
    this layout's PP and VPP, else None (an even split)."""
    if i.stage_split and i.split_layout == (i.pp, i.vpp) and len(i.stage_split) == i.pp:
        return i.stage_split
    return None


def stage_layers(i: Inputs) -> list[int]:
    split = uneven_split(i)
    if split is not None:
        return list(split)
    base, extra = divmod(i.layers, i.pp)
    return [base + (1 if s < extra else 0) for s in range(i.pp)]


def stage_kinds(i: Inputs) -> list[tuple[int, int, int]]:
    """(a representative stage, its layers, how many stages are like it), in stage order. The
    stages of a layout come in at most four kinds whose time per micro-batch is identical within a
    kind (the first stage, middle stages with one layer more or not, the last stage), so the step
    time is computed once per kind, not once per stage (PP 64 costs what PP 4 does)."""
    split = uneven_split(i)
    if split is not None:
        return _split_kinds(split)
    base, extra = divmod(i.layers, i.pp)
    last = i.pp - 1
    kinds = [(0, base + (1 if extra > 0 else 0), 1)]
    if last == 0:
        return kinds
    longer = max(0, min(extra, last) - 1)  # middle stages 1..extra-1 hold one layer more
    if longer:
        kinds.append((1, base + 1, longer))
    shorter = last - 1 - longer
    if shorter:
        kinds.append((1 + longer, base, shorter))
    kinds.append((last, base + (1 if last < extra else 0), 1))
    return kinds


def _split_kinds(split: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """:func:`stage_kinds` of an uneven split: the first and the last rank on their own, the middle ranks
    in runs of equal layer counts (the first rank of a run holds the most micro-batches in flight)."""
    last = len(split) - 1
    kinds = [(0, split[0], 1)]
    s = 1
    while s < last:
        end = s
        while end + 1 < last and split[end + 1] == split[s]:
            end += 1
        kinds.append((s, split[s], end - s + 1))
        s = end + 1
    if last > 0:
        kinds.append((last, split[last], 1))
    return kinds


def stage_params_per_gpu(i: Inputs, stage: int, layers: int) -> float:
    n = layers * layer_params_per_gpu(i)
    emb = i.vocab * i.hidden / i.tp
    if stage == 0:
        n += emb
    if stage == i.pp - 1 and (not i.tied or i.pp > 1):
        n += emb  # untied output layer, or the tied copy Megatron/DeepSpeed keep on the last stage
    return n


def total_params(i: Inputs) -> float:
    split, rep, expert = layer_params(i)
    emb = i.vocab * i.hidden * (1 if i.tied else 2)
    return i.layers * (split + rep + expert) + emb + i.hidden


def active_params(i: Inputs) -> float:
    """Parameters each token goes through (MoE: top-k experts)."""
    split, rep, expert = layer_params(i)
    if i.moe:
        expert = expert * i.top_k / i.experts
    emb = i.vocab * i.hidden * (1 if i.tied else 2)
    return i.layers * (split + rep + expert) + emb + i.hidden


def shard_group(i: Inputs) -> int:
    """Ranks the optimizer owner shards over (engine.shard_group): Megatron's distributed optimizer
    over DP x CP; DeepSpeed (ZeRO, BF16_Optimizer) over DP."""
    return max(1, i.dp * (i.cp if i.shard_cp else 1))


def _optimizer_state_bytes(optimizer: str) -> float:
    name = optimizer.lower()
    if "8bit" in name or "8-bit" in name or name in ("adam8bit", "adamw8bit"):
        return 2.0
    if name.startswith("sgd") or name in ("lion", "muon"):
        return 4.0
    if name == "adafactor":
        return 0.5  # factored second moment: ~ (rows + cols) per matrix
    return 8.0  # Adam, AdamW, LAMB, 1-bit Adam: two fp32 moments


def model_state_bytes(n: float, *, dtype: str = "bf16", grad_bytes: float = 2.0, optimizer: str = "adam",
                      shard_stage: int = 0, shards: int = 1, offload_opt: str = "none",
                      offload_params: str = "none") -> tuple[float, float, float]:
    """THE static-memory formula of trainlint: (params, grads, optimizer) bytes of ``n`` parameters on
    one GPU. The estimator (:func:`static_bytes`, from a run's engine fields), the layout search (through
    the estimator) and ``trainlint plan`` without a layout (:func:`planning_state_bytes_per_param`) all
    call it; nothing else counts bytes per parameter.

    * 16-bit weights (2 bytes; 4 in fp32) and a gradient buffer in ``grad_bytes`` (Megatron's fp32
      main grads, BF16_Optimizer's fp32 grads, DeepSpeed ZeRO's 16-bit grads);
    * the optimizer's own bytes: fp32 master weights (mixed precision), the optimizer states, and an
      fp32 copy of the gradients where the buffer is 16-bit (DeepSpeed's fp32 gradient partition,
      Megatron's fp32 main grads of fp16 params): 4 + 8 + 4 for Adam;
    * sharded over ``shards`` ranks from ``shard_stage`` on: 1 the optimizer bytes, 2 the gradients,
      3 the weights; offloaded optimizer state (and ZeRO-3 parameters) leave the GPU."""
    d = max(1, shards)
    states = _optimizer_state_bytes(optimizer)
    mixed = dtype in ("bf16", "fp16")
    weight_b = 2.0 if mixed else 4.0
    grad_b = grad_bytes if mixed else 4.0
    opt_b = states + (4.0 if mixed else 0.0)  # the fp32 gradient copy: see step_grad_copy_bytes
    params = weight_b * n / (d if shard_stage >= 3 else 1)
    grads = grad_b * n / (d if shard_stage >= 2 else 1)
    opt = opt_b * n / (d if shard_stage >= 1 else 1)
    if offload_opt in ("cpu", "nvme"):
        opt = 0.0
        if shard_stage >= 2:
            grads = 0.0  # ZeRO-Offload: gradients go to the CPU partition bucket by bucket (the bucket is a buffer)
    if offload_params in ("cpu", "nvme") and shard_stage >= 3:
        params = 0.0
    return params, grads, opt


def static_bytes(i: Inputs, n: float, expert: float = 0.0) -> tuple[float, float, float]:
    """(params, grads, optimizer) bytes on one GPU holding ``n`` parameters, ``expert`` of them routed-expert
    parameters, from the run's engine fields (:func:`model_state_bytes`): the expert ones sharded over the
    expert data-parallel group (:func:`expert_shard_group`), the others over :func:`shard_group`."""
    params, grads, opt = model_state_bytes(n - expert, dtype=i.dtype, grad_bytes=i.grad_bytes, optimizer=i.optimizer,
                                           shard_stage=i.shard_stage, shards=shard_group(i),
                                           offload_opt=i.offload_opt, offload_params=i.offload_params)
    if expert > 0:
        moe = model_state_bytes(expert, dtype=i.dtype, grad_bytes=i.grad_bytes, optimizer=i.optimizer,
                                shard_stage=i.shard_stage, shards=expert_shard_group(i), offload_opt=i.offload_opt,
                                offload_params=i.offload_params)
        params, grads, opt = params + moe[0], grads + moe[1], opt + moe[2]
    if i.owner == "deepspeed-bf16" and i.grad_accum > 1:
        # BF16_Optimizer's 16-bit .grad of every parameter, kept beside its fp32 buffer into the next micro-batch
        grads += C.BF16_OPTIMIZER_LP_GRAD_BYTES * n
    return params, grads, opt


# -- MoE (s33-moe)
def expert_shard_group(i: Inputs) -> int:
    """Ranks a routed expert's parameters are replicated on, which its optimizer owner shards them over: the
    expert data-parallel group, not the data-parallel one. Megatron-Core lays the experts out on a grid of their
    own over the same ranks, (TP x CP x DP) / (EP x expert-TP) per pipeline stage (core/parallel_state.py
    initialize_model_parallel: expert_data_parallel_size = world / (PP x ETP x EP); the distributed optimizer and
    DDP give the expert parameters' buffers the expert data-parallel group: core/distributed/
    distributed_data_parallel.py ``expert_parallel_buffers`` with ``intra_expt_dp_group``); core_v0.6's experts,
    TP-split over TP and EP carved from DP, give the same DP x CP / EP. DeepSpeed carves the expert-parallel
    group out of the data-parallel ranks and ZeRO partitions the expert parameter groups over the rest
    (deepspeed/utils/groups.py _get_expert_data_parallel_group; runtime/engine.py _configure_moe_settings):
    DP / EP. With EP 64 on 64 data-parallel ranks nothing shards an expert's fp32 master weights and moments."""
    if not i.moe or i.ep * i.etp <= 1:
        return shard_group(i)
    if i.owner == "megatron":
        return max(1, (shard_group(i) * i.tp) // (i.ep * i.etp))
    return max(1, shard_group(i) // i.ep)


def stage_expert_params_per_gpu(i: Inputs, layers: int) -> float:
    """The routed-expert parameters one GPU of a stage holding ``layers`` layers keeps."""
    if not i.moe:
        return 0.0
    return layers * layer_params(i)[2] / (i.ep * i.etp)


def planning_state_bytes_per_param(dtype: str = "bf16", optimizer: str = "adam") -> float:
    """Bytes per parameter of the weights, gradients and optimizer states with nothing known of the
    layout (``trainlint plan`` without a config): mixed precision with 16-bit gradients, the engine
    that needs the least (DeepSpeed ZeRO's 2 + 2 + 12 for Adam: seed 000's 16), fully sharded, so
    that N parameters need at least N x this / GPU memory GPUs. The same formula as every estimate."""
    return float(sum(model_state_bytes(1.0, dtype=dtype, grad_bytes=2.0, optimizer=optimizer)))


def te_fp8_weight_cache_bytes(i: Inputs, layers: int) -> float:
    """Transformer Engine FP8 with 16-bit primary weights keeps, beside each linear layer's weight,
    its FP8 cast and the FP8 transpose (1 + 1 bytes per weight), cached between micro-batches (TE
    module/base.py set_fp8_weights: "weight1_fp8 and weight1_t_fp8, cache the FP8 values and
    transposed FP8 values in between microbatches", skipped when primary_weights_in_fp8). With FP8
    primary weights (Megatron --fp8-param-gather, fp8_model_init) the FP8 weight and its transpose
    replace the 16-bit weight: 2 bytes, as counted. Embeddings, the output layer and norms are not
    TE FP8 linears.

    Under full sharding (ZeRO-3 / FSDP: ``shard_stage`` 3) the weights exist unsharded only while their
    layer runs, and so do their FP8 casts: one layer's worth, not the stage's (Megatron-FSDP keeps no
    FP8 transpose cache unless ``keep_fp8_transpose_cache``, which "will cause (number of parameter x 1
    Byte) of memory overhead": core/distributed/fsdp/src/README.md; a cache of every layer would be the
    unsharded model again)."""
    if not i.fp8 or i.fp8_params:
        return 0.0
    split, _, expert = layer_params(i)
    held = min(layers, 1) if i.shard_stage >= 3 else layers
    return 2.0 * held * (split / i.tp + expert / (i.ep * i.etp))


def _fp32_grad_copy_bytes(i: Inputs) -> float:
    """Bytes per parameter of the fp32 copy of a 16-bit gradient buffer the optimizer steps on."""
    if i.dtype not in ("bf16", "fp16"):
        return 0.0
    if i.owner == "deepspeed" and i.shard_stage == 0:
        return C.FP16_OPTIMIZER_STEP_BYTES
    if i.owner == "deepspeed-zero" and i.shard_stage in (1, 2) and i.grad_bytes < 4.0:
        return C.ZERO_STEP_GRAD_BYTES
    return 4.0 if i.grad_bytes < 4.0 else 0.0


def step_grad_copy_bytes(i: Inputs, n: float, expert: float = 0.0) -> float:
    """The fp32 copy of a 16-bit gradient buffer (fp16 training, Megatron --grad-reduce-in-bf16,
    DeepSpeed ZeRO's 16-bit gradients) on a GPU holding ``n`` parameters: a transient of the
    optimizer step, never alive with the activations, sharded like the optimizer states.

    * Megatron-LM makes it at the step (core/optimizer/distrib_optimizer.py and optimizer.py,
      _copy_model_grads_to_main_grads: "shard_main_param.grad = shard_model_grad.float()") and
      drops it before the next forward (zero_grad(set_to_none=True) on the fp32 main-parameter
      groups, called by train_step);
    * DeepSpeed's FP16_Optimizer (fp16/fused_optimizer.py) and ZeRO 1/2 (zero/stage_1_and_2.py
      step) flatten the gradients to fp32 for the step and then "get rid of the fp32 gradients.
      Not needed anymore" (``.grad = None``).

    Megatron's table (dist_optimizer.md, "fp16 param, fp16 grads: 4 + 16/d") and DeepSpeed's
    estimate_zero2_model_states_mem_needs count it in the bytes per parameter; at the activation
    peak it is not there (one_stage puts it where it outgrows the activations)."""
    if i.offload_opt in ("cpu", "nvme"):
        return 0.0  # offloaded: the step runs on the host
    if i.shard_stage < 1:
        return _fp32_grad_copy_bytes(i) * n
    # the expert parameters' share is sharded over their own data-parallel group (expert_shard_group)
    return _fp32_grad_copy_bytes(i) * ((n - expert) / shard_group(i) + expert / expert_shard_group(i))


# --------------------------------------------------------------------------- activations


def moe_tokens_per_gpu(i: Inputs) -> float:
    """Tokens one GPU's experts take per MoE layer and micro-batch (each counted once, before top-k): the
    tokens of the GPU's own sequence shard (1/TP with sequence parallelism) dispatched over the expert-parallel
    group, which on average returns as many, then gathered over the expert-tensor-parallel group
    (core/transformer/moe/token_dispatcher.py: the all-to-all over EP, the all-gather over ETP; the allgather
    dispatcher of core_v0.6 gathers over TP = ETP the same way). Without sequence parallelism the TP ranks
    already hold the same tokens."""
    sb = i.seq / i.cp * i.micro
    if i.sp and i.tp > 1:
        return sb / i.tp * i.etp
    return sb * max(1.0, i.etp / i.tp)


def layer_activation_bytes(i: Inputs, *, keep_scores: bool) -> float:
    """Bytes one layer stores for one micro-batch without recompute (Korthikanti et al. 2022,
    Sec. 4, tensor by tensor), generalised to GQA, gated MLPs, any FFN size, MoE, CP and SP.
    Reduces to sbh(10 + 24/t + 5as/(ht)) for a GPT-3 layer with TP and no SP."""
    a = i.act_bytes
    # What a linear layer keeps of its input for the weight-gradient GEMM: 16-bit, or with
    # Transformer Engine FP8 (precision.fp8 is only set for TE: Megatron --fp8-format, NeoX te_*)
    # the FP8 cast of it, 1 byte (TE transformer_engine/pytorch/module/linear.py, _Linear.forward:
    # "saved_inputmat = inputmat" after quantising, the row-wise copy discarded "since it is not
    # needed in backward pass"; layernorm_linear.py saves ln_out likewise). Tensors kept by non-TE
    # ops (attention's Q, K, V and output, the activation function's input, norm inputs) stay 16-bit.
    lin = 1 if i.fp8 else a
    sb = i.seq / i.cp * i.micro
    t = i.tp
    rep = t if i.sp else 1  # replicated tensors (norm inputs, dropout masks) split only with SP
    h = i.hidden
    mask = sb * h / rep if i.residual_dropout else 0.0  # residual dropout mask (1 byte); none at p = 0
    attention = (lin * sb * h / rep          # norm output = QKV input
                 + a * sb * i.q_dim / t      # Q
                 + 2 * a * sb * i.kv_dim / t  # K and V
                 + a * sb * i.o_dim / t      # attention output (kept by the attention kernel) = projection input
                 + mask)
    if lin != a:
        attention += lin * sb * i.o_dim / t  # FP8: the projection keeps its own FP8 copy of that output
    if keep_scores:
        # softmax output (2), dropout mask (1), dropout output (2) per score: 5 a s^2 b / t
        attention += 5 * (i.heads / t) * sb * i.seq * (a / 2)
    elif i.flash:
        attention += 4 * (i.heads / t) * sb  # fp32 log-sum-exp kept by fused attention
    # gated: gate and up outputs (the activation's input) and their product (the FC2 input); else
    # the activation's input and output (the FC2 input, an FP8 copy under TE FP8)
    per_width = mlp_bytes_per_width(i, sb)
    dense_inner = per_width * i.ffn / t
    if i.moe:
        f = i.moe_fraction  # MoE layers hold top-k expert activations, the others a dense MLP
        tokens = moe_tokens_per_gpu(i)
        # the experts' FC1 input: the dispatched (permuted) copies of the tokens routed here, kept for the
        # weight gradient of the grouped GEMM (FP8 under TE), beside the router's input (the norm output)
        dispatched = lin * tokens * i.top_k * h
        if i.moe_probs_on_output:
            # the experts' output (top-k 16-bit copies, before the expert-TP reduction), kept by the router weights'
            # multiply for their gradient (Megatron-Core before 0.12: engine.moe_probs_on_output)
            dispatched += a * tokens * i.top_k * h
        # the shared experts keep what a dense MLP of their width keeps
        shared = per_width * i.moe_shared_ffn / t
        inner = f * (per_width / sb * tokens * i.moe_ffn * i.top_k / i.etp + dispatched + shared) + (1 - f) * dense_inner
    else:
        inner = dense_inner
    mlp = lin * sb * h / rep + inner + mask  # norm output = FC1 input, MLP dropout mask
    norms = 2 * a * sb * h / rep
    return attention + mlp + norms


def mlp_bytes_per_width(i: Inputs, sb: float) -> float:
    """Bytes an MLP keeps per unit of its inner width for ``sb`` tokens: gated, the gate and up outputs (the
    activation's input) and their product (the FC2 input; an FP8 copy under TE FP8); else the activation's input
    and output. An unfused gated activation (``silu(gate) * up`` as separate ops: Megatron-Core's glu() without
    bias_swiglu_fusion, nanotron's GLUActivation, Hugging Face's LlamaMLP) keeps the silu output too, for the
    multiply's backward (Inputs.gated_unfused)."""
    a = i.act_bytes
    lin = 1 if i.fp8 else a
    kept = a * (2 if i.gated else 1) + lin
    if i.gated and i.gated_unfused:
        kept += a
    return sb * kept


def recomputed_module_bytes(i: Inputs) -> float:
    """What selective recompute of ``i.recompute_modules`` other than core_attn keeps from being stored, per
    layer and micro-batch (Megatron-Core TransformerConfig.recompute_modules): "mlp" the dense MLP's inner
    activations (normal checkpointing: its input stays), "moe" the MoE layer's expert activations and dispatched
    tokens (its input, the norm output, stays), "moe_act" the experts' activation output (the FC2 input;
    output-discarding checkpointing), "layernorm" the MoE layers' separate pre-MLP norm output (Transformer
    Engine fuses the other norms into their linear layers, where there is no separate output to discard).
    "mla_up_proj" the query, key and value the multi-latent attention's up projections produce (Megatron-Core
    multi_latent_attention.py: with recompute_up_proj the up projections and RoPE run under
    CheckpointWithoutOutput, whose outputs are discarded once core attention has run and recomputed for its
    backward; the latent inputs the checkpoint keeps are not in the estimate's layer either). Megatron-Core takes
    mla_up_proj only with --multi-latent-attention (a startup rule reports it otherwise). "shared_experts" touches a
    part the estimate does not describe apart: nothing."""
    modules = set(i.recompute_modules)
    if not modules - {"core_attn"}:
        return 0.0
    a = i.act_bytes
    lin = 1 if i.fp8 else a
    sb = i.seq / i.cp * i.micro
    t = i.tp
    rep = t if i.sp else 1
    per_width = mlp_bytes_per_width(i, sb)
    f = i.moe_fraction if i.moe else 0.0
    saved = 0.0
    if "mlp" in modules:
        saved += (1 - f) * per_width * i.ffn / t
    if "mla_up_proj" in modules:
        saved += a * sb * (i.q_dim + 2 * i.kv_dim) / t  # Q, K and V as layer_activation_bytes counts them
    if i.moe:
        tokens = moe_tokens_per_gpu(i)
        if "moe" in modules:
            saved += f * (per_width / sb * tokens * i.moe_ffn * i.top_k / i.etp + lin * tokens * i.top_k * i.hidden)
        elif "moe_act" in modules:
            saved += f * lin * tokens * i.top_k * i.moe_ffn / i.etp
        if "layernorm" in modules:
            saved += f * a * sb * i.hidden / rep
    return saved


def layer_input_bytes(i: Inputs) -> float:
    """A checkpointed layer keeps only its input (split over TP with SP or partitioned activations),
    on the GPU unless DeepSpeed's ``cpu_checkpointing`` moves it to the host: activation_checkpointing/
    checkpointing.py (CheckpointFunction.forward, since DeepSpeed 0.5.2 with or without partitioning:
    ``partition.cpu() if CPU_CHECKPOINT``, ``inputs_cuda = ... .cpu()``); the layer being recomputed
    copies its own input back, which the recompute workspace holds."""
    if i.cpu_checkpointing:
        return 0.0
    split = i.tp if (i.sp or i.partition_activations) else 1
    return i.act_bytes * i.seq / i.cp * i.micro * i.hidden / split


def in_flight(i: Inputs, stage: int) -> float:
    """Micro-batches whose activations a stage holds at its peak: 1F1B keeps p - stage (at most
    m); the interleaved schedule adds (p - 1)/v (Megatron: x (1 + (p-1)/(p v)) on stage 0)."""
    m = i.grad_accum
    if i.pp <= 1:
        return 1.0
    base = float(i.pp - stage)
    if i.vpp > 1:
        base += (i.pp - 1) / i.vpp
    return min(float(m), base) if m >= 1 else base


Cache = dict
"""A memo a caller may pass for many layouts of one run in one context (a layout search): per-layer
costs keyed by what varies between layouts. Never shared across runs, GPUs or coefficients."""


def _layer_acts(i: Inputs, cache: Cache | None) -> tuple[float, float, float]:
    """(stored without recompute, stored with selective recompute, checkpointed input) of one layer."""
    key = ("acts", i.tp, i.cp, i.micro, i.sp, i.etp, i.recompute, i.partition_activations, i.cpu_checkpointing,
           i.residual_dropout, i.recompute_modules, i.gated_unfused)
    found = cache.get(key) if cache is not None else None
    if found is None:
        full = layer_activation_bytes(i, keep_scores=not i.flash)
        if i.recompute == "selective":
            # the scores are recomputed with core_attn (Megatron-Core's default module), kept without it
            keep = not i.flash and "core_attn" not in i.recompute_modules
            selective = layer_activation_bytes(i, keep_scores=keep) - recomputed_module_bytes(i)
        else:
            selective = full
        found = (full, selective, layer_input_bytes(i))
        if cache is not None:
            cache[key] = found
    return found


def offloaded_layers(i: Inputs, layers: int) -> float:
    """Layers' worth of saved activations a stage keeps in host memory at its peak under Megatron-Core's CPU
    activation offloading (``--cpu-offloading-num-layers N``: Transformer Engine's get_cpu_offload_context with
    its double-buffered group handler): the first N layers' saved tensors go to the host after their forward
    and come back one layer ahead of their backward, so besides the L - N layers kept, one offloaded layer is
    on the GPU at a time (the one being copied out while the next runs). Megatron-Core takes it only with
    N < num_layers, no recompute and one pipeline stage (transformer_config.py), which are not re-checked
    here: the launch rules report them."""
    n = min(i.cpu_offload_layers, layers - 1)
    if n <= 0 or i.recompute == "full":
        return 0.0
    return float(n - 1)


def stage_activation_bytes(i: Inputs, stage: int, layers: int, cache: Cache | None = None) -> tuple[float, dict[str, float]]:
    full, stored_layer, checkpoint = _layer_acts(i, cache)
    if i.recompute == "full":
        n_rec = min(layers, i.recompute_layers)
        if i.recompute_method == "block":
            stored = n_rec * checkpoint + (layers - n_rec) * stored_layer
            group = 1
        else:
            groups = -(-layers // max(1, n_rec))
            stored = groups * checkpoint
            group = n_rec
        workspace = C.ACTIVATION_WORKSPACE_LAYERS * group * full
    else:
        stored = max(0, layers - offloaded_layers(i, layers)) * stored_layer
        workspace = C.ACTIVATION_WORKSPACE_LAYERS * (full - stored_layer) + 0.0
    flight = in_flight(i, stage)
    detail = {"stored_per_microbatch": stored, "workspace": workspace}
    total = flight * stored + workspace
    sb = i.seq / i.cp * i.micro
    rep = i.tp if i.sp else 1
    if stage == 0 and i.residual_dropout:  # at p = 0 the embedding's dropout returns its input
        emb = flight * (sb * i.hidden / rep + i.act_bytes * sb * i.hidden / rep)  # dropout mask + output
        detail["embedding"] = emb
        total += emb
    if stage == i.pp - 1:
        per_logit = C.LOGITS_IN_PLACE_BYTES_PER_ELEMENT if i.logits_in_place else C.LOGITS_BYTES_PER_ELEMENT
        logits = per_logit * sb * i.vocab / i.tp + i.act_bytes * sb * i.hidden
        detail["logits"] = logits
        total += logits
    return total, detail


# --------------------------------------------------------------------------- buffers, overhead


def buffer_bytes(i: Inputs, n_local: float) -> float:
    """The optimizer owner's communication buffers and ZeRO-3 live parameters."""
    if i.owner == "deepspeed-zero":
        out = 0.0
        if i.shard_stage in (1, 2) and i.dp > 1:
            out += 2 * min(i.reduce_bucket, n_local) + 2 * min(i.allgather_bucket, n_local)
        if i.shard_stage >= 3:
            unit = layer_params_per_gpu(i)
            live = min(i.max_live_params, 2 * unit + i.prefetch_bucket, n_local * i.dp)
            out += 2 * live + 2 * min(i.reduce_bucket, n_local * i.dp)
        return out
    return 0.0


def communicator_count(i: Inputs) -> int:
    groups = [i.tp, i.pp, i.dp, i.cp, i.ep if i.moe else 1]
    count = sum(1 for g in groups if g > 1)
    if i.pp > 1:
        count += 1  # embedding group (first and last stage)
    return count


def fragmentation_bytes(per_step: float, buffers: float, *, expandable: bool = False) -> float:
    """What the caching allocator holds on top of what it hands out and frees every step (activations,
    workspaces, transient buffers) and cannot give back when an allocation fails: free pieces of split
    blocks in segments still in use (ALLOCATOR_FRAGMENTATION). Not charged on the contiguous parameter /
    gradient buffers and optimizer state allocated once. None with ``expandable_segments:True``: before it
    raises out-of-memory the allocator unmaps the physical pages of every free block of an expandable segment,
    split or not (c10/cuda/CUDACachingAllocator.cpp release_blocks: "if (block->expandable_segment_) ...
    to_unmap", where fixed segments release only blocks that are not split), so a free piece is given back to
    within a page (2 MiB); Megatron-Bridge sets it for the recipes that fragmentation would stop
    (scripts/performance/perf_plugins.py: "expandable_segments lets the allocator reclaim fragmented
    physical memory")."""
    if expandable:
        return 0.0
    return C.ALLOCATOR_FRAGMENTATION * (per_step + buffers)


def lifetimes_interleave(i: Inputs) -> bool:
    """Whether the step interleaves short-lived and long-lived allocations, which is what leaves the caching
    allocator with free pieces of split blocks it cannot give back (ALLOCATOR_FRAGMENTATION). Rajbhandari et al.
    2020 (ZeRO, Sec. 6.3 "Memory Defragmentation") name the two patterns: "with activation checkpointing, only
    selected activations are stored for back propagation while most activations are discarded ... This creates
    interleaving of short lived memory (discarded activations) and long lived memory (checkpointed activation)",
    and "during the backward propagation, the parameter gradients are long lived, while activation gradients ...
    are short lived". So:

    * activations discarded and brought back while others stay: full recompute, selective recompute that
      discards a tensor (the scores of an unfused attention, or recompute_modules beyond core_attn), and CPU
      activation offloading (the offloaded layers' tensors leave the GPU after their forward);
    * a pipeline stage holding several micro-batches (PP > 1 with gradient accumulation): the activations the next
      forward allocates live across the backward of another micro-batch, whose activation gradients are the
      short-lived ones between them;
    * parameter gradients allocated tensor by tensor during the backward and kept to the step: DeepSpeed's
      FP16_Optimizer / DDP_BFLOAT16 (ZeRO 0) and BF16_Optimizer (``param.grad`` of each 16-bit parameter), and
      ZeRO stage 1, whose gradients stay in ``param.grad`` until the reduction at the accumulation boundary
      (stage_1_and_2.py registers the hooks that move them into its contiguous buffer only when it partitions
      gradients, stage 2).

    Not interleaved: one micro-batch at a time without recompute, whose gradients go into one buffer allocated up
    front (Megatron's contiguous param_and_grad_buffer and Megatron-FSDP, ZeRO 2 with contiguous_gradients, ZeRO-3 /
    FSDP's per-unit reduce-scatter): the forward allocates the saved activations in order and the backward frees them in
    reverse, each step in the same sizes, so the blocks split once are reused whole. The same reserved memory is
    then the cache the allocator frees before it raises out-of-memory (:func:`one_stage`)."""
    if i.recompute == "full" or i.cpu_offload_layers > 0 or (i.pp > 1 and i.grad_accum > 1):
        return True
    if i.recompute == "selective" and (not i.flash or recomputed_module_bytes(i) > 0):
        return True
    return i.owner in ("deepspeed", "deepspeed-bf16") or (i.owner == "deepspeed-zero" and i.shard_stage == 1)


def allocator_cache_bytes(per_step: float, buffers: float) -> float:
    """The rest of what the allocator keeps reserved while the GPU has room over what one micro-batch
    allocates and frees (its activations, workspaces, logits; the transient buffers) (ALLOCATOR_CACHE): whole
    cached blocks, which it frees and retries with before it raises
    out-of-memory (c10/cuda/CUDACachingAllocator.cpp: "If the cudaMalloc fails, the allocator will free
    all cached blocks that are not split and retry the allocation"). Shown by nvidia-smi and
    max_memory_reserved, never needed for the run to fit."""
    return C.ALLOCATOR_CACHE * (per_step + buffers)


def fixed_overhead_bytes(i: Inputs) -> float:
    """Outside the caching allocator: the CUDA context and NCCL's buffers of every communicator."""
    return C.CUDA_CONTEXT_GIB * C.GIB + C.NCCL_GIB_PER_COMMUNICATOR * C.GIB * communicator_count(i)


def one_stage(i: Inputs, stage: int, layers: int, cache: Cache | None = None) -> StageMemory:
    """Memory of one pipeline stage holding ``layers`` layers."""
    n, params, grads, opt, buffers, nccl, copy = _stage_static(i, stage, layers, cache)
    acts, detail = stage_activation_bytes(i, stage, layers, cache)
    if copy > acts:  # the step's transient outgrows the activations it replaces: it sets the peak
        buffers += copy - acts
        detail["step_grad_copy"] = copy - acts
    ctx = C.CUDA_CONTEXT_GIB * C.GIB
    flight = in_flight(i, stage)
    split = fragmentation_bytes(acts, buffers, expandable=i.expandable_segments)
    # split blocks pinned by long-lived tensors where lifetimes interleave; else the same reserved blocks are whole
    # ones the allocator frees before it raises out-of-memory: shown (observed), not needed (total)
    frag = split if lifetimes_interleave(i) else 0.0
    detail.update({"cuda_context": ctx, "nccl": nccl, "fragmentation": frag})
    # the cache grows with what one micro-batch allocates and frees: the stored activations of the other
    # micro-batches in flight are blocks of the very sizes the next micro-batch asks for again
    churn = acts - (flight - 1.0) * detail.get("stored_per_microbatch", 0.0)
    total = params + grads + opt + acts + buffers + ctx + nccl + frag
    # the cache is what the allocator keeps while the GPU has room: it frees it and retries before a cudaMalloc
    # fails, so it never takes the device past its memory (a run that fits shows at most the whole GPU)
    releasable = min(allocator_cache_bytes(churn, buffers) + split - frag, max(0.0, i.gpu.memory_bytes - total))
    return StageMemory(stage, layers, params, grads, opt, acts, buffers, ctx + nccl + frag, detail,
                       flight, n, releasable)


def _stage_static(i: Inputs, stage: int, layers: int, cache: Cache | None) -> tuple[float, ...]:
    """(parameters, their bytes, gradient bytes, optimizer bytes, buffers, NCCL, Megatron's fp32
    gradient copy at the step) of a stage: what no
    micro batch or recompute mode changes (memoised per layout structure in a search)."""
    key = ("static", stage == 0, stage == i.pp - 1, layers, i.tp, i.pp, i.cp, i.dp, i.ep, i.etp, i.vocab,
           i.owner, i.shard_stage, i.shard_cp, i.grad_bytes, i.fp8, i.fp8_params, i.grad_accum > 1) if cache is not None else None
    found = cache.get(key) if cache is not None else None
    if found is None:
        n = stage_params_per_gpu(i, stage, layers)
        # -- MoE (s33-moe): the routed experts' state is sharded over the expert data-parallel group
        params, grads, opt = static_bytes(i, n, stage_expert_params_per_gpu(i, layers))
        params += te_fp8_weight_cache_bytes(i, layers)
        found = (n, params, grads, opt, buffer_bytes(i, n),
                 C.NCCL_GIB_PER_COMMUNICATOR * C.GIB * communicator_count(i),
                 step_grad_copy_bytes(i, n, stage_expert_params_per_gpu(i, layers)))
        if cache is not None:
            cache[key] = found
    return found


def stage_memory(i: Inputs) -> list[StageMemory]:
    return [one_stage(i, stage, layers) for stage, layers in enumerate(stage_layers(i))]


def worst_stage_total(i: Inputs, cache: Cache | None = None) -> float:
    """The worst stage's total without building every stage: it is the first or the last stage (the
    first holds at least as many layers, micro-batches in flight and parameters as any middle
    stage, and the embedding; the last holds the output layer and the logits)."""
    kinds = stage_kinds(i)
    if uneven_split(i) is not None:  # any rank may hold the most layers: each kind's first rank
        return max(one_stage(i, stage, layers, cache).total for stage, layers, _ in kinds)
    first = one_stage(i, 0, kinds[0][1], cache).total
    if i.pp == 1:
        return first
    return max(first, one_stage(i, i.pp - 1, kinds[-1][1], cache).total)


def static_floor(i: Inputs, cache: Cache | None = None) -> float:
    """A lower bound of the worst stage's total whatever the micro batch and recompute: the terms of
    :func:`one_stage` with no activations (parameters, gradients, optimizer states, buffers and their
    fragmentation, CUDA context, NCCL), from the same functions."""
    kinds = stage_kinds(i)
    out = 0.0
    for stage, layers in ([(k[0], k[1]) for k in kinds] if uneven_split(i) is not None
                          else [(0, kinds[0][1]), (i.pp - 1, kinds[-1][1])]):
        _, params, grads, opt, buffers, _, _ = _stage_static(i, stage, layers, cache)
        frag = fragmentation_bytes(0.0, buffers, expandable=i.expandable_segments) if lifetimes_interleave(i) else 0.0
        out = max(out, params + grads + opt + buffers + frag)
    return out + fixed_overhead_bytes(i)
