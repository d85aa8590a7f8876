"""Every fitted or assumed coefficient of the estimator, in one place.

Each constant is GLOBAL: the same for every model, GPU and framework. Each one names a physical
quantity (a fraction of a datasheet peak, a number of bytes per element, a fixed overhead in
seconds or GiB). Hardware figures themselves (peaks, HBM and link bandwidths) come from the GPU
catalog (``gpus.json`` of the ``trainlint.data`` package), never from here.

How they were set: the "physical" ones from the framework sources or datasheets named in each
comment; the "fitted" ones (``FITTED``, in :mod:`.ranges`, each with the physical range the fit may not
leave) by ``benchmarks/accuracy.py --fit`` over both files of ``../shared/calibration``, every
row read through the user's path (written as the files its users write, read by the adapters):
a coordinate search inside the ranges minimising the per-source weighted median plus half the
90th percentile of the absolute relative error. No per-row or per-model constant exists anywhere
in the estimator, and no known configuration is ever looked up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.estimator.ranges import FITTED, RANGES, Bounds  # noqa: F401

GIB = 2**30

# --------------------------------------------------------------------------- compute

GEMM_PEAK_FRACTION = 0.80
"""Fitted (range 0.55-1; the shipped values of every fitted coefficient are the in-sample fit of
``benchmarks/accuracy.py --passes 2`` over the three calibration files read through a user's path,
the fit seeing at most 30 rows per source; the benchmark prints them beside each leave-one-source-out
refit). Fraction of the GPU's measured maximum achievable matmul throughput (catalog
``matmul_achievable_fraction``, MAMF: the best large GEMM shape alone on the GPU) that the GEMMs of a
training step sustain: real shapes (wave quantisation), clocks under the whole step's power draw and
kernels not modelled separately bring it below 1. The GPU's own MAMF carries what differs between parts
(A100 87% of its datasheet peak, H100 80%, B200 78%, GB200 73%); before it was a catalog term this one
fraction of the datasheet peak (0.64) was shared by every GPU, and A100 rows were predicted 15-20% slow
while H100/B200 recipe rows were predicted 30-40% fast. With HBM_ACHIEVABLE_FRACTION below it gives the
kernel efficiency as a function of GEMM size:
time = FLOPs / (peak x MAMF x this) + bytes / (HBM bandwidth x HBM fraction)."""

MATMUL_ACHIEVABLE_DEFAULT = 0.80
"""Physical: the MAMF share of the dense peak assumed for a GPU the catalog has no measurement for
(H100 PCIe / NVL, H200 NVL, H20, L4, V100; the measured NVIDIA parts span 0.73-0.87, H100 0.80). Not the
measured SXM part of the same architecture: Bekman's table puts the power-limited A100 PCIe (81.1%) 7% below
the A100 SXM (86.9%), so a form factor other than the measured one has no figure; parts that are the measured
die with links cut (A800, H800) and the GB300 (the GB200's, an assumption) carry their figure in the catalog."""

HBM_ACHIEVABLE_FRACTION = 0.80
"""Physical (STREAM-like measurements on A100/H100 reach 80-90% of the datasheet bandwidth).
Used for the bytes term of every kernel: GEMM operands, elementwise ops, the optimizer step."""

FLASH_ATTENTION_PEAK_FRACTION = 0.327
"""Fitted (range 0.3-0.75). Fraction of the dense tensor-core peak a fused (flash / cuDNN) attention
kernel sustains over its executed FLOPs (causal half only) at long sequences and head dim 128 on Hopper and
later parts (FlashAttention-2 on H100 SXM: 0.33 over forward + backward, Shah et al. 2024; FlashAttention-3
75% forward); on Ampere, and for flash-attn's Triton kernel, it is multiplied by the published ratios of the
``# --- s35-attn ---`` block (:func:`performance.attention_kernel_factor`: FlashAttention-2 keeps 73% / 63% of
an A100's peak, Dao 2023). Scaled down for short sequences and small heads by
:func:`performance.attention_efficiency` (FLASH_ATTENTION_HALF_SEQ, FLASH_ATTENTION_HEAD_DIM_EXPONENT).
Replaces the single ATTENTION_PEAK_FRACTION (0.19), which was fitted on 500 W power-capped H100 rows
mapped to the 700 W peak and absorbed the power cap and the context-parallel ring exchange; both are
now terms of their own (POWER_CAP_CLOCK_EXPONENT, CP_RING_EXPOSED_FRACTION)."""

FLASH_ATTENTION_HALF_SEQ = 405.3
"""Fitted (range 256-4096 tokens). Sequence length at which the flash kernel reaches half its
long-sequence efficiency: per-tile softmax rescaling, the causal diagonal tiles and launch cost weigh
more on short key ranges (FlashAttention-2 Fig. 4: at 512 tokens ~60% of the 16k throughput)."""

FLASH_ATTENTION_HEAD_DIM_EXPONENT = 0.5
"""Physical estimate, not fitted (range 0-1). Efficiency scales as (head_dim / 128) ** this below 128:
FlashAttention-2 Fig. 4-7, head dim 64 runs 15-25% below 128 at equal length ((0.5) ** 0.5 = 0.71)."""

POWER_CAP_CLOCK_EXPONENT = 1.0
"""Fitted (range 0.2-1). A power-capped part (catalog ``power_limit_w`` below ``max_power_w``) sustains
(cap / max) ** this of its datasheet tensor clock: dynamic power ~ f V^2 with V falling along the V/f
curve gives f ~ P ** (1/3 .. 1/2) near the top of the curve, ~ P lower down."""

FLASH_BACKWARD_FLOP_RATIO = 2.5
"""Physical: flash-attention backward executes 2.5x the forward FLOPs (recomputes the scores:
5 GEMMs instead of 2; Dao 2023, FlashAttention-2 section 3)."""

UNFUSED_SOFTMAX_BYTES_PER_SCORE = 9.0
"""Physical: bytes of HBM traffic per attention score in the forward pass of an unfused attention
(Megatron's FusedScaleMaskSoftmax reads the 16-bit scores and writes the probabilities, 4 B; attention
dropout reads them and writes its output and a 1-byte mask, 5 B). Was 12 with the backward at twice
the forward, which overstated the unfused rows (Narayanan 2021, vTrain, BLOOM) by 5-10%."""

UNFUSED_SOFTMAX_BACKWARD_BYTES_PER_SCORE = 11.0
"""Physical: the backward of the same two kernels per score: dropout backward reads the gradient and
the mask and writes a gradient (5 B); softmax backward reads the probabilities and the gradient and
writes the score gradient (6 B)."""

ELEMENTWISE_BYTES_PER_HIDDEN = 28.16
"""Fitted, ~physical: bytes of HBM traffic per token per hidden unit per layer in the forward
pass for the non-GEMM ops other than the MLP activation (two norms, two residual adds, bias and
dropout, rotary): roughly ten 16-bit tensors read or written. Backward moves twice as much."""

MOE_PERMUTE_BYTES_PER_ELEMENT = 8.0
"""Physical: HBM bytes per routed token copy per hidden unit in the forward pass of a MoE layer's token
dispatcher: permute reads and writes each of the top-k copies (2 x 2 B in 16 bit) and unpermute reads
them and writes the weighted sum (2 x 2 B) (Megatron core/transformer/moe/moe_utils.py permute /
unpermute; the backward, like every elementwise op here, moves twice as much). At top-8 on a B200 this
is a fifth of a fine-grained MoE layer's GEMM time, and it was missing: the MoE recipe rows on H100 /
B200 were predicted 25-40% fast while the dense ones were not."""

FP8_GEMM_SPEEDUP = 1.9
"""Set, no longer fitted (range [1, 2]: RANGES). Realised speed-up of an FP8 GEMM over the same
16-bit GEMM (the datasheet says 2x) on a GPU whose catalog entry has no measured FP8 MAMF; where it
has one, the speed-up is the ratio of the measured FP8 and 16-bit matmul throughputs (H100 1.77x,
B200 1.97x: :func:`performance.gemm_speed`). Was fitted on the only FP8 rows (torchtitan + torchao float8,
6 rows), which have no user's path (no torchtitan adapter): weakly determined."""

MICROBATCH_OVERHEAD_S = 0.00106
"""Fitted. Fixed host-side time per micro-batch per pipeline stage (schedule bookkeeping,
p2p handshakes, kernel-launch gaps, Python), seconds. Was 4.24 ms, where vTrain alone held it: every other
source's refit moved it to 1 ms or below, and vTrain's host-bound rows then ran 12% fast (its held-out median
went from 9.0% to 12.0% on this coefficient alone). vTrain's extra time is per layer, not per micro-batch: fitted
as time per micro-batch = a + b x micro batch on each of its single-node models (TP 1-2, PP 1), the intercept
measured above the estimate grows with the layer count, 0.4-0.55 ms per layer at 12, 16, 20 and 24 layers
(h 1024, TP 1: +4.8, +6.9, +9.7, +13.3 ms), which is LAYER_HOST_S's term (2.0 -> 2.5 ms), not this one."""

LAYER_HOST_S = 2.5e-3
"""Fitted (range 0-5 ms). Host (CPU) time to issue one transformer layer's forward and backward
kernels for one micro-batch: ~40 forward and ~80 backward kernels at 5-25 us of PyTorch eager
dispatch and Python module code each (more with DeepSpeed's activation checkpointing, which saves and
restores RNG states per layer; CUDA graphs remove most of it). The CPU runs ahead of the GPU, so a
layer takes max(its kernels, this) (:func:`performance.host_wait_s`). Replaces LAYER_LAUNCH_S, which
added the same time to every layer whatever its size: vTrain's Megatron-DeepSpeed sweeps show a flat
~3 ms per layer per micro-batch (with full recompute) for every layer whose kernels take less, at TP 1
to 8 and micro batch 1 to 4 alike, and device-bound times above it. vTrain is the source that measures it
(small host-bound layers); the MoE dispatcher's sync is MOE_SYNC_HOST_S, not a share of this, and a TP
layer's all-reduces add to it rather than hide under it (:func:`performance.host_wait_s`), so the refit
without vTrain no longer moves it (it moved to 3.2 ms to slow the MoE rows). 2.5 ms since the per-micro-batch
time vTrain's rows put into MICROBATCH_OVERHEAD_S (4.24 ms) was found to grow with the layer count (see there):
~3.3 ms per layer per micro-batch with full recompute, ~160 kernels at ~20 us each."""

MOE_SYNC_HOST_S = 4.0e-4
"""Physical estimate, not fitted (range 0.1-1 ms): host time the GPU waits per MoE layer per forward (and
recompute) after the token dispatcher's device-to-host sync (core/transformer/moe/token_dispatcher.py: the
token counts are copied to the host and waited for at ``cuda_sync_point``, "before_ep_alltoall" with EP,
"before_finish" without). The GPU's queue is empty there, and it runs only as fast as the CPU issues the
rest of the layer's forward: dispatch all-to-all, permute, grouped GEMMs, unpermute, combine, about 25
kernels at 10-20 us of eager dispatch each. Its own term, not a share of LAYER_HOST_S: tied to it (as
MOE_SYNC_HOST_SHARE x LAYER_HOST_S was), the fit raised the per-layer host time of every dense run to
lower the MoE rows' speed whenever vTrain, the one source that measures host-bound layers, was held out
(vTrain held out: median error 20.9% with the shared term, 10.5% with this one)."""

STEP_OVERHEAD_S = 0.0005
"""Fitted. Fixed time per optimizer step outside forward/backward (data loader hand-off,
gradient-norm reduction, loss-scale checks, logging), seconds; the optimizer's HBM traffic and the
data-parallel exchange are terms of their own. No source pins it (the refits moved it between 0.1 and 16.5 ms
as one source or another was held out); vTrain's short single-node steps (90-800 ms) measure the per-step
intercept of a + b x micro batch fits below what the optimizer and DP terms already give, so it sits near 0
(was 8.3 ms, which with the DP exchange at the backward-side NVLink share made those steps 20-30 ms long)."""

OPTIMIZER_BYTES_PER_PARAM = 36.0
"""Physical: HBM traffic of a fused mixed-precision Adam step per local parameter: read fp32
master, m, v and grad (16 B), write master, m, v (12 B), write the 16-bit copy (2 B), plus the
gradient unscale / norm pass (~6 B)."""

CPU_OPTIMIZER_S_PER_PARAM = 1.5e-9
"""Physical estimate: DeepSpeed CPUAdam throughput per core group is ~1e9 parameters/s per
socket (ZeRO-Offload paper, Ren et al. 2021); used for optimizer offload."""

PCIE_BYTES_PER_S = 20e9
"""Physical: achievable host<->device bandwidth of a PCIe Gen4 x16 link (~25 GB/s peak)."""

# --------------------------------------------------------------------------- communication

INTRA_NODE_LINK_FRACTION = 0.40
"""Fitted, ~physical: fraction of the catalog's unidirectional NVLink/NVSwitch bandwidth a
tensor-parallel NCCL all-reduce of activation size (tens of MB) reaches as bus bandwidth
(nccl-tests: ~230 of 300 GB/s on A100 for large messages, less for these sizes). The fit sits at the
range's low end once the host-bound floor (LAYER_HOST_S) no longer hides small layers' TP time: TP
all-reduces of a few MB without --tp-comm-overlap reach 100-150 GB/s on A100 NVLink."""

INTER_NODE_LINK_FRACTION = 0.625
"""Fitted, ~physical (range 0.5-0.95): fraction of the per-GPU NIC bandwidth (InfiniBand/RoCE) NCCL
reaches across nodes."""

COLLECTIVE_LATENCY_S = 2e-5
"""Physical: fixed latency per NCCL collective (launch + ring setup), seconds."""

TP_COMM_OVERLAP_FRACTION = 0.6
"""Physical estimate, NOT fitted (no usable calibration row enables it): share of
tensor-parallel communication hidden behind GEMMs when the framework overlaps them
(Megatron --tp-comm-overlap, userbuffers)."""

P2P_OVERLAP_FRACTION = 0.8
"""Physical estimate, not fitted (range 0-1). Share of the interleaved pipeline's sends and receives
hidden behind the next chunk's compute (Megatron's overlap_p2p_comm, on by default with VPP > 1:
core/pipeline_parallel/schedules.py posts them asynchronously and waits only before the chunk that
needs them)."""

CP_RING_PASSES = 3.0
"""Physical: ring-attention K/V exchanges per layer per micro-batch: one in the forward, two in the
backward (K and V again, and their gradients) (Megatron/TE context_parallel.py AttnFuncWithCPAndKVP2P)."""

ULYSSES_A2A_PASSES = 2.0
"""Physical: DeepSpeed-Ulysses all-to-all rounds per layer per micro-batch, each moving Q, K, V in and the
attention output back (deepspeed/sequence/layer.py DistributedAttention: _SeqAllToAll before and after the
local attention): one round in the forward, one in the backward (the gradients of the same tensors), on the
compute stream (not overlapped); full recompute adds the forward's again."""

CP_RING_EXPOSED_FRACTION = 0.5
"""Physical estimate, not fitted (range 0-1). Share of each ring step left exposed: the exchange of
step k+1 runs beside the attention block of step k; short blocks (small seq / CP) hide less."""

EP_A2A_OVERLAP_FRACTION = 0.0
"""Physical, not fitted (range 0-1): share of the expert all-to-all hidden behind compute without
--overlap-moe-expert-parallel-comm: Megatron's alltoall and DeepEP dispatchers run it on the critical
path, 0. With the flag the hidden share is no constant: :func:`performance.ep_1f1b_exposed` replays the combined 1F1B
schedule's two streams (each exchange beside the other micro-batch's compute) and :func:`performance.ep_unpaired_s`
charges the partnerless warm-up and cool-down chunks (s35-a2a; replaces EP_A2A_1F1B_OVERLAP_FRACTION, a flat 0.8)."""

MEGATRON_BUCKET_MIN_PARAMS = 40e6
"""Physical, from the source (range: a fact of the engine, not fitted): Megatron-Core's DDP cuts its gradient
buffer into buckets of max(40,000,000, 1,000,000 x data-parallel size incl. CP) parameters when it overlaps the
reduction (core/distributed/distributed_data_parallel_config.py ``bucket_size``: "If unspecified, MCore uses a
default value of max(40000000, 1000000 * dp_size) parameters"; one bucket without --overlap-grad-reduce). The
buckets are reduced one by one behind the backward of the last micro-batch and gathered behind the next
forward (:func:`performance.exposed_behind`): the last bucket is always exposed. Replaces
DP_OVERLAP_FRACTION (a fitted share of the backward, 0.8 shipped), which the refit moved to 0.1 when vTrain
(whose ZeRO-0 rows it does not even touch) was held out: a free share standing in for whatever the other
sources' Megatron-Bridge rows lacked."""

MEGATRON_BUCKET_PARAMS_PER_DP = 1e6
"""Physical, from the source: the per-data-parallel-rank term of Megatron's default bucket size (above)."""

ZERO3_OVERLAP_FRACTION = 0.8
"""Physical estimate; the fit leaves it where it starts. Share of a micro-batch's compute that
hides ZeRO-3 / FSDP parameter all-gathers
and gradient reduce-scatters (prefetching)."""

# -- dense throughput (s33-thru)

NVLINK_RING_BUS_FRACTION = 0.75
"""Physical, from measurements (range 0.6-0.9; not fitted): share of the catalog's per-direction NVLink rate that a
large NCCL ring all-reduce / all-gather / reduce-scatter reaches as bus bandwidth when it runs alone on the compute
stream, as Megatron's tensor-parallel collectives without --tp-comm-overlap do (the GPU waits for them). nccl-tests
all_reduce_perf on 8 GPUs behind NVSwitch: ~230-240 of 300 GB/s on DGX A100 (0.77-0.8), ~360-370 of 450 GB/s on
DGX H100 without NVLink SHARP (0.8). Used with the ring's per-step latency (NCCL_RING_STEP_LATENCY_S), which is
what a smaller message loses. INTRA_NODE_LINK_FRACTION remains the share the other exchanges get (data-parallel
buckets and ZeRO gathers beside the backward, the expert all-to-all, pipeline sends). A data-parallel exchange that
is not overlapped runs the same way, alone on the compute stream after the backward, in large buckets (DeepSpeed's
ZeRO 0 ``allreduce_gradients`` -> ``buffered_allreduce_fallback``: one ``dist.all_reduce`` per 500M-element bucket
at the accumulation boundary; Megatron's DDP without --overlap-grad-reduce): it gets this share inside the NVLink
domain too (:func:`performance.dp_link_bw`, ``blocking``)."""

NCCL_RING_STEP_LATENCY_S = 3.4e-6
"""Physical, from the source (range 1.9-3.4 us; not fitted): latency of one step of an NCCL ring over NVLink,
paid 2 (n - 1) times by a ring all-reduce of n ranks and n - 1 times by a reduce-scatter or all-gather, beside
the bytes over the bus bandwidth. NCCL's own cost model (src/graph/tuning.cc ``hwLat[NCCL_HW_NVLINK]
[NCCL_ALGO_RING]``: 1.9 us with the LL128 protocol, 3.4 us with Simple, which large messages use) prices a ring
collective as base latency + steps x this + bytes / bus bandwidth. Applied to the tensor-parallel collectives with
NVLINK_RING_BUS_FRACTION, the large-message bus bandwidth nccl-tests measure: a TP-8 all-reduce of 4 MB then reaches
about a third of it, one of 64 MB (Llama-70B at 4k tokens) nine tenths. One size-independent fraction
(INTRA_NODE_LINK_FRACTION, fitted to its range's low end, 0.40, by vTrain's small layers) priced the 50-200 MB
all-reduces of large TP-8 layers (Narayanan 2021, FlagPerf Llama-70B on H100 / H800, vTrain h >= 6144) ~1.8x slow:
those families were predicted 15-25% slow."""

# --------------------------------------------------------------------------- memory

CUDA_CONTEXT_GIB = 0.9
"""Physical: CUDA context + cuBLAS/cuDNN workspaces per process on A100/H100 (0.5-0.8 GiB as
nvidia-smi shows for an idle PyTorch process). Not part of torch's reserved memory."""

NCCL_GIB_PER_COMMUNICATOR = 0.38
"""Physical estimate: NCCL buffers per communicator a rank belongs to (NCCL_BUFFSIZE 4 MiB x
channels x peers, plus proxy buffers for the network ones), GiB. Counted once per parallel group
of size > 1 (TP, PP, DP, CP, EP, embedding group)."""

ALLOCATOR_FRAGMENTATION = 0.22
"""Physical estimate, pinned (range 0-0.6; no longer fitted: the calibration rows measure what the
allocator reserves, not what it cannot give back). Share of what the PyTorch caching allocator hands out
per step (activations, their workspaces and the transient communication buffers) that it holds on top
and cannot release when an allocation fails: free pieces of split blocks inside segments that still hold
live tensors (c10/cuda/CUDACachingAllocator.cpp frees only "cached blocks that are not split" before it
retries a failed cudaMalloc). Part of what a run needs, so of every "does not fit" verdict; 0.22 is where
the verdicts were set when one coefficient stood for the whole gap (every recorded OOM caught). Not
applied to memory allocated once and never freed: Megatron's contiguous parameter and gradient buffers
(core/distributed/param_and_grad_buffer.py) and the optimizer's flat fp32 state, or DeepSpeed's
flattened ZeRO partitions, which sit in blocks of their own from the first step (applying it there cost
13-20 GiB on recipe runs that completed). Charged only where short- and long-lived allocations interleave
(:func:`memory.lifetimes_interleave`; ZeRO, Rajbhandari et al. 2020, Sec. 6.3: checkpointed vs discarded
activations, parameter gradients allocated in the backward vs activation gradients; and a pipeline stage's
micro-batches in flight across another's backward): a step of one micro-batch at a time without recompute whose
gradients go into a buffer allocated up front frees its activations in the reverse order it allocated them, in the
same sizes every step, and the same share of reserved memory is then cache the allocator releases (shown, not
needed). Charged on every step before, it called 20 completed runs "does not fit" (llm-foundry's MPT tables
without activation checkpointing at the largest micro batch that ran); the recorded OOMs it must catch are runs
with full recompute or pipelines, where it still is."""

ALLOCATOR_CACHE = 0.48
"""Fitted (range 0-0.6). Share of what one micro-batch allocates and frees (its activations, workspaces and
logits, and the transient buffers; not the other micro-batches a pipeline stage holds, whose blocks are of the
sizes the next one asks for again) that the caching allocator keeps reserved beyond ALLOCATOR_FRAGMENTATION
while the GPU has room: whole cached blocks, freed and the allocation
retried before PyTorch raises out-of-memory (c10/cuda/CUDACachingAllocator.cpp), so never part of what a
run needs. nvidia-smi and torch.cuda.max_memory_reserved show it (the gap between max_reserved and
max_allocated of long runs is 10-35% of the whole): the calibration rows that state reserved or
nvidia-smi memory are compared with the estimate plus this cache (``StageMemory.observed``), and the fit
sets it from them; with one coefficient for both, memory rows were under-predicted by 13% (signed median)
while completed recipe runs were called "does not fit"."""

FP16_OPTIMIZER_STEP_BYTES = 8.0
"""Physical, from the source (range 4-8; not fitted): bytes per parameter of the fp32 gradients DeepSpeed's
FP16_Optimizer (ZeRO 0 in fp16, and bf16 with bf16 accumulation: DDP_BFLOAT16) builds for its step, two
allocations alive together: each parameter's ``p.grad.to(fp32)`` and their flattened copy
(deepspeed/runtime/fp16/fused_optimizer.py, step: ``_flatten_dense_tensors([... p.grad.to(data_type) for p
in group])``, v0.9 to v0.19); the 16-bit gradients are dropped only after it. The ZeRO optimizers and
Megatron make one fp32 copy (4)."""

ZERO_STEP_GRAD_BYTES = 6.0
"""Physical, from the source (range 4-6; not fitted): bytes per parameter of its partition that DeepSpeed ZeRO
stage 1/2 holds at once in its step when the gradients are 16-bit: the partition's gradients flattened into one
16-bit buffer and that buffer's fp32 copy (deepspeed/runtime/zero/stage_1_and_2.py, step:
``flat_grad_partition = self.flatten(self.averaged_gradients[i])``, then ``single_grad_partition =
flat_grad_partition.to(fp32)`` before ``del flat_grad_partition``: 2 + 4). The flat copy is skipped only by
the pre-flattened partitions of DeepCompile (2026), hence the range; with fp32 gradient accumulation the
``.to`` is the same tensor and the optimizer's 4 bytes are all."""

ACTIVATION_WORKSPACE_LAYERS = 1.54
"""Fitted (physical range 1-2): layers' worth of un-checkpointed activations alive beyond what
is stored between passes: the layer being recomputed (full recompute) plus the activation
gradients of the layer in backward."""

LOGITS_BYTES_PER_ELEMENT = 6.0
"""Physical: 16-bit logits (2 B) plus the fp32 copy the vocab-parallel cross-entropy keeps for
its backward (4 B), per logit, for the micro-batch at the loss (Megatron
core/tensor_parallel/cross_entropy.py computes in fp32)."""


LOGITS_IN_PLACE_BYTES_PER_ELEMENT = 2.0
"""Physical, from the source (range 2-4; not fitted): bytes per logit at the loss when Transformer Engine's fused
cross entropy computes it (Megatron ``--cross-entropy-loss-fusion --cross-entropy-fusion-impl te``, Megatron-Bridge's
perf recipes): its triton kernel reads the 16-bit logits, computes the loss in fp32 registers and stores the
gradient into the logits tensor itself (transformer_engine/pytorch/triton/cross_entropy.py cross_entropy_kernel,
``tl.store(X_ptr + X_offsets, X_block.to(grad_dtype))``), so the 16-bit logits are all (LOGITS_BYTES_PER_ELEMENT
is the fp32 path's 6)."""

# -- MoE (s33-moe)

MOE_UNFUSED_PERMUTE_BYTES_PER_ELEMENT = 20.0
"""Physical, counted from the source (range 16-26; not fitted): forward HBM bytes per routed token copy per hidden
unit of Megatron-Core's allgather token dispatcher up to 0.8 (engine.moe_unfused_permute), in place of
MOE_PERMUTE_BYTES_PER_ELEMENT: two ``torch.gather`` passes over expanded indices (the local tokens' top-k copies, then
their expert order: read + write 2 x 2 B each), ``zeros_like`` + ``scatter`` of the experts' output back to token order
(2 + 2 + 2 B) and a ``scatter_add`` into a zero-filled global tensor (read 2 B, read-modify-write the destination,
its zeros a k-th per copy) (core_v0.6.0 / core_v0.8.0 transformer/moe/token_dispatcher.py MoEAllGatherTokenDispatcher);
the router weights' multiply is MOE_PROBS_MULTIPLY_BYTES_PER_ELEMENT. The backward, like every elementwise op here,
moves twice as much."""

MOE_PROBS_MULTIPLY_BYTES_PER_ELEMENT = 4.0
"""Physical (range 4-6; not fitted): forward HBM bytes per routed token copy per hidden unit of the router weights'
multiply on the experts' output where it is a kernel of its own (engine.moe_probs_on_output, Megatron-Core before
0.12: read and write the 16-bit copy); from 0.12 the experts fuse it into their activation."""


# -- memory (s33-mem)

BF16_OPTIMIZER_LP_GRAD_BYTES = 2.0
"""Physical, from the source (range 0-2; not fitted): bytes per parameter of the 16-bit gradients DeepSpeed's
BF16_Optimizer leaves in each parameter's ``.grad`` beside its full fp32 gradient buffer (grad_bytes 4). Its
backward accumulates them into the fp32 buffer and keeps them (deepspeed/runtime/bf16_optimizer.py:
``backward_epilogue(update_hp_grads=True, clear_lp_grads=False)``, ``_update_hp_grad``: ``hp_grad.data.add_(
lp.grad...)``); they are dropped only at the start of the next backward (``clear_lp_grads``: ``param.grad = None``
in v0.7-v0.9, zeroed in place since) or by ``zero_grad`` after the step. So with gradient accumulation (or the
pipeline engine's several micro-batches) the next micro-batch builds its activations beside them: they are there
at the activation peak. Not with one micro-batch per step, whose step frees them first (zero_grad,
set_to_none=True)."""


def __getattr__(name: str) -> Any:
    """``Bounds``, ``RANGES`` and ``FITTED`` (the coefficients' physical ranges, :mod:`.ranges`):
    read by the accuracy benchmark and the tests, imported on first use so that an estimate does
    not build them (~0.7 ms of every cold check that estimates)."""
    if name in ("Bounds", "RANGES", "FITTED"):
        from trainlint.estimator import ranges

        return getattr(ranges, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- s34-acc-families ---

CAUSAL_SOFTMAX_SKIPPED_SHARE = 0.5
"""Physical, from the source (range 0-0.5; not fitted): share of the score reads Megatron's fused causal softmax never
makes. ScaledUpperTriangMaskedSoftmax (megatron/fused_kernels/scaled_upper_triang_masked_softmax.h in Megatron-LM
of 2021, e.g. 6985e58, the Narayanan et al. runs; megatron/core/fusions/fused_softmax.py today; the same kernel in
Megatron-DeepSpeed and GPT-NeoX), which Megatron's unfused attention runs for a causal mask in 16 bit, reads in
row r only the r + 1 scores on and below the diagonal and writes the whole row (zeros above it); its backward reads
the gradient and the probabilities on the same triangle and writes the whole row. UNFUSED_SOFTMAX_BYTES_PER_SCORE
(9) and UNFUSED_SOFTMAX_BACKWARD_BYTES_PER_SCORE (11) count full rows: with half of the 2-byte score reads (and of
the backward's 4) skipped the forward moves 8 bytes per score and the backward 9
(:func:`performance._softmax_bytes_time`). Attention dropout runs on the whole score tensor (torch dropout): its
bytes stay."""

FUSED_SOFTMAX_MAX_KEYS = 4096
"""Physical, from the source (not fitted): the longest key range the fused softmax kernels take (FusedScaleMaskSoftmax
.is_kernel_available: ``16 < sk <= 4096`` in Megatron-Core and Megatron-DeepSpeed; 2048 in Megatron-LM of 2021).
Longer sequences fall back to torch's softmax over the whole masked row, and CAUSAL_SOFTMAX_SKIPPED_SHARE does not
apply."""

# --- s34-acc-bridge-moe ---

MOE_SORT_CHUNKS_BYTES_PER_ELEMENT = 8.0
"""Physical, from the source (not fitted): forward HBM bytes per routed token copy per hidden unit that Megatron-Core's
alltoall token dispatcher moves beyond the permute and unpermute (MOE_PERMUTE_BYTES_PER_ELEMENT) when a rank holds more
than one expert: after the all-to-all the received copies are ordered by source rank, and "Permutation 2: Sort tokens
by local expert" copies them into expert order (token_dispatcher.py MoEAlltoAllTokenDispatcher.dispatch_postprocess,
``sort_chunks_by_idxs``, fused with --moe-permute-fusion: read and write each 16-bit copy, 4 B), and combine_preprocess
sorts them back before the return all-to-all (4 B); the backward, like every elementwise op here, moves twice as much.
The flex dispatcher has no such sort: DeepEP's dispatch delivers the copies grouped by expert and one permute follows
(_DeepepManager.get_permuted_hidden_states_by_experts), and HybridEP permutes inside its dispatch and combine kernels
("Permute tokens for communication, perform all-to-all communication, and permute tokens for experts in single step",
_HybridEPManager; core_v0.16 fused_a2a.hybrid_ep_dispatch), which leaves no permute kernel at all
(engine.moe_dispatcher ``flex-fused``). Megatron-Bridge's DeepSeek-V3 perf runs on B200 changed from the alltoall
dispatcher (25.09, 25.11: apply_flex_dispatcher_backend of v0.2.0 took HybridEP only on GB200 / GB300) to HybridEP
(26.02 on: v0.3.0 takes it on every GPU of compute capability 8-10) with the same layout and measured ~19% more tokens
per second per GPU at twice the global batch."""

# --- s35-moe ---

WGRAD_ACCUMULATE_READ_WRITES = 2.0
"""Physical, from the source (range 1-2; not fitted): passes over the weight-gradient buffer (``main_grad``, of the
engine's gradient dtype: ``Inputs.grad_bytes``) that each weight-gradient GEMM makes per micro-batch. Megatron-Core
builds its linear layers, the routed experts' grouped ones included, with ``fuse_wgrad_accumulation=
config.gradient_accumulation_fusion`` (core/extensions/transformer_engine.py TEGroupedLinear; Megatron-LM's
``--no-gradient-accumulation-fusion`` turns it off, Bridge's perf recipes keep it on): the wgrad GEMM accumulates
into the buffer in its epilogue (``accumulate_into_main_grad``: D = A x B + C, C read, D written, 2 passes; TE's
GroupedLinear only writes it on a step's first micro-batch, ``accumulate=fuse_wgrad_accumulation and not
is_first_microbatch``, 1 pass, the range's bottom); without
the fusion PyTorch writes the 16-bit gradient and adds it (more). The forward x 2 that prices a backward
(:func:`performance._layer_costs`) counts the weight once per pass as an operand read, so the wgrad's buffer
traffic is short by (this x grad bytes - operand bytes) per weight element per micro-batch. It is a fixed cost per
weight and micro-batch, so it weighs by 1 / M against the GEMM's FLOPs: negligible for a dense layer's M of 4-16k
tokens per micro-batch (its weights are read once per M rows), but the routed experts of a fine-grained MoE hold
most of the layer's weights and see M = tokens x top-k x EP / experts per micro-batch, ~1k for DeepSeek-V3 at EP 8
(32 experts of 7168 x 6144 per GPU, ~4 GB of fp8 + bf16 traffic per layer and micro-batch on a B200: 0.7 ms against
~3 ms of their GEMMs). Charged on the routed experts' weights (:func:`performance.expert_wgrad_accumulation`)."""

FP8_QUANTIZE_BYTES_PER_ELEMENT = 4.0
"""Physical, from the source (range 4-6; not fitted): HBM bytes per element of Transformer Engine's quantisation of a
16-bit GEMM operand for an FP8 GEMM: read the 2-byte tensor, write the 1-byte row-wise copy (the forward or dgrad GEMM
reads it) and the 1-byte column-wise copy (the other backward GEMM reads it); MXFP8's block scales add 1/32 byte per
copy, per-tensor current scaling an amax pass (+2, the range's top). The routed experts' GroupedLinear quantises its
inputs in the forward and the gradients of its outputs in the backward (transformer_engine/pytorch/module/
grouped_linear.py, ``tex.fused_multi_quantize``), on every routed copy: :func:`performance.expert_quantize`. The dense
layers' casts (fused into LayerNormLinear's norm for QKV and FC1) stay within ELEMENTWISE_BYTES_PER_HIDDEN."""
# --- s35-attn ---
# The fused attention kernel's share of the peak by kernel and architecture (:func:`performance.attention_kernel_factor`):
# ratios of published kernel benchmarks over the share on Hopper-class parts, which FLASH_ATTENTION_PEAK_FRACTION (fitted,
# 0.327: FlashAttention-2 on H100 SXM keeps 0.33 of the peak over forward + backward, below) stands for. Not fitted: with
# one fraction for every part the fit traded attention against GEMM_PEAK_FRACTION (a blanket 2x on Ampere, refitted,
# moved GEMM_PEAK_FRACTION to 0.72), because llm-foundry's MPT tables, which ran the slower Triton kernel, pinned the
# fraction at its lower bound on H100 and were the Ampere rows a 2x made too fast.

FLASH2_AMPERE_FORWARD_GAIN = 2.15
"""Physical, from kernel benchmarks (range 1.8-2.3; not fitted): FlashAttention-2's forward share of the dense peak on
Ampere over its share on Hopper. Its CUDA kernels are written for Ampere's mma.sync tensor-core instructions: on A100 the
forward reaches up to 73% of 312 TFLOP/s (Dao 2023, FlashAttention-2, arXiv:2307.08691, Sec. 4.1), on H100 SXM, which
it runs without wgmma / TMA, 335 of 989 TFLOP/s at 8k-16k tokens, head dim 128, causal (Shah et al. 2024,
FlashAttention-3, arXiv:2407.08608, Fig. 5; "only 35% utilization" in its abstract): 0.73 / 0.339 = 2.15.
Transformer Engine runs the same kernels on Ampere: with both flash-attn and cuDNN's fused attention available it drops
flash-attn only from compute capability 9.0 on ("Disabling FlashAttention to give FusedAttention preference on Hopper+",
transformer_engine/pytorch/attention/dot_product_attention/utils.py get_attention_backend), so the gain applies to every
fused-attention run on an Ampere part."""

FLASH2_AMPERE_BACKWARD_GAIN = 1.93
"""Physical, from kernel benchmarks (range 1.6-2.2; not fitted): the same ratio for the backward: up to 63% of the A100
peak (Dao 2023, Sec. 4.1) against 322 of 989 TFLOP/s on H100 SXM (Shah et al. 2024, Fig. 6): 0.63 / 0.326 = 1.93. With
the backward's 2.5x FLOPs the forward + backward share on Ampere is 1.99x the Hopper one (0.656 against 0.329)."""

FLASH2_GAIN_ARCHITECTURES = ("ampere",)
"""Physical: the catalog architectures FLASH2_AMPERE_*_GAIN applies to (the parts whose tensor cores mma.sync
saturates: A100, A800). Hopper and Blackwell need wgmma / tcgen05 and asynchronous copies that FlashAttention-2 lacks."""

FLASH_TRITON_FORWARD_SLOWDOWN = 1.4
"""Physical, from kernel benchmarks (range 1.3-1.5; not fitted): the Triton FlashAttention kernel (flash-attn 1.x's
flash_attn/flash_attn_triton.py, triton 2.0.0.dev20221202; Megatron-DeepSpeed's --use-flash-attn-triton; llm-foundry's
``attn_impl: triton``, llmfoundry/models/layers/flash_attn_triton.py, a copy of it on triton-pre-mlir) runs its forward
this much slower than FlashAttention-2 on the same part: "FlashAttention-2 is around 1.3-1.5x faster than FlashAttention
in Triton in the forward pass and around 2x faster in the backward pass" (Dao 2023, Sec. 4.1, A100). On A100 that puts
the Triton kernel at 0.355 of the peak over forward + backward, on H100 at 0.18 (the same code, no Hopper instructions)."""

FLASH_TRITON_BACKWARD_SLOWDOWN = 2.0
"""Physical, from kernel benchmarks (range 1.7-2.3; not fitted): the same for the backward (Dao 2023, Sec. 4.1: "around
2x faster in the backward pass")."""
