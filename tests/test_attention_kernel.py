"""Which fused-attention kernel a run runs, and what it costs: Megatron-DeepSpeed's ``--use-flash-attn-triton`` runs
flash-attn 1.x's Triton kernel (engine.attention ``flash-triton``), the other ``--use-flash-attn*`` flags
FlashAttention-2's CUDA kernels; FlashAttention-2 keeps about twice the share of the peak on Ampere that it keeps on
Hopper (Dao 2023; Shah et al. 2024), and the Triton kernel runs slower than it on the same part (Dao 2023, Sec. 4.1)."""

from __future__ import annotations

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.estimator import build_context, estimate
from trainlint.estimator import coefficients as C
from trainlint.files.checker import check_source
from trainlint.files.sources import SourceText

SCRIPT = """\
#!/bin/bash
deepspeed --num_gpus 8 --num_nodes 1 pretrain_gpt.py \\
    --num-layers 8 --hidden-size 2048 --num-attention-heads 16 --ffn-hidden-size 8192 \\
    --seq-length 16384 --max-position-embeddings 16384 --micro-batch-size 1 --global-batch-size 64 \\
    --bf16 {flags} --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --no-pipeline-parallel
"""


def spec_of(flags: str):
    result = check_source(SourceText("run.sh", SCRIPT.format(flags=flags)), builtin_adapters())
    assert result.specs, result.diagnostics
    return result.specs[0]


@pytest.mark.parametrize(("flags", "kernel"), [
    ("--use-flash-attn-v2", "flash"),
    ("--use-flash-attn", "flash"),
    ("--use-flash-attn-triton", "flash-triton"),
    # ParallelAttention takes FlashSelfAttentionTriton whenever --use-flash-attn-triton is given
    ("--use-flash-attn-v2 --use-flash-attn-triton", "flash-triton"),
    ("", "unfused"),
])
def test_the_flag_names_the_kernel(flags, kernel):
    spec = spec_of(flags)
    assert spec.framework == "megatron"
    assert spec.engine.attention is not None and spec.engine.attention.value == kernel


def step_time(flags: str, gpu: str) -> float:
    spec = spec_of(flags)
    est = estimate(spec, build_context(spec, gpu=gpu))
    assert est.ok
    return est.step_time


def test_the_triton_kernel_is_slower_and_ampere_runs_flash_attention_2_at_a_larger_share(monkeypatch):
    # 16k tokens on 2048-wide layers: attention is a large part of the step
    for gpu in ("a100-80gb", "h100-sxm"):
        assert step_time("--use-flash-attn-triton", gpu) > step_time("--use-flash-attn-v2", gpu)
    # FlashAttention-2's advantage on Ampere: the A100 step is shorter than with Hopper's share of the peak, the H100
    # step does not move
    a100, h100 = step_time("--use-flash-attn-v2", "a100-80gb"), step_time("--use-flash-attn-v2", "h100-sxm")
    monkeypatch.setattr(C, "FLASH2_GAIN_ARCHITECTURES", ())
    assert step_time("--use-flash-attn-v2", "a100-80gb") > 1.1 * a100
    assert step_time("--use-flash-attn-v2", "h100-sxm") == pytest.approx(h100)
