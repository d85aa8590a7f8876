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

GEMM_PEAK_FRACTION = 0.64
"""Fitted (the shipped values of the fitted coefficients come from the fit over published-runs.yaml
before the benchmark read rows through a user's path; benchmarks/accuracy.py prints them beside
today's in-sample and leave-one-source-out refits). Fraction of the dense tensor-core peak a large 16-bit GEMM sustains inside a
training step (cuBLAS alone reaches 75-90% on big square GEMMs; clocks under sustained power,
wave quantisation of real shapes and kernels not modelled separately bring it down). With
HBM_ACHIEVABLE_FRACTION below it gives the kernel efficiency as a function of GEMM size:
time = FLOPs / (peak x this) + bytes / (HBM bandwidth x HBM fraction)."""

HBM_ACHIEVABLE_FRACTION = 0.80
"""Physical (STREAM-like measurements on A100/H100 reach 80-90% of the datasheet bandwidth).
Used for the bytes term of every kernel: GEMM operands, elementwise ops, the optimizer step."""

ATTENTION_PEAK_FRACTION = 0.19
"""Fitted. Fraction of the tensor-core peak reached by fused (flash) attention over its
executed FLOPs (causal half only). FlashAttention-2 reports 50-73% forward and less backward
for the kernel alone on A100/H100; the fitted value is much lower because the only rows where
attention dominates (torchtitan, 32k-262k tokens, context-parallel ring attention on 500 W
H100s) include the ring exchange and load imbalance. Doubtful outside long-context runs. Those
rows have no user's path (no torchtitan adapter): refitted on the rows that do, the value is 0.24
(benchmarks/accuracy.py --fit), still inside its range."""

FLASH_BACKWARD_FLOP_RATIO = 2.5
"""Physical: flash-attention backward executes 2.5x the forward FLOPs (recomputes the scores:
5 GEMMs instead of 2; Dao 2023, FlashAttention-2 section 3)."""

UNFUSED_SOFTMAX_BYTES_PER_SCORE = 12.0
"""Physical estimate: bytes of HBM traffic per attention score in the forward pass of an
unfused attention (scale+mask+softmax read/write in 16 bit, dropout mask, dropout output);
the backward moves twice as much."""

ELEMENTWISE_BYTES_PER_HIDDEN = 44.0
"""Fitted, ~physical: bytes of HBM traffic per token per hidden unit per layer in the forward
pass for the non-GEMM ops other than the MLP activation (two norms, two residual adds, bias and
dropout, rotary): roughly ten 16-bit tensors read or written. Backward moves twice as much."""

FP8_GEMM_SPEEDUP = 1.9
"""Set, no longer fitted (range [1, 2]: RANGES). Realised speed-up of an FP8 GEMM over the same
16-bit GEMM (the datasheet says 2x). Was fitted on the only FP8 rows (torchtitan + torchao float8,
6 rows), which have no user's path (no torchtitan adapter): weakly determined."""

MICROBATCH_OVERHEAD_S = 0.0019
"""Fitted. Fixed host-side time per micro-batch per pipeline stage (schedule bookkeeping,
p2p handshakes, kernel-launch gaps, Python), seconds."""

STEP_OVERHEAD_S = 0.17
"""Fitted. Fixed time per optimizer step outside forward/backward (data loader hand-off,
gradient-norm reduction, loss-scale checks, logging), seconds."""

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

INTRA_NODE_LINK_FRACTION = 0.64
"""Fitted, ~physical: fraction of the catalog's unidirectional NVLink/NVSwitch bandwidth a
tensor-parallel NCCL all-reduce of activation size (tens of MB) reaches as bus bandwidth
(nccl-tests: ~230 of 300 GB/s on A100 for large messages, less for these sizes)."""

INTER_NODE_LINK_FRACTION = 0.80
"""Physical: fraction of the per-GPU NIC bandwidth (InfiniBand/RoCE) NCCL reaches across nodes."""

COLLECTIVE_LATENCY_S = 2e-5
"""Physical: fixed latency per NCCL collective (launch + ring setup), seconds."""

TP_COMM_OVERLAP_FRACTION = 0.6
"""Physical estimate, NOT fitted (no usable calibration row enables it): share of
tensor-parallel communication hidden behind GEMMs when the framework overlaps them
(Megatron --tp-comm-overlap, userbuffers)."""

DP_OVERLAP_FRACTION = 0.8
"""Physical estimate; the fit leaves it where it starts (DP communication is small in the
calibration rows). Share of the backward pass of the last micro-batch that can hide the data-parallel
gradient reduction when the framework overlaps it (bucketed all-reduce / reduce-scatter)."""

ZERO3_OVERLAP_FRACTION = 0.8
"""Physical estimate; the fit leaves it where it starts. Share of a micro-batch's compute that
hides ZeRO-3 / FSDP parameter all-gathers
and gradient reduce-scatters (prefetching)."""

# --------------------------------------------------------------------------- memory

CUDA_CONTEXT_GIB = 0.6
"""Physical: CUDA context + cuBLAS/cuDNN workspaces per process on A100/H100 (0.5-0.8 GiB as
nvidia-smi shows for an idle PyTorch process). Not part of torch's reserved memory."""

NCCL_GIB_PER_COMMUNICATOR = 0.19
"""Physical estimate: NCCL buffers per communicator a rank belongs to (NCCL_BUFFSIZE 4 MiB x
channels x peers, plus proxy buffers for the network ones), GiB. Counted once per parallel group
of size > 1 (TP, PP, DP, CP, EP, embedding group)."""

ALLOCATOR_FRAGMENTATION = 0.20
"""Fitted. Share of the allocated peak the PyTorch caching allocator keeps reserved on top
(fragmentation, cached blocks, transient copies not modelled one by one); 0.2 is within the
10-30% gap between max_allocated and max_reserved commonly seen in long runs."""

ACTIVATION_WORKSPACE_LAYERS = 1.4
"""Fitted (physical range 1-2): layers' worth of un-checkpointed activations alive beyond what
is stored between passes: the layer being recomputed (full recompute) plus the activation
gradients of the layer in backward."""

LOGITS_BYTES_PER_ELEMENT = 6.0
"""Physical: 16-bit logits (2 B) plus the fp32 copy the vocab-parallel cross-entropy keeps for
its backward (4 B), per logit, for the micro-batch at the loss (Megatron
core/tensor_parallel/cross_entropy.py computes in fp32)."""


def __getattr__(name: str) -> Any:
    """``Bounds``, ``RANGES`` and ``FITTED`` (the coefficients' physical ranges, :mod:`.ranges`):
    read by the accuracy benchmark and the tests, imported on first use so that an estimate does
    not build them (~0.7 ms of every cold check that estimates)."""
    if name in ("Bounds", "RANGES", "FITTED"):
        from trainlint.estimator import ranges

        return getattr(ranges, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
