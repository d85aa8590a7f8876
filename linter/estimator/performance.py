"""Time per step: compute, exposed communication, pipeline bubble; FLOPs, tokens/s, MFU, bound.

Every kernel is timed as FLOPs at a fraction of the tensor-core peak plus bytes at a fraction of
the HBM bandwidth (:mod:`coefficients`): the efficiency of a GEMM therefore grows with its size
(arithmetic intensity), and the GPU's balance of FLOPs to bandwidth matters. Collectives use
ring costs over NVLink inside a node and the per-GPU NIC across nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainlint.estimator import coefficients as C
from trainlint.estimator.inputs import Inputs
from trainlint.estimator.memory import (
    active_params,
    expert_shard_group,
    layer_params,
    layer_params_per_gpu,
    moe_tokens_per_gpu,
    shard_group,
    stage_kinds,
    stage_layers,
    stage_expert_params_per_gpu,
    stage_params_per_gpu,
)


@dataclass
class Cost:
    """Seconds, split by what limits them (for the bound)."""

    flops: float = 0.0
    bytes: float = 0.0
    net: float = 0.0

    @property
    def total(self) -> float:
        return self.flops + self.bytes + self.net

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.bytes + other.bytes, self.net + other.net)

    def scale(self, k: float) -> Cost:
        return Cost(self.flops * k, self.bytes * k, self.net * k)


@dataclass
class TimeBreakdown:
    compute: float
    tp_comm: float
    """Exposed tensor- and context-parallel communication (expert all-to-all is ``ep_comm``)."""
    pp_bubble: float
    pp_comm: float
    dp_comm: float
    optimizer: float
    overhead: float
    flops_time: float
    bytes_time: float
    net_time: float
    stage_microbatch_s: list[float] = field(default_factory=list)
    ep_comm: float = 0.0
    """Exposed expert-parallel all-to-all (token dispatch and combine of the MoE layers)."""

    @property
    def step_time(self) -> float:
        return (self.compute + self.tp_comm + self.ep_comm + self.pp_bubble + self.pp_comm + self.dp_comm
                + self.optimizer + self.overhead)

    def as_dict(self) -> dict[str, float]:
        return {"compute": self.compute, "tp_comm": self.tp_comm, "ep_comm": self.ep_comm, "pp_bubble": self.pp_bubble,
                "pp_comm": self.pp_comm, "dp_comm": self.dp_comm, "optimizer": self.optimizer,
                "overhead": self.overhead}


# --------------------------------------------------------------------------- hardware helpers


def peak_flops(i: Inputs) -> float:
    """Dense 16-bit (or fp32) tensor peak, FLOP/s; MFU is always against this one."""
    gpu = i.gpu
    value = gpu.peak_tflops("fp32" if i.dtype == "fp32" else i.dtype)
    if value is None:
        value = gpu.fp16_tflops or gpu.bf16_tflops or gpu.fp32_tflops or 0.0
    return float(value) * 1e12


def sustained_clock(i: Inputs) -> float:
    """Share of the datasheet clock a power-capped part sustains under tensor-core load (1 uncapped):
    (cap / maximum power) ** POWER_CAP_CLOCK_EXPONENT."""
    gpu = i.gpu
    if not gpu.power_limit_w or not gpu.max_power_w or gpu.power_limit_w >= gpu.max_power_w:
        return 1.0
    return float((gpu.power_limit_w / gpu.max_power_w) ** C.POWER_CAP_CLOCK_EXPONENT)


def hbm(i: Inputs) -> float:
    return float(i.gpu.hbm_bandwidth_tbps or 1.0) * 1e12 * C.HBM_ACHIEVABLE_FRACTION


def nvlink_gpus(i: Inputs) -> int:
    """GPUs one NVLink fabric joins: the node, or the GPU's NVLink domain when larger (GB200 NVL72)."""
    return max(i.gpus_per_node, int(i.gpu.nvlink_domain_gpus or 0))


def link_bw(i: Inputs, group_span: int, per_node: int = 1, *, ring: bool = False) -> float:
    """Achievable per-GPU bandwidth for a group whose ranks span ``group_span`` consecutive GPUs, with
    ``per_node`` of its members on each node. Inside the NVLink domain: NVLink (``ring``: the large-message bus
    bandwidth of a blocking ring collective, NVLINK_RING_BUS_FRACTION; else INTRA_NODE_LINK_FRACTION). Across nodes NCCL's
    rings and trees leave each node through every NIC its members own (one per GPU on the reference
    systems), so a collective's inter-node bandwidth per GPU is about members-per-node x the per-GPU NIC
    share, never more than NVLink feeds (nccl-tests on DGX A100/H100: 8-GPU-per-node all-reduce bus
    bandwidth ~ 8 x NIC); a group with one member per node (DP under TP 8) gets one NIC."""
    gpu = i.gpu
    fraction = C.NVLINK_RING_BUS_FRACTION if ring else C.INTRA_NODE_LINK_FRACTION
    intra = float(gpu.intra_node_bw_gbps or 16.0) * 1e9 * fraction
    if group_span <= nvlink_gpus(i):
        return intra
    nic = float(gpu.inter_node_bw_gbps or 12.5) * 1e9 * C.INTER_NODE_LINK_FRACTION
    return min(intra, max(1, per_node) * nic)


