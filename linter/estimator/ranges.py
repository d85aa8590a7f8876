"""The physical range of each coefficient of :mod:`trainlint.estimator.coefficients` (read there as
``coefficients.RANGES`` / ``coefficients.FITTED``): what ``benchmarks/accuracy.py --fit`` may move a
fitted coefficient within, and what a test holds every shipped value inside. Apart from the
coefficients so that an estimate, which reads only the values, does not build them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    """The physical range of a coefficient; ``fitted``: ``benchmarks/accuracy.py`` fits it, inside the range."""

    kind: str      # throughput | memory: which calibration rows determine it
    low: float
    high: float
    why: str
    fitted: bool = True


RANGES: dict[str, Bounds] = {
    "GEMM_PEAK_FRACTION": Bounds("throughput", 0.55, 1.0, "a share of the GPU's measured maximum achievable "
                                 "matmul throughput: real shapes, the whole step's power draw and wave quantisation "
                                 "lose some, never half"),
    "FLASH_ATTENTION_PEAK_FRACTION": Bounds("throughput", 0.30, 0.75, "FlashAttention-2/3 kernels: 50-75% forward, "
                                            "35-50% backward at long sequences and head dim 128"),
    "FLASH_ATTENTION_HALF_SEQ": Bounds("throughput", 256.0, 4096.0, "flash kernels reach half their long-sequence "
                                       "throughput at a few hundred to a few thousand tokens"),
    "POWER_CAP_CLOCK_EXPONENT": Bounds("throughput", 0.2, 1.0, "clock ~ power ** (1/3 .. 1) along the V/f curve"),
    "ELEMENTWISE_BYTES_PER_HIDDEN": Bounds("throughput", 20.0, 80.0, "ten to forty 16-bit tensors read or written "
                                           "per token per hidden unit by norms, residuals, bias, dropout, rotary"),
    "MICROBATCH_OVERHEAD_S": Bounds("throughput", 0.0, 0.01, "host time per micro-batch per stage: kernel-launch "
                                    "gaps and Python, at most ~10 ms"),
    "LAYER_HOST_S": Bounds("throughput", 0.0, 5e-3, "~120 kernels per layer per micro-batch at 5-25 us of "
                           "eager dispatch and Python each: up to a few milliseconds"),
    "STEP_OVERHEAD_S": Bounds("throughput", 0.0, 0.5, "per optimizer step outside the passes: data hand-off, "
                              "grad-norm, logging; tenths of a second at most"),
    "INTRA_NODE_LINK_FRACTION": Bounds("throughput", 0.40, 0.90, "nccl-tests bus bandwidth over NVLink/NVSwitch: "
                                       "40-90% of the per-direction link rate depending on message size"),
    "INTER_NODE_LINK_FRACTION": Bounds("throughput", 0.50, 0.95, "NCCL over InfiniBand/RoCE reaches 50-95% of the NIC rate"),
    "ALLOCATOR_CACHE": Bounds("memory", 0.0, 0.6, "max_reserved over max_allocated in long runs is 0-35% of "
                              "the whole; charged on the per-step pool alone (activations, transient "
                              "buffers), the same gap is a larger share of a smaller base"),
    "ACTIVATION_WORKSPACE_LAYERS": Bounds("memory", 1.0, 2.0, "the layer recomputed plus the activation gradients "
                                          "of the layer in backward: one to two layers' worth"),
    "NCCL_GIB_PER_COMMUNICATOR": Bounds("memory", 0.05, 0.5, "NCCL_BUFFSIZE 4 MiB x channels x peers, plus proxy "
                                        "buffers: 0.05-0.5 GiB per communicator"),
    "CUDA_CONTEXT_GIB": Bounds("memory", 0.3, 1.0, "an idle PyTorch process on A100/H100 shows 0.3-1.0 GiB in nvidia-smi"),
    # set from sources, not fitted: no calibration row read through a user's format determines them
    "FP8_GEMM_SPEEDUP": Bounds("throughput", 1.0, 2.0, "FP8 tensor cores have twice the 16-bit rate: an FP8 GEMM "
                               "is at most 2x and never slower", fitted=False),
    "HBM_ACHIEVABLE_FRACTION": Bounds("throughput", 0.6, 0.95, "STREAM-like kernels reach 80-90% of the datasheet "
                                      "bandwidth", fitted=False),
    "TP_COMM_OVERLAP_FRACTION": Bounds("throughput", 0.0, 1.0, "a share of the TP communication", fitted=False),
    "ZERO3_OVERLAP_FRACTION": Bounds("throughput", 0.0, 1.0, "a share of a micro-batch's compute", fitted=False),
    "FLASH_ATTENTION_HEAD_DIM_EXPONENT": Bounds("throughput", 0.0, 1.0, "head dim 64 runs 15-25% below 128",
                                                fitted=False),
    "MOE_SYNC_HOST_S": Bounds("throughput", 1e-4, 1e-3, "about 25 kernels issued at 10-20 us each after the "
                              "dispatcher's sync, while the GPU waits", fitted=False),
    "P2P_OVERLAP_FRACTION": Bounds("throughput", 0.0, 1.0, "a share of the interleaved pipeline's sends", fitted=False),
    "CP_RING_EXPOSED_FRACTION": Bounds("throughput", 0.0, 1.0, "a share of each ring step", fitted=False),
    "EP_A2A_OVERLAP_FRACTION": Bounds("throughput", 0.0, 1.0, "a share of the all-to-all", fitted=False),
    # -- MoE (s33-moe)
    "MOE_UNFUSED_PERMUTE_BYTES_PER_ELEMENT": Bounds("throughput", 16.0, 26.0, "two gathers, a scatter and a "
                                                    "scatter_add over zero-filled 16-bit copies", fitted=False),
    "MOE_PROBS_MULTIPLY_BYTES_PER_ELEMENT": Bounds("throughput", 4.0, 6.0, "read and write each 16-bit copy",
                                                   fitted=False),
    "ULYSSES_A2A_PASSES": Bounds("throughput", 2.0, 3.0, "one round forward, one backward, one more with full "
                                 "recompute", fitted=False),
    "ALLOCATOR_FRAGMENTATION": Bounds("memory", 0.0, 0.6, "the part of the allocator's per-step cache held in "
                                      "split blocks it cannot release: at most the whole max_reserved - "
                                      "max_allocated gap", fitted=False),
    "ZERO_STEP_GRAD_BYTES": Bounds("memory", 4.0, 6.0, "ZeRO 1/2's step: the flattened 16-bit partition gradients "
                                   "and their fp32 copy (6), at least the fp32 copy (4)", fitted=False),
    "FP16_OPTIMIZER_STEP_BYTES": Bounds("memory", 4.0, 8.0, "FP16_Optimizer's step: the per-parameter fp32 "
                                        "gradients and their flattened copy (8), at least the flat copy (4)",
                                        fitted=False),
    "MEGATRON_BUCKET_MIN_PARAMS": Bounds("throughput", 1e6, 1e9, "Megatron-Core's default gradient bucket: "
                                         "40M parameters (a fact of the source; the range only bounds it)", fitted=False),
    "MEGATRON_BUCKET_PARAMS_PER_DP": Bounds("throughput", 0.0, 1e7, "Megatron-Core's default bucket grows by 1M "
                                            "parameters per data-parallel rank", fitted=False),
    "LOGITS_IN_PLACE_BYTES_PER_ELEMENT": Bounds("memory", 2.0, 4.0, "the 16-bit logits holding their own gradient "
                                                "(2), at most with a separate 16-bit gradient (4)", fitted=False),
    # -- memory (s33-mem)
    "BF16_OPTIMIZER_LP_GRAD_BYTES": Bounds("memory", 0.0, 2.0, "the 16-bit gradients BF16_Optimizer keeps beside "
                                           "its fp32 buffer: 2 bytes, none where an engine frees them", fitted=False),
    "FLASH_BACKWARD_FLOP_RATIO": Bounds("throughput", 2.0, 3.0, "FlashAttention-2 backward: 5 GEMMs to the "
                                        "forward's 2", fitted=False),
    # -- dense throughput (s33-thru)
    "NVLINK_RING_BUS_FRACTION": Bounds("throughput", 0.6, 0.9, "nccl-tests large-message all-reduce bus bandwidth "
                                       "over NVSwitch: 0.77-0.8 of the per-direction NVLink rate (A100, H100)",
                                       fitted=False),
    "NCCL_RING_STEP_LATENCY_S": Bounds("throughput", 1.9e-6, 3.4e-6, "NCCL's NVLink ring hop latency "
                                       "(tuning.cc hwLat: LL128 1.9 us, Simple 3.4 us)", fitted=False),
    # --- s34-acc-families ---
    "CAUSAL_SOFTMAX_SKIPPED_SHARE": Bounds("throughput", 0.0, 0.5, "the fused causal softmax reads the scores on and "
                                           "below the diagonal only: half of a square score tensor at most",
                                           fitted=False),
    "FUSED_SOFTMAX_MAX_KEYS": Bounds("throughput", 2048.0, 16384.0, "the fused softmax kernels' longest key range "
                                     "(2048 in 2021, 4096 in Megatron-Core; a fact of the source)", fitted=False),
    # --- s34-acc-bridge-moe ---
    "MOE_SORT_CHUNKS_BYTES_PER_ELEMENT": Bounds("throughput", 4.0, 8.0, "the alltoall dispatcher's sort of each "
                                                "16-bit copy into local-expert order (read and write: 4) and back "
                                                "before the combine (8)", fitted=False),
    # --- s35-moe ---
    "WGRAD_ACCUMULATE_READ_WRITES": Bounds("throughput", 1.0, 2.0, "the wgrad GEMM's epilogue reads and writes the "
                                           "gradient buffer it accumulates into (2); 1 if it only wrote it",
                                           fitted=False),
    "FP8_QUANTIZE_BYTES_PER_ELEMENT": Bounds("throughput", 4.0, 6.0, "read 2 bytes, write the 1-byte row-wise and "
                                             "column-wise copies (4); current scaling's amax pass reads again (6)",
                                             fitted=False),
    # --- s35-attn ---
    "FLASH2_AMPERE_FORWARD_GAIN": Bounds("throughput", 1.8, 2.3, "FlashAttention-2's forward share of the peak on A100 "
                                         "(73%) over H100 (33-35%)", fitted=False),
    "FLASH2_AMPERE_BACKWARD_GAIN": Bounds("throughput", 1.6, 2.2, "FlashAttention-2's backward share of the peak on A100 "
                                          "(63%) over H100 (30-35%)", fitted=False),
    "FLASH_TRITON_FORWARD_SLOWDOWN": Bounds("throughput", 1.3, 1.5, "FlashAttention-2 is 1.3-1.5x faster than the Triton "
                                            "kernel in the forward (Dao 2023)", fitted=False),
    "FLASH_TRITON_BACKWARD_SLOWDOWN": Bounds("throughput", 1.7, 2.3, "FlashAttention-2 is about 2x faster than the Triton "
                                             "kernel in the backward (Dao 2023)", fitted=False),
}
"""Every coefficient with a physical range: those ``benchmarks/accuracy.py`` fits (``fitted``), and
the ones set from sources (FP8_GEMM_SPEEDUP has no FP8 row read through a user's format to fit it;
the overlap shares have too few rows). A test holds every value inside its range."""

FITTED: dict[str, Bounds] = {name: b for name, b in RANGES.items() if b.fitted}
"""The coefficients the accuracy benchmark fits, each held inside its range by the fit."""