def members_per_node(i: Inputs, stride: int, size: int) -> int:
    """Members of a group of ``size`` ranks ``stride`` apart that share one node."""
    return max(1, min(size, i.gpus_per_node // max(1, stride)))


def ring_time(volume_bytes: float, n: int, bw: float, phases: float = 2.0, *, step_latency: bool = False) -> float:
    """All-reduce (phases 2) or reduce-scatter / all-gather (phases 1) of ``volume_bytes``. ``step_latency``: ``bw``
    is the large-message bus bandwidth (NVLINK_RING_BUS_FRACTION) and each of the ring's phases x (n - 1) steps
    pays NCCL's hop latency (NCCL_RING_STEP_LATENCY_S), so a small message reaches a smaller share of it."""
    if n <= 1 or volume_bytes <= 0:
        return 0.0
    steps = phases * (n - 1) * C.NCCL_RING_STEP_LATENCY_S if step_latency else 0.0
    return phases * (n - 1) / n * volume_bytes / bw + C.COLLECTIVE_LATENCY_S + steps


def gemm(i: Inputs, m: float, k: float, n: float, count: float = 1.0, *, fp8: bool = False) -> Cost:
    if m <= 0 or k <= 0 or n <= 0:
        return Cost()
    flops = 2 * m * k * n * count
    operand = 1 if fp8 else i.act_bytes
    nbytes = (operand * (m * k + k * n) + i.act_bytes * m * n) * count
    return Cost(flops / gemm_speed(i, fp8), nbytes / hbm(i))


def gemm_speed(i: Inputs, fp8: bool = False) -> float:
    """FLOP/s a large GEMM of the step sustains: the dense peak x the GPU's measured maximum achievable
    matmul share (catalog MAMF, MATMUL_ACHIEVABLE_DEFAULT when unmeasured) x GEMM_PEAK_FRACTION, at the
    sustained clock of a power-capped part. FP8: x the measured FP8 / 16-bit matmul ratio, or
    FP8_GEMM_SPEEDUP where the catalog has no FP8 measurement."""
    gpu = i.gpu
    achievable = gpu.matmul_achievable_fraction or C.MATMUL_ACHIEVABLE_DEFAULT
    speed = peak_flops(i) * sustained_clock(i) * achievable * C.GEMM_PEAK_FRACTION
    if fp8:
        fp8_peak = gpu.fp8_tflops
        if gpu.matmul_achievable_fraction_fp8 and gpu.matmul_achievable_fraction and fp8_peak and i.dtype != "fp32":
            speed *= (fp8_peak * gpu.matmul_achievable_fraction_fp8) / (peak_flops(i) / 1e12 * achievable)
        else:
            speed *= C.FP8_GEMM_SPEEDUP
    return float(speed)


# --------------------------------------------------------------------------- per layer


def layer_forward(i: Inputs) -> tuple[Cost, Cost]:
    """(linear layers + elementwise, attention core) forward time of one layer for one micro-batch."""
    t = i.tp
    m = i.micro * i.seq / i.cp
    h = i.hidden
    fp8 = i.fp8
    cost = attention_projections(i, m, fp8)
    dense, moe = mlp_gemms(i)
    dense_elems = m * i.ffn / t
    if i.moe:
        # the average layer: a share f of MoE layers (top-k experts + router), the rest dense
        f = i.moe_fraction
        cost = cost + moe.scale(f) + dense.scale(1 - f)
        act_elems = f * m * (i.top_k * i.moe_ffn / i.etp + i.moe_shared_ffn / t) + (1 - f) * dense_elems
    else:
        cost = cost + dense
        act_elems = dense_elems
    rep = t if i.sp else 1
    elementwise = C.ELEMENTWISE_BYTES_PER_HIDDEN * m * h / rep + (3 if i.gated else 2) * i.act_bytes * act_elems
    if i.moe:
        # the token dispatcher's permute and unpermute: every routed copy of a token is gathered into
        # its expert's block and scattered back (core/transformer/moe/moe_utils.py permute / unpermute), on the
        # tokens this GPU's experts take: its sequence shard, gathered over the expert-TP group (moe_tokens_per_gpu)
        elementwise += i.moe_fraction * moe_permute_bytes_per_element(i) * moe_tokens_per_gpu(i) * i.top_k * h
    cost = cost + Cost(0.0, elementwise / hbm(i))
    return cost, attention_forward(i)


def attention_projections(i: Inputs, m: float, fp8: bool) -> Cost:
    """The attention block's linear layers for ``m`` tokens: QKV and output projections; with multi-latent
    attention the down projections to the latents (duplicated on every TP rank), the up projections to every
    head's query, key and value, and the output projection (Megatron-Core multi_latent_attention.py)."""
    t, h = i.tp, i.hidden
    if not i.mla:
        return gemm(i, m, h, (i.q_dim + 2 * i.kv_dim) / t, fp8=fp8) + gemm(i, m, i.q_dim / t, h, fp8=fp8)
    n, qk = i.heads, i.mla_qk_head + i.mla_rope_head
    cost = gemm(i, m, h, i.mla_kv_rank + i.mla_rope_head, fp8=fp8)
    cost = cost + gemm(i, m, i.mla_kv_rank, n * (i.mla_qk_head + i.mla_v_head) / t, fp8=fp8)
    if i.mla_q_rank:
        cost = cost + gemm(i, m, h, i.mla_q_rank, fp8=fp8) + gemm(i, m, i.mla_q_rank, n * qk / t, fp8=fp8)
    else:
        cost = cost + gemm(i, m, h, n * qk / t, fp8=fp8)
    return cost + gemm(i, m, n * i.mla_v_head / t, h, fp8=fp8)


def moe_permute_bytes_per_element(i: Inputs) -> float:
    """Forward HBM bytes per routed token copy per hidden unit of the dispatcher's permute, unpermute and the router
    weights' multiply, by the engine's generation (MOE_PERMUTE_BYTES_PER_ELEMENT, or the gather / scatter path's
    MOE_UNFUSED_PERMUTE_BYTES_PER_ELEMENT; + MOE_PROBS_MULTIPLY_BYTES_PER_ELEMENT where the multiply is its own kernel)
    and by the dispatcher (engine.moe_dispatcher): the alltoall one's sort of the received copies into local-expert
    order and back (+ MOE_SORT_CHUNKS_BYTES_PER_ELEMENT, with more than one expert per rank); none where HybridEP
    permutes inside its exchange (``flex-fused``)."""
    permute = C.MOE_UNFUSED_PERMUTE_BYTES_PER_ELEMENT if i.moe_unfused_permute else C.MOE_PERMUTE_BYTES_PER_ELEMENT
    if i.moe_dispatcher == "flex-fused":
        permute = 0.0  # HybridEP permutes inside its dispatch and combine kernels
    elif i.moe_dispatcher == "alltoall" and i.experts / max(1, i.ep) > 1:
        # the received copies sorted into local-expert order and back (MOE_SORT_CHUNKS_BYTES_PER_ELEMENT)
        permute += C.MOE_SORT_CHUNKS_BYTES_PER_ELEMENT
    return permute + (C.MOE_PROBS_MULTIPLY_BYTES_PER_ELEMENT if i.moe_probs_on_output else 0.0)


def mlp_gemms(i: Inputs) -> tuple[Cost, Cost]:
    """(a dense MLP's, a MoE layer's) forward GEMMs for one micro-batch (the MoE one with its router)."""
    t = i.tp
    m = i.micro * i.seq / i.cp
    h = i.hidden
    fp8 = i.fp8
    mats = 2 if i.gated else 1
    dense = gemm(i, m, h, mats * i.ffn / t, fp8=fp8) + gemm(i, m, i.ffn / t, h, fp8=fp8)
    if not i.moe:
        return dense, Cost()
    local_experts = max(1.0, i.experts / i.ep)
    # the tokens each local expert takes per micro-batch: this GPU's MoE tokens (its sequence shard with SP, gathered
    # over expert-TP: moe_tokens_per_gpu), each routed top-k times, spread over the EP group's experts. Was the whole
    # micro-batch's m, which with TP > 1 and expert-TP 1 (sequence parallel) counted TP / expert-TP times the work.
    tokens = moe_tokens_per_gpu(i) * i.top_k * i.ep / i.experts
    moe = gemm(i, tokens, h, mats * i.moe_ffn / i.etp, local_experts, fp8=fp8)
    moe = moe + gemm(i, tokens, i.moe_ffn / i.etp, h, local_experts, fp8=fp8)
    routed = m / t if i.sp and t > 1 else m  # the router scores the GPU's own sequence shard
    moe = moe + gemm(i, routed, h, i.experts)  # router
    if i.moe_shared_ffn:
        # the shared experts: every token through a TP-split MLP of their width (Megatron SharedExpertMLP)
        moe = moe + gemm(i, m, h, mats * i.moe_shared_ffn / t, fp8=fp8) + gemm(i, m, i.moe_shared_ffn / t, h, fp8=fp8)
    return dense, moe


def expert_wgrad_accumulation(i: Inputs) -> Cost:
    """HBM traffic of the routed experts' weight-gradient accumulation per layer and micro-batch beyond what the
    forward x 2 of the backward counts: each local expert's wgrad GEMM reads and writes its gradient buffer
    (WGRAD_ACCUMULATE_READ_WRITES passes of the engine's gradient bytes per weight) where the forward's copy counts
    one operand read of the weight. A fixed cost per expert and micro-batch, so it grows against the experts' FLOPs
    as the tokens each expert takes per micro-batch fall."""
    if not i.moe:
        return Cost()
    operand = 1 if i.fp8 else i.act_bytes
    extra = C.WGRAD_ACCUMULATE_READ_WRITES * _grad_bytes(i) - operand
    if extra <= 0.0:
        return Cost()
    mats = 2 if i.gated else 1
    weights = max(1.0, i.experts / i.ep) * (mats + 1) * i.moe_ffn / i.etp * i.hidden
    return Cost(0.0, i.moe_fraction * weights * extra / hbm(i))


def expert_quantize(i: Inputs) -> tuple[Cost, Cost]:
    """(forward, backward) HBM traffic of Transformer Engine's FP8 quantisation of the routed experts' GEMM operands
    per layer and micro-batch: GroupedLinear quantises each 16-bit input it is given (forward: the dispatched copies
    into FC1, the activation into FC2; backward: the gradients of FC2's and FC1's outputs) into the row-wise copy the
    GEMM reads and the column-wise one the other backward GEMM reads, FP8_QUANTIZE_BYTES_PER_ELEMENT per element
    (transformer_engine/pytorch/module/grouped_linear.py: ``tex.fused_multi_quantize`` of ``inputmats`` with
    ``set_usage(rowwise=True, columnwise=...)`` and of ``grad_output_mats``). The copies arrive 16-bit from the
    dispatcher and the activation, so nothing fuses the cast as a dense layer's LayerNormLinear does."""
    if not (i.moe and i.fp8):
        return Cost(), Cost()
    mats = 2 if i.gated else 1
    copies = i.moe_fraction * moe_tokens_per_gpu(i) * i.top_k
    width = i.moe_ffn / i.etp
    per_element = C.FP8_QUANTIZE_BYTES_PER_ELEMENT / hbm(i)
    return (Cost(0.0, copies * (i.hidden + width) * per_element),
            Cost(0.0, copies * (mats * width + i.hidden) * per_element))


def recomputed_modules_forward(i: Inputs, attn: Cost) -> Cost:
    """The forward selective recompute runs again for one layer and micro-batch (Megatron-Core
    recompute_modules): the attention core (core_attn), the dense MLP (mlp), the MoE layer's experts (moe);
    the output-discarding modules (moe_act, layernorm) rerun elementwise kernels only, left out; mla_up_proj
    reruns the multi-latent attention's up projections from the latent ranks, small beside the layer, left out."""
    modules = set(i.recompute_modules)
    extra = attn if "core_attn" in modules else Cost()
    if modules & {"mlp", "moe"}:
        dense, moe = mlp_gemms(i)
        f = i.moe_fraction if i.moe else 0.0
        if "mlp" in modules:
            extra = extra + dense.scale(1 - f)
        if "moe" in modules and i.moe:
            extra = extra + moe.scale(f)
    return extra


def attention_forward(i: Inputs) -> Cost:
    t = i.tp
    heads = i.heads / t
    sl = i.seq / i.cp
    # scores over the query/key head size, the weighted sum over the value head size (MLA: 192 and 128)
    head = (i.mla_qk_head + i.mla_rope_head + i.mla_v_head) / 2 if i.mla else i.head_dim
    flops = 4 * i.micro * heads * sl * i.seq * head
    if i.flash:
        flops *= 0.5  # causal: fused kernels skip the masked half
        return Cost(flops / (peak_flops(i) * sustained_clock(i) * attention_efficiency(i)))
    batched = gemm(i, sl, i.head_dim, i.seq, 2 * i.micro * heads)
    return batched + Cost(0.0, _softmax_bytes_time(i))


def attention_efficiency(i: Inputs, *, backward: bool = False) -> float:
    """Fraction of the dense peak a fused (flash) attention kernel sustains over its executed FLOPs, in the
    forward (or the ``backward``): FLASH_ATTENTION_PEAK_FRACTION at long sequences and head dim 128, lower for
    short key blocks (seq / (seq + FLASH_ATTENTION_HALF_SEQ): per-tile softmax and launch overheads) and for
    small heads (FlashAttention-2 Fig. 4-7: head dim 64 runs ~15-20% below 128 at the same length); x the GPU's
    catalog ``attention_kernel_speedup`` (Blackwell Ultra's doubled softmax exponential rate); x the kernel's
    share on its architecture (:func:`attention_kernel_factor`)."""
    keys = i.seq  # each query block walks the whole (causal) key range of the sequence
    length = keys / (keys + C.FLASH_ATTENTION_HALF_SEQ)
    head = min(1.0, i.head_dim / 128.0) ** C.FLASH_ATTENTION_HEAD_DIM_EXPONENT
    # a part whose softmax exponentials run faster at the same tensor peak (Blackwell Ultra: catalog
    # attention_kernel_speedup) keeps its tensor cores busier inside the kernel
    return (C.FLASH_ATTENTION_PEAK_FRACTION * length * head * float(i.gpu.attention_kernel_speedup or 1.0)
            * attention_kernel_factor(i, backward=backward))


def attention_kernel_factor(i: Inputs, *, backward: bool = False) -> float:
    """The fused kernel's share of the peak on the run's architecture over FLASH_ATTENTION_PEAK_FRACTION (the share
    on Hopper and later parts), a ratio of published kernel benchmarks, not fitted: FlashAttention-2's CUDA kernels
    (and Transformer Engine, which runs them on Ampere) keep about twice the share of the peak on Ampere that they
    keep on Hopper (FLASH2_AMPERE_FORWARD_GAIN, FLASH2_AMPERE_BACKWARD_GAIN); the Triton kernel of flash-attn 1.x
    (engine.attention ``flash-triton``) runs FLASH_TRITON_FORWARD_SLOWDOWN / FLASH_TRITON_BACKWARD_SLOWDOWN slower
    than FlashAttention-2 on the same part."""
    factor = 1.0
    if i.gpu.architecture in C.FLASH2_GAIN_ARCHITECTURES:
        factor = C.FLASH2_AMPERE_BACKWARD_GAIN if backward else C.FLASH2_AMPERE_FORWARD_GAIN
    if i.flash_triton:
        factor /= C.FLASH_TRITON_BACKWARD_SLOWDOWN if backward else C.FLASH_TRITON_FORWARD_SLOWDOWN
    return factor


def attention_backward(i: Inputs, fwd: Cost) -> Cost:
    """The attention core's backward: flash recomputes the scores (FLASH_BACKWARD_FLOP_RATIO x the
    forward's FLOPs, at the kernel's backward share of the peak); unfused, the two batched GEMMs twice over
    and the softmax / dropout backward's bytes."""
    if i.flash:
        slower = attention_kernel_factor(i) / attention_kernel_factor(i, backward=True)
        return fwd.scale(C.FLASH_BACKWARD_FLOP_RATIO * slower)
    return Cost(2.0 * fwd.flops, 2.0 * (fwd.bytes - _softmax_bytes_time(i)) + _softmax_bytes_time(i, backward=True))


def _softmax_bytes_time(i: Inputs, *, backward: bool = False) -> float:
    """Seconds of the unfused softmax + dropout traffic (forward, or ``backward``) of one layer for one
    micro-batch. The causal fused softmax reads only the scores on and below the diagonal (its forward the
    2-byte scores, its backward the 2-byte gradient and probabilities): CAUSAL_SOFTMAX_SKIPPED_SHARE of those
    reads is never made (up to FUSED_SOFTMAX_MAX_KEYS keys, the longest the fused kernel takes)."""
    skipped = C.CAUSAL_SOFTMAX_SKIPPED_SHARE if i.seq <= C.FUSED_SOFTMAX_MAX_KEYS else 0.0
    if backward:
        per_score = C.UNFUSED_SOFTMAX_BACKWARD_BYTES_PER_SCORE - 4.0 * skipped
    else:
        per_score = C.UNFUSED_SOFTMAX_BYTES_PER_SCORE - 2.0 * skipped
    return per_score * i.micro * (i.heads / i.tp) * (i.seq / i.cp) * i.seq / hbm(i)


def ep_comm_per_layer(i: Inputs) -> float:
    """Exposed expert-parallel all-to-all per layer per micro-batch, all passes (dispatch and combine of
    top-k copies of each token, on the MoE layers only): its own line, ``ep_comm``."""
    if not (i.moe and i.ep > 1):
        return 0.0
    passes = 4 + (2 if i.recompute == "full" else 0)
    one = ep_a2a_time(i)
    if i.overlap_ep:
        # the combined 1F1B schedule: each exchange beside the other micro-batch's compute, min(comm, compute)
        return i.moe_fraction * ep_1f1b_exposed(i, one)
    return i.moe_fraction * passes * one * (1 - C.EP_A2A_OVERLAP_FRACTION)


def ep_a2a_time(i: Inputs) -> float:
    """One dispatch or combine of the expert all-to-all (top-k copies of each token of the micro-batch): each GPU
    sends (ep - 1) / ep of its copies to the other EP ranks at once. EP ranks sit ETP apart inside the data x context
    group (Megatron's expert grid); the g of them that share the GPU's NVLink domain are reached over NVLink, the
    ep - g others only through this GPU's own NIC: unlike a ring collective, whose rings leave the node through every
    NIC of its members (:func:`link_bw`), an all-to-all sends every GPU's off-node share through its own rail (NCCL
    alltoall: one send / recv per peer; DeepEP's internode kernels measure 43-58 GB/s of RDMA bandwidth per H800 GPU
    with one 400 Gb/s CX7 NIC, EP 16-64, README "Normal kernels with NVLink and RDMA forwarding"). The two parts run
    side by side: the longer one is the time."""
    shard = i.tp if (i.sp and i.tp > 1) else 1  # sequence parallelism: each TP rank dispatches its own shard
    msg = i.act_bytes * i.micro * i.seq / i.cp / shard * i.hidden * i.top_k
    span = i.etp * i.ep
    if span <= nvlink_gpus(i):
        return ring_time(msg, i.ep, link_bw(i, span), phases=1.0)
    g = members_per_node(i, i.etp, i.ep) if nvlink_gpus(i) <= i.gpus_per_node else max(1, nvlink_gpus(i) // i.etp)
    intra = (g - 1) / i.ep * msg / link_bw(i, 1)
    nic = float(i.gpu.inter_node_bw_gbps or 12.5) * 1e9 * C.INTER_NODE_LINK_FRACTION
    return max(intra, ep_off_node_copies(i, g) / i.top_k * msg / nic) + C.COLLECTIVE_LATENCY_S


def ep_off_node_copies(i: Inputs, g: int) -> float:
    """Copies of one token that leave its NVLink domain in a dispatch (the combine returns as many), with the
    EP group over n = ep / g domains and each of the top-k experts on any rank alike: k (n - 1) / n for Megatron's
    alltoall and allgather dispatchers (one copy per routed expert); with the flex dispatchers (DeepEP, HybridEP)
    one copy per remote domain that holds any of the token's experts, (n - 1) (1 - (1 - 1/n) ** k): DeepEP's
    internode dispatch sends a token once over RDMA to each node it needs, with the bits of that node's NVLink
    ranks that take it, and forwards it there over NVLink (csrc/kernels/internode.cu SourceMeta
    ``is_token_in_nvl_rank_bits``; README "NVLink and RDMA forwarding"); HybridEP is built the same way
    (hierarchical: RDMA between domains, NVLink inside)."""
    n = max(1.0, i.ep / max(1, g))
    if i.moe_dispatcher in ("flex", "flex-fused"):
        return (n - 1.0) * (1.0 - (1.0 - 1.0 / n) ** i.top_k)
    return i.top_k * (n - 1.0) / n


def ep_1f1b_exposed(i: Inputs, a2a: float) -> float:
    """Exposed expert all-to-all of one MoE layer per micro-batch under --overlap-moe-expert-parallel-comm, in the
    steady state where the forward of one micro-batch runs beside the backward of another (Megatron-Core
    combined_1f1b.py; models/common/model_chunk_schedule_plan.py TransformerLayerSchedulePlan.run). ``a2a``: one
    dispatch or combine. The two streams of one layer, replayed event by event:

    comm stream: combine_bwd(b) | dispatch_fwd(f) after attn_fwd(f) | dispatch_bwd(b) after mlp_bwd(b) |
                 combine_fwd(f) after mlp_fwd(f)
    comp stream: attn_fwd(f) | mlp_bwd(b) after combine_bwd(b) | mlp_fwd(f) after dispatch_fwd(f) |
                 attn_bwd(b) after dispatch_bwd(b)

    attn: the attention block with the router and the shared experts (fine_grained_callables.py computes the
    shared experts in the pre-dispatch node); mlp: the routed experts' GEMMs, whose backward (data and weight
    gradients; --delay-wgrad-compute is not read) is twice their forward. An exchange shorter than the compute
    beside it is hidden, a longer one shows the rest: across nodes, where the exchange goes over the NICs, little
    is hidden. The warm-up forwards and cool-down backwards that have no partner are :func:`ep_1f1b_unpaired`'s."""
    m = i.micro * i.seq / i.cp
    h = i.hidden
    mats = 2 if i.gated else 1
    moe = mlp_gemms(i)[1]
    router = gemm(i, m, h, i.experts)
    shared = Cost()
    if i.moe_shared_ffn:
        shared = gemm(i, m, h, mats * i.moe_shared_ffn / i.tp, fp8=i.fp8) + gemm(i, m, i.moe_shared_ffn / i.tp, h,
                                                                                 fp8=i.fp8)
    experts = max(0.0, moe.total - router.total - shared.total)
    core = attention_forward(i)
    side = attention_projections(i, m, i.fp8).total + router.total + shared.total
    attn_f = side + core.total
    attn_b = 2.0 * side + attention_backward(i, core).total
    combine_bwd = a2a
    mlp_bwd = max(attn_f, combine_bwd) + 2.0 * experts
    dispatch_fwd = max(combine_bwd, attn_f) + a2a
    dispatch_bwd = max(dispatch_fwd, mlp_bwd) + a2a
    mlp_fwd = max(mlp_bwd, dispatch_fwd) + experts
    combine_fwd = max(dispatch_bwd, mlp_fwd) + a2a
    attn_bwd = max(mlp_fwd, dispatch_bwd) + attn_b
    return max(0.0, max(attn_bwd, combine_fwd) - (attn_f + 3.0 * experts + attn_b))


def ep_1f1b_unpaired(i: Inputs) -> float:
    """Micro-batch chunks per stage whose forward (and, as many, whose backward) runs without a partner under
    --overlap-moe-expert-parallel-comm, so all four of their exchanges show: the first forward and the last
    backward without pipelining (combined_1f1b_schedule_for_no_pipelining); with the interleaved pipeline Megatron
    requires for it, the warm-up forwards of the last stage, (vpp - 1) x pp (microbatch_group_size_per_vp_stage,
    default pp) + 1 (schedules.py: "we schedule one extra micro-batch forward step before the 1f1b stages"); the
    earlier stages' extra warm-up forwards run in the pipeline fill that the bubble counts."""
    chunks = i.grad_accum * i.vpp
    lone = 1 if i.pp <= 1 else (i.vpp - 1) * i.pp + 1
    return float(min(chunks, lone))


def tp_comm_per_layer(i: Inputs) -> float:
    """Exposed tensor-parallel, context-parallel and expert all-to-all time per layer per micro-batch,
    all passes (the expert part is also :func:`ep_comm_per_layer`, reported apart)."""
    passes = 4 + (2 if i.recompute == "full" else 0)
    total = 0.0
    if i.tp > 1:
        msg = i.act_bytes * i.micro * i.seq / i.cp * i.hidden
        # one blocking all-reduce (or all-gather + reduce-scatter with SP) of the layer's activations on the
        # compute stream: NCCL's large-message ring bandwidth, less its per-step latency
        bw = link_bw(i, i.tp, i.tp, ring=True)
        total += passes * ring_time(msg, i.tp, bw, phases=2.0, step_latency=True)
        if i.overlap_tp:
            total *= 1 - C.TP_COMM_OVERLAP_FRACTION
    total += ep_comm_per_layer(i)
    if i.cp > 1 and i.cp_all_to_all:
        total += ulysses_per_layer(i)
    elif i.cp > 1:
        # ring attention passes K and V around the CP group (forward, and twice in backward: K, V and
        # their gradients), each step behind the previous block's attention: the exposed share is
        # CP_RING_EXPOSED_FRACTION
        kv = 2 * i.act_bytes * i.micro * i.seq / i.cp * i.kv_dim / i.tp
        bw = link_bw(i, i.tp * i.cp, members_per_node(i, i.tp, i.cp))
        total += C.CP_RING_PASSES * ring_time(kv * i.cp, i.cp, bw, phases=1.0) * C.CP_RING_EXPOSED_FRACTION
    return total


def ulysses_per_layer(i: Inputs) -> float:
    """DeepSpeed-Ulysses' all-to-alls per layer per micro-batch, all passes: each GPU holds 1/CP of the
    sequence and sends (CP - 1)/CP of its Q, K, V and attention output to the others (heads for sequence and
    back), ULYSSES_A2A_PASSES rounds (+1 with full recompute), exposed."""
    local = i.act_bytes * i.micro * i.seq / i.cp * (2 * i.q_dim + 2 * i.kv_dim) / i.tp
    rounds = C.ULYSSES_A2A_PASSES + (1.0 if i.recompute == "full" else 0.0)
    bw = link_bw(i, i.tp * i.cp, members_per_node(i, i.tp, i.cp))
    return rounds * ring_time(local, i.cp, bw, phases=1.0)


# --------------------------------------------------------------------------- per micro-batch, per stage


def layer_costs(i: Inputs, cache: dict | None = None) -> tuple[Cost, Cost, float]:
    """(all passes, backward + recompute, exposed TP seconds) of one layer for one micro-batch: the
    same on every stage, computed once per layout (and, with a search's ``cache``, once per
    TP / CP / micro batch / recompute)."""
    if cache is None:
        return _layer_costs(i)
    key = layer_costs_key(i, i.micro, i.recompute)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _layer_costs(i)
    return found


def layer_costs_key(i: Inputs, micro: int, recompute: str) -> tuple:
    """What :func:`layer_costs` depends on: its key in a search's cache, for ``i`` at another micro
    batch and recompute mode (a search looks a layout's costs up before making its inputs)."""
    return ("layer", i.tp, i.cp, micro, i.sp, i.etp, i.ep, recompute, i.recompute_modules)


def _layer_costs(i: Inputs) -> tuple[Cost, Cost, float]:
    lin, attn = layer_forward(i)
    quant_fwd, quant_bwd = expert_quantize(i)
    fwd = lin + attn + quant_fwd
    bwd = lin.scale(2.0) + attention_backward(i, attn) + expert_wgrad_accumulation(i) + quant_bwd
    if i.recompute == "full":
        extra = fwd
    elif i.recompute == "selective":
        extra = recomputed_modules_forward(i, attn)
    else:
        extra = Cost()
    return fwd + bwd + extra, bwd + extra, tp_comm_per_layer(i)


def output_layer(i: Inputs) -> tuple[Cost, Cost]:
    """(output-layer GEMMs, all passes; cross-entropy) of one micro-batch on the last stage."""
    m = i.micro * i.seq / i.cp
    return gemm(i, m, i.hidden, i.vocab / i.tp).scale(3.0), Cost(0.0, 16 * m * i.vocab / i.tp / hbm(i))


def output_seconds(i: Inputs, cache: dict | None = None) -> float:
    """Seconds of :func:`output_layer` (GEMMs and cross-entropy), memoised in a search's ``cache``."""
    key = output_seconds_key(i, i.micro)
    found = cache.get(key) if cache is not None else None
    if found is None:
        logits, ce = output_layer(i)
        found = logits.total + ce.total
        if cache is not None:
            cache[key] = found
    return found


def output_seconds_key(i: Inputs, micro: int) -> tuple:
    """What :func:`output_seconds` depends on: its key in a search's cache (see :func:`layer_costs_key`)."""
    return ("output", i.tp, i.cp, micro, i.vocab)


def stage_microbatch(i: Inputs, stage: int, layers: int,
                     per_layer: tuple[Cost, Cost, float] | None = None) -> tuple[Cost, float, float, Cost]:
    """(compute cost, exposed TP seconds, p2p seconds, backward cost) of one micro-batch on a stage."""
    layer, layer_bwd, layer_tp = per_layer or layer_costs(i)
    compute = layer.scale(layers)
    backward = layer_bwd.scale(layers)
    if stage == i.pp - 1:
        logits, ce = output_layer(i)
        compute = compute + (logits + ce)
        backward = backward + logits.scale(2 / 3)
    tp = layers * layer_tp
    return compute, tp, p2p_seconds(i), backward


def p2p_seconds(i: Inputs) -> float:
    """Pipeline point-to-point seconds of one micro-batch on a stage (the same on every stage): the
    activations sent forward and their gradients back, per model chunk."""
    if i.pp <= 1:
        return 0.0
    m = i.micro * i.seq / i.cp
    split = i.tp if i.sp else 1
    msg = i.act_bytes * m * i.hidden / split
    span = i.tp * i.cp * i.dp * 2  # the next stage is TP x CP x DP ranks away: point to point, one NIC
    bw = link_bw(i, span)
    p2p = 2 * i.vpp * (msg / bw + C.COLLECTIVE_LATENCY_S)
    if i.vpp > 1 and i.overlap_p2p:
        # the interleaved schedule posts each send/recv beside the next chunk's compute (Megatron's
        # default overlap_p2p_comm; --no-overlap-p2p-communication turns it off)
        p2p *= 1 - C.P2P_OVERLAP_FRACTION
    return p2p


def dp_link_bw(i: Inputs, d: int, *, blocking: bool = False) -> float:
    """Per-GPU bandwidth of the data-parallel (shard) group of ``d`` ranks: DP ranks sit TP x CP apart;
    a shard group over DP x CP (Megatron's distributed optimizer) has its CP ranks TP apart, inside.
    The group spans TP x CP x DP consecutive ranks (CP counted once). ZeRO-3's per-module gathers
    across nodes get one NIC per GPU. ``blocking``: the exchange runs alone on the compute stream after
    the backward (no overlap), as one large ring collective per bucket: inside the NVLink domain it reaches
    NCCL's large-message ring bus bandwidth (NVLINK_RING_BUS_FRACTION), not the share of an exchange that
    runs beside the backward's kernels (INTRA_NODE_LINK_FRACTION)."""
    span = i.tp * i.cp * i.dp
    stride = i.tp if (i.shard_cp and i.cp > 1) else i.tp * i.cp
    if i.shard_stage >= 3:
        # ZeRO-3 / FSDP gather each module's parameters and reduce-scatter its gradients as they are
        # needed: many mid-size collectives on the critical path, each a flat ring over every rank,
        # which NCCL does not split over the node's NICs as it does the bucketed gradient reduction
        return link_bw(i, span, 1)
    return link_bw(i, span, members_per_node(i, stride, d), ring=blocking)


def expert_exchange(i: Inputs, n_expert: float) -> tuple[int, float] | None:
    """(ranks, per-GPU bandwidth) of the routed experts' gradient reduction and weight gather, or None where the
    experts' parameters go with the rest: Megatron-Core keeps them in buffers of their own reduced over the expert
    data-parallel group (core/distributed/distributed_data_parallel.py ``expert_parallel_buffers``,
    ``intra_expt_dp_group``; :func:`~trainlint.estimator.memory.expert_shard_group`: (TP x CP x DP) / (EP x ETP)
    ranks), whose members sit EP x ETP ranks apart on the expert grid (core/parallel_state.py, expert order
    tp-ep-dp-pp); DeepSpeed reduces an expert's gradients over DP / EP ranks, EP apart. With EP 8 on 8-GPU nodes
    every member is on another node and the exchange gets one NIC per GPU, where the dense parameters' DP group has
    every NIC of the node."""
    if n_expert <= 0.0 or not i.moe or i.ep * i.etp <= 1:
        return None
    d_e = expert_shard_group(i)
    stride = i.ep * i.etp if i.owner == "megatron" else i.tp * i.cp * i.ep
    return d_e, link_bw(i, stride * d_e, members_per_node(i, stride, d_e))


def layer_launch_s(i: Inputs) -> float:
    """Host (CPU) time to issue one layer's forward and backward kernels for one micro-batch
    (LAYER_HOST_S), a third more with full recompute (one more forward)."""
    return C.LAYER_HOST_S * (4 / 3 if i.recompute == "full" else 1.0)


def host_wait_s(i: Inputs, per_layer: tuple[Cost, Cost, float]) -> float:
    """Seconds per layer per micro-batch the GPU waits for the host: the CPU issues kernels ahead of
    the GPU, so the layer takes max(its kernels' time, the host's time to issue them); only the excess
    of the host time over the kernels' is added. A small layer (a 0.3B model at micro batch 1) is host
    bound whatever its GEMMs; a large one never is.

    The host's issue time hides the layer's kernels, not its tensor-parallel collectives: each all-reduce
    is a rendezvous of the TP ranks, which starts when the slowest rank's host has issued it (each host
    runs at its own pace) with the GPU queues drained behind a host-bound layer, so the exchange runs
    between the kernels issued before it and after it instead of beside them. vTrain's host-bound
    Megatron-DeepSpeed layers at TP 2-8 (micro batch 1-2, one node) measure the host time plus the
    exchange: with the exchange hidden under the host time they were predicted 15-60% fast."""
    layer, _, _ = per_layer
    return max(0.0, layer_launch_s(i) - layer.total) + moe_sync_s(i)


def moe_sync_s(i: Inputs) -> float:
    """Host time exposed per layer per micro-batch by the MoE token dispatcher's device-to-host sync:
    with expert or tensor parallelism Megatron's all-to-all dispatcher copies the token counts to the
    host and waits for them before the all-to-all (core/transformer/moe/token_dispatcher.py,
    cuda_sync_point "before_ep_alltoall"; "before_finish" without EP), once per forward (and recompute)
    of each MoE layer. The GPU then idles while the CPU issues the rest of the layer's forward kernels:
    MOE_SYNC_HOST_S."""
    if not i.moe:
        return 0.0
    forwards = 2 if i.recompute == "full" else 1
    return i.moe_fraction * forwards * C.MOE_SYNC_HOST_S


def _grad_bytes(i: Inputs) -> float:
    """Bytes per gradient element the data-parallel exchange moves: the engine's gradient buffer."""
    return 4.0 if i.dtype == "fp32" else i.grad_bytes


def exposed_behind(comm: float, window: float, buckets: int) -> float:
    """Seconds of a collective of ``comm`` seconds, cut into ``buckets`` equal buckets, left exposed
    after a compute window of ``window`` seconds that produces them one by one (a gradient bucket is
    ready when the backward has passed its layers; a parameter bucket is needed when the forward reaches
    them). The communication stream runs the buckets in order: the last bucket is always exposed, and
    when the exchange outruns the window the rest of it too: max(comm / b, comm - window x (b - 1) / b).
    What the engine overlaps, not a fitted share (DP_OVERLAP_FRACTION, fitted 0.1-0.8 depending on
    which source was held out, is gone)."""
    if comm <= 0.0:
        return 0.0
    b = max(1, buckets)
    return max(comm / b, comm - max(0.0, window) * (b - 1) / b)


def dp_buckets(i: Inputs, n_local: float) -> int:
    """Gradient buckets of the data-parallel exchange when the engine overlaps it: Megatron's DDP cuts
    the local parameters into buckets of max(MEGATRON_BUCKET_MIN_PARAMS, MEGATRON_BUCKET_PARAMS_PER_DP x DP x
    CP) parameters (core/distributed/distributed_data_parallel.py, with --overlap-grad-reduce; one bucket
    without it); DeepSpeed ZeRO 1/2 reduces its gradient buckets of ``reduce_bucket_size`` elements
    (stage_1_and_2.py, with overlap_comm)."""
    if i.owner == "megatron":
        size = max(C.MEGATRON_BUCKET_MIN_PARAMS, C.MEGATRON_BUCKET_PARAMS_PER_DP * i.dp * i.cp)
    else:
        size = i.reduce_bucket
    return max(1, math.ceil(n_local / max(1.0, size)))


def data_parallel(i: Inputs, n_local: float, t_mb: float, t_bwd: float, n_expert: float = 0.0) -> float:
    """Exposed data-parallel / ZeRO communication per step. ``t_mb``: one micro-batch on the slowest
    stage; ``t_bwd``: its backward (with recompute). With the exchange overlapped, its buckets run
    behind the backward of the micro-batch that produces them (:func:`exposed_behind`): only the last
    micro-batch's for Megatron's DDP and DeepSpeed's ZeRO 0/1 (gradients accumulate locally until the
    accumulation boundary: Megatron's no_sync on the other micro-batches), every micro-batch's for ZeRO-2
    (it reduces each micro-batch's gradients into the partitions). Megatron's --overlap-param-gather
    gathers the updated parameters bucket by bucket behind the next step's first forward.

    ``n_expert`` of the ``n_local`` parameters are routed experts' (ZeRO 0-2 and the distributed optimizer): their
    gradients are reduced, and the updated weights gathered, over the expert data-parallel group, not DP
    (:func:`expert_exchange`)."""
    d = shard_group(i)
    if d <= 1:
        return 0.0
    # without overlap the engine reduces after the backward, alone on the compute stream (DeepSpeed's
    # allreduce_gradients at the accumulation boundary: dist.all_reduce per bucket of 500M elements;
    # Megatron's DDP without --overlap-grad-reduce): a blocking large-message ring
    bw = dp_link_bw(i, d, blocking=i.shard_stage < 3 and not i.overlap_dp)
    gb = _grad_bytes(i)
    expert = expert_exchange(i, n_expert) if i.shard_stage < 3 else None
    if expert is not None:
        n_local -= n_expert
    if i.shard_stage >= 3:
        per_mb = (ring_time(2 * n_local, d, bw, 1.0) * 2 + ring_time(gb * n_local, d, bw, 1.0))
        # Prefetching hides the rest, never all of it: the first module's parameters are gathered
        # before any compute can run (DeepSpeed's PartitionedParameterCoordinator fetches a module in
        # its pre-forward hook and prefetches only the ones after it), and the last gradient bucket is
        # reduce-scattered after the backward ends (stage3.py independent_gradient_partition_epilogue).
        # One layer's all-gather and one layer's reduce-scatter per micro-batch stay exposed.
        layers = max(1, i.layers)
        unhidden = ring_time(2 * n_local / layers, d, bw, 1.0) + ring_time(gb * n_local / layers, d, bw, 1.0)
        return i.grad_accum * max(unhidden, per_mb - C.ZERO3_OVERLAP_FRACTION * t_mb)
    buckets = dp_buckets(i, n_local + (n_expert if expert is not None else 0.0))
    reduce_phases = 2.0 if i.shard_stage == 0 or (i.shard_stage == 1 and i.owner == "deepspeed-bf16") else 1.0

    def both(nbytes: float, phases: float) -> float:
        """The dense parameters' exchange over DP, then the experts' over the expert data-parallel group."""
        dense = ring_time(nbytes * n_local, d, bw, phases)
        return dense if expert is None else dense + ring_time(nbytes * n_expert, expert[0], expert[1], phases)

    if i.shard_stage == 2:
        reduce = both(gb, 1.0)
        gather = both(2.0, 1.0)
        per_mb = exposed_behind(reduce, t_bwd, buckets) if i.overlap_dp else reduce
        return i.grad_accum * per_mb + gather
    # BF16_Optimizer all-reduces its whole fp32 gradient buffer, then all-gathers the updated 16-bit weights; the
    # distributed optimizer and ZeRO-1 reduce-scatter instead; ZeRO 0 / DDP all-reduce and gather nothing
    reduce = both(gb, reduce_phases)
    gather = both(2.0, 1.0) if i.shard_stage == 1 else 0.0
    exposed = exposed_behind(reduce, t_bwd, buckets) if i.overlap_dp else reduce
    if i.overlap_dp and i.owner == "megatron":
        # --overlap-param-gather goes with the distributed optimizer: the same buckets, behind the forward
        gather = exposed_behind(gather, t_mb - t_bwd, buckets)
    return exposed + gather


def optimizer_time(i: Inputs, n_local: float, n_expert: float = 0.0) -> float:
    """The optimizer step over this GPU's shard; ``n_expert`` of the ``n_local`` parameters are routed experts',
    sharded over the expert data-parallel group (:func:`~trainlint.estimator.memory.expert_shard_group`)."""
    d = shard_group(i)
    if i.shard_stage >= 1 and 0.0 < n_expert <= n_local:
        sharded = (n_local - n_expert) / d + n_expert / expert_shard_group(i)
    else:
        sharded = n_local / d if i.shard_stage >= 1 else n_local
    if i.offload_opt in ("cpu", "nvme"):
        return sharded * (6.0 / C.PCIE_BYTES_PER_S + C.CPU_OPTIMIZER_S_PER_PARAM)
    return sharded * C.OPTIMIZER_BYTES_PER_PARAM / hbm(i)


def step_time(i: Inputs, cache: dict | None = None) -> TimeBreakdown:
    """Time per step: the slowest stage's micro-batches, the bubble from the mean stage, DP and the
    optimizer. Stages are timed once per kind (:func:`~trainlint.estimator.memory.stage_kinds`).
    ``cache``: a layout search's memo (:data:`trainlint.estimator.memory.Cache`)."""
    per_layer = layer_costs(i, cache)
    per_kind = []
    kinds = stage_kinds(i)
    for stage, layers, count in kinds:
        compute, tp, p2p, bwd = stage_microbatch(i, stage, layers, per_layer)
        per_kind.append((compute, tp, p2p, bwd, stage_params_per_gpu(i, stage, layers), count))
    launch = host_wait_s(i, per_layer)
    totals = [c.total + tp + p2p + C.MICROBATCH_OVERHEAD_S + kinds[k][1] * launch
              for k, (c, tp, p2p, _, _, _) in enumerate(per_kind)]
    worst = max(range(len(per_kind)), key=lambda k: totals[k])
    compute, tp, p2p, bwd, _, _ = per_kind[worst]
    m = i.grad_accum
    mean_mb = sum(t * k[5] for t, k in zip(totals, per_kind, strict=True)) / i.pp
    bubble = (i.pp - 1) / i.vpp * mean_mb if i.pp > 1 else 0.0
    fullest = max(range(len(per_kind)), key=lambda k: per_kind[k][4])
    n_max = per_kind[fullest][4]
    n_expert = stage_expert_params_per_gpu(i, kinds[fullest][1])
    # the backward's share of the slowest stage's micro-batch as the GPU runs it (its exposed TP time and
    # host waits included): the window the gradient buckets are reduced behind
    bwd_wall = totals[worst] * bwd.total / compute.total if compute.total else 0.0
    dp = data_parallel(i, n_max, totals[worst], bwd_wall, n_expert)
    opt = optimizer_time(i, n_max, n_expert)
    bubble_cost = compute.scale(bubble / totals[worst]) if totals[worst] else Cost()
    ep = m * kinds[worst][1] * ep_comm_per_layer(i) if i.moe and i.ep > 1 else 0.0
    lone = ep_unpaired_s(i, kinds[worst][1])
    return TimeBreakdown(
        compute=m * (compute.total + C.MICROBATCH_OVERHEAD_S + kinds[worst][1] * launch), tp_comm=m * tp - ep,
        ep_comm=ep + lone, pp_bubble=bubble,
        pp_comm=m * p2p,
        dp_comm=dp, optimizer=opt, overhead=C.STEP_OVERHEAD_S,
        flops_time=m * compute.flops + bubble_cost.flops,
        bytes_time=m * compute.bytes + bubble_cost.bytes + opt,
        net_time=m * (tp + p2p) + dp + lone,
        stage_microbatch_s=[t for t, k in zip(totals, per_kind, strict=True) for _ in range(k[5])],
    )


def ep_unpaired_s(i: Inputs, layers: int) -> float:
    """Seconds the partnerless micro-batch chunks of the combined 1F1B schedule add (:func:`ep_1f1b_unpaired`):
    their exchanges fully exposed instead of the steady state's :func:`ep_1f1b_exposed`, on ``layers`` layers of
    the stage (a chunk holds layers / vpp of them). 0 without --overlap-moe-expert-parallel-comm."""
    if not (i.moe and i.ep > 1 and i.overlap_ep):
        return 0.0
    one = ep_a2a_time(i)
    extra = max(0.0, 4.0 * one - ep_1f1b_exposed(i, one))
    return i.moe_fraction * ep_1f1b_unpaired(i) * layers / max(1, i.vpp) * extra


def step_time_floor(i: Inputs, cache: dict | None = None) -> float:
    """A lower bound on ``step_time(i, cache).step_time`` at a fraction of its cost, for a layout
    search's branch and bound (:mod:`trainlint.layout.search`): the grad-accumulation micro-batches
    of the fullest stage, or of the last one with the output layer when that is slower (layers'
    compute, exposed TP time and host wait, output GEMMs and cross-entropy, host overhead per
    micro-batch),
    the pipeline bubble of a mean stage holding only its share of those, plus the per-step
    overhead. Every term left out (p2p, DP, the optimizer, the embedding) is >= 0, the slowest stage
    is at least as slow as either, and the mean stage at least as slow as its share, so the floor
    never exceeds the step time (up to rounding: the caller keeps a margin)."""
    kinds = stage_kinds(i)
    per_layer = layer_costs(i, cache)
    return floor_of(per_layer, output_seconds(i, cache), max(layers for _, layers, _ in kinds), kinds[-1][1],
                    i.grad_accum, i.layers, i.pp, i.vpp, host_wait_s(i, per_layer))


_WINDOW = 1e300
"""A compute window longer than any step's: behind it every overlapped bucket but the last is hidden."""


def exchange_floor(i: Inputs) -> float:
    """A lower bound on the terms of :func:`step_time` that :func:`step_time_floor` leaves out: the
    pipeline's point-to-point time of the micro-batches, the optimizer step and the data-parallel
    exchange as if the backward and the forward were long enough to hide every bucket they can
    (:func:`exposed_behind` only falls as its window grows). Each is the very term step_time adds
    (the same functions of the same inputs), and none depends on the stage chosen as the slowest
    but through the stage holding the most parameters, which step_time picks the same way, so
    ``step_time_floor(i) + exchange_floor(i)`` never exceeds the step time (up to rounding: a
    search keeps a margin). A layout search adds it to its bounds: ~1.5% of a step, beyond the
    1% within which layouts tie, so far fewer layouts are timed."""
    kinds = stage_kinds(i)
    fullest = max(range(len(kinds)), key=lambda k: stage_params_per_gpu(i, kinds[k][0], kinds[k][1]))
    n_max = stage_params_per_gpu(i, kinds[fullest][0], kinds[fullest][1])
    n_expert = stage_expert_params_per_gpu(i, kinds[fullest][1])
    return (i.grad_accum * p2p_seconds(i) + data_parallel(i, n_max, 2 * _WINDOW, _WINDOW, n_expert)
            + optimizer_time(i, n_max, n_expert))


def floor_of(per_layer: tuple[Cost, Cost, float], output: float, most: int, last: int, grad_accum: int, layers: int,
             pp: int, vpp: int, launch: float = 0.0) -> float:
    """:func:`step_time_floor` from its parts: one layer's costs (:func:`layer_costs`), the output
    layer's seconds (:func:`output_seconds`), the layers of the fullest and of the last stage
    (:func:`~trainlint.estimator.memory.stage_kinds`), the micro-batches per step, and the model's
    layers, stages and chunks per stage (the bubble: (p - 1) / v x the mean stage's micro-batch,
    whose stages together hold every layer and the output layer); ``launch``: the host wait per layer
    (:func:`host_wait_s`, which step_time adds per layer of every stage; 0 leaves it out: a lower floor)."""
    layer, _, layer_tp = per_layer
    return floor_from(layer.total + layer_tp + launch, output, most, last, grad_accum, layers, pp, vpp)


def floor_from(per: float, output: float, most: int, last: int, grad_accum: int, layers: int, pp: int,
               vpp: int) -> float:
    """:func:`floor_of` from one layer's seconds (all passes and exposed TP time) and the output
    layer's: a layout search also bounds whole structures with it (layout.search._structure_bound)."""
    slowest = max(most * per, last * per + output)
    floor = grad_accum * (slowest + C.MICROBATCH_OVERHEAD_S) + C.STEP_OVERHEAD_S
    if pp > 1:
        floor += (pp - 1) / vpp * ((layers * per + output) / pp + C.MICROBATCH_OVERHEAD_S)
    return floor


# --------------------------------------------------------------------------- FLOPs


def model_flops_per_step(i: Inputs) -> float:
    """6 x (active matmul parameters incl. the output layer) x tokens + 12 L s q x tokens:
    the usual MFU convention (non-causal attention, no recompute, embeddings lookups free)."""
    tokens = i.global_batch * i.seq
    split, _, expert = layer_params(i)
    if i.moe:
        expert = expert * i.top_k / i.experts + i.moe_fraction * i.hidden * i.experts
    matmul = i.layers * (split + expert) + i.vocab * i.hidden
    return 6 * matmul * tokens + 12 * i.layers * i.seq * i.q_dim * tokens


def hardware_flops_per_step(i: Inputs) -> float:
    """Model FLOPs plus what recompute executes again (full: one more forward of every layer;
    selective: the modules it names, by default the attention core)."""
    tokens = i.global_batch * i.seq
    split, _, expert = layer_params(i)
    if i.moe:
        expert = expert * i.top_k / i.experts
    extra = 0.0
    attn = 4 * i.layers * i.seq * i.q_dim * tokens
    if i.recompute == "full":
        extra = 2 * i.layers * (split + expert) * tokens + attn
    elif i.recompute == "selective":
        modules = set(i.recompute_modules)
        extra = attn if "core_attn" in modules else 0.0
        mats = 3 if i.gated else 2
        f = i.moe_fraction if i.moe else 0.0
        if "mlp" in modules:  # the dense MLPs' forward again
            extra += 2 * i.layers * (1 - f) * mats * i.hidden * i.ffn * tokens
        if "moe" in modules and i.moe:  # the routed experts' forward again
            extra += 2 * i.layers * expert * tokens
    return model_flops_per_step(i) + extra


__all__ = ["TimeBreakdown", "active_params", "hardware_flops_per_step", "layer_params_per_gpu", "model_flops_per_step",
           "peak_flops", "step_time"]


@dataclass(frozen=True)
class DataParallelTraffic:
    """What the data-parallel (or ZeRO) exchange of one step costs, before any overlap."""

    bytes_per_gpu: float
    """Gradient (and, with sharding, parameter) bytes each GPU exchanges per step."""
    link_bytes_per_s: float
    """Achievable per-GPU bandwidth of the DP group's links (NVLink inside a node, the NIC across)."""
    raw_time: float
    """Seconds the exchange takes with no overlap at all."""
    exposed_time: float
    """Seconds the step waits for it (the part not hidden behind the backward pass)."""


def data_parallel_traffic(i: Inputs) -> DataParallelTraffic:
    from dataclasses import replace

    d = shard_group(i)
    n_max = max(stage_params_per_gpu(i, s, layers) for s, layers in enumerate(stage_layers(i)))
    gb = _grad_bytes(i)
    if i.shard_stage >= 3:
        volume = i.grad_accum * (2 * 2 * n_max + gb * n_max)
    elif i.shard_stage == 2:
        volume = i.grad_accum * gb * n_max + 2 * n_max
    elif i.shard_stage == 1:
        volume = (2 if i.owner == "deepspeed-bf16" else 1) * gb * n_max + 2 * n_max
    else:
        volume = 2 * gb * n_max
    exposed = step_time(i).dp_comm if d > 1 else 0.0
    raw = step_time(replace(i, overlap_dp=False)).dp_comm if d > 1 else 0.0
    return DataParallelTraffic(volume * (d - 1) / d if d > 1 else 0.0, dp_link_bw(i, d), raw, exposed)
