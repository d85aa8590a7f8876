"""How benchmarks/calibration_files.py writes a row whose source leaves a memory setting out (issue 30): a
setting the source does not publish is left for the estimate to assume and say (vTrain's ZeRO stage), and
one the run's recipe sets is written as its user writes it (Megatron-Bridge's FP8 primary weights and CPU
activation offloading). Synthetic rows: nothing here reads ../shared."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from trainlint.estimator import estimate
from trainlint.estimator.core import estimate_inputs


def _row(**over) -> dict:
    row = {
        "id": "vtrain-multi-3.6B-64gpu-tp1-pp1-dp64-mbs4", "kind": "step_time", "num_gpus": 64,
        "gpu": "A100 (80GB)", "precision": None, "recompute": "full",
        "source": "github.com/VIA-Research/vTrain data/ground_truth_multi.csv",
        "model": {"layers": 30, "hidden": 3072, "heads": 32, "seq_len": 2048, "vocab_assumed_by_source": 50257},
        "parallel": {"tp": 1, "pp": 1, "dp": 64, "cp": 1, "zero_stage": None,
                     "framework": "Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed; version not stated)"},
        "batch": {"micro": 4, "global": 512},
        "measured": {"unit": "ms per iteration", "value": 1000.0},
    }
    row.update(over)
    return row


def test_an_unpublished_zero_stage_is_assumed_and_said_not_written(accuracy, tmp_path: Path) -> None:
    case = accuracy.write_case(_row())
    assert "ds_config.json" not in case.files and '"$DS_CONFIG"' in case.files["train.sh"]
    assert "--zero-stage" not in case.files["train.sh"]
    (spec, ctx), = accuracy.read_case(accuracy.materialise(case, tmp_path))
    est = estimate(spec, ctx)
    assert est.ok
    assert {a.field for a in est.verdict_assumptions} >= {"engine.shard_stage"}
    # a published stage is written, and the verdict rests on nothing assumed
    known = _row(parallel={**_row()["parallel"], "zero_stage": 1})
    case = accuracy.write_case(known)
    assert "ds_config.json" in case.files
    (spec, ctx), = accuracy.read_case(accuracy.materialise(case, tmp_path / "known"))
    assert estimate(spec, ctx).verdict_assumptions == []


def test_bridge_fsdp_recipe_rows_carry_the_recipes_memory_settings(accuracy) -> None:
    row = _row(id="mbridge-2604-gb200-pretrain-llama3-70b-fp8-64gpu-tp1pp1cp1vpnaep1-mbs2-gbs256-fsdp64-tokens_per_s",
               kind="tokens_per_s", gpu="GB200 (DGX-GB200)", precision="FP8 (Transformer Engine)", recompute=None,
               source="github.com/NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md",
               model={"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn_hidden": 28672, "swiglu": True,
                      "seq_len": 8192, "vocab": 128256},
               parallel={"tp": 1, "pp": 1, "cp": 1, "ep": 1, "dp": 64, "fsdp_column": 64,
                         "framework": "Megatron-Bridge / Megatron-Core"},
               batch={"micro": 2, "global": 256}, measured={"unit": "tokens/s per GPU", "value": 1000})
    script = accuracy.write_case(row).files["train.sh"]
    assert "--fp8-param-gather" in script and "--cpu-offloading-num-layers 40" in script
    # the same table row on a GPU whose recipe offloads another count, and a BF16 run without FP8 weights
    gb300 = accuracy.write_case({**row, "gpu": "GB300 (DGX-GB300)"}).files["train.sh"]
    assert "--cpu-offloading-num-layers 20" in gb300
    bf16 = accuracy.write_case({**row, "precision": "BF16"}).files["train.sh"]
    assert "--fp8-param-gather" not in bf16 and "--cpu-offloading-num-layers 20" in bf16


def test_nanotron_rows_are_written_without_dropout(accuracy, tmp_path: Path) -> None:
    """nanotron's Llama has no dropout module (its attention runs flash-attn with dropout_p=0.0): the Megatron
    launch it is written as says so, and the estimate keeps no dropout mask; a Megatron-LM row keeps its default."""
    row = _row(id="nanotron-bench-1.34B-8gpu-dp4tp1pp2-mbs4-gas16-zero1-mem", kind="peak_memory_gb", num_gpus=8,
               gpu="H100 80GB SXM", precision="bf16 mixed precision", recompute=None,
               source="github.com/huggingface/nanotron docs/benchmark_summary.svg",
               model={"layers": 16, "hidden": 2048, "heads": 32, "kv_heads": 32, "ffn_hidden": 8192, "swiglu": True,
                      "seq_len": 4096, "vocab": 131072, "tie_word_embeddings": True},
               parallel={"tp": 1, "pp": 2, "dp": 4, "cp": 1, "zero_stage": 1, "framework": "nanotron v0.5"},
               batch={"micro": 4, "global": 256}, measured={"unit": "GB (torch)", "value": 40.0})
    case = case_nanotron = accuracy.write_case(row)
    assert "--hidden-dropout 0 --attention-dropout 0" in case.files["train.sh"]
    assert any("dropout-free" in note for note in case.notes)
    (spec, ctx), = accuracy.read_case(accuracy.materialise(case, tmp_path / "nanotron"))
    est = estimate(spec, ctx)
    assert est.ok and not est.inputs.residual_dropout
    megatron = {**row, "id": "megatron-llama-1.34B-8gpu-mem", "source": "a Megatron-LM run",
                "parallel": {**row["parallel"], "framework": "Megatron-LM"}}
    case = accuracy.write_case(megatron)
    assert "--hidden-dropout" not in case.files["train.sh"]
    (spec, ctx), = accuracy.read_case(accuracy.materialise(case, tmp_path / "megatron"))
    with_dropout = estimate(spec, ctx)
    assert with_dropout.ok and with_dropout.inputs.residual_dropout
    # nanotron's unfused GLUActivation is written as --no-bias-swiglu-fusion (Megatron's default fuses it)
    assert "--no-bias-swiglu-fusion" in case_nanotron.files["train.sh"]
    assert est.inputs.gated_unfused and not with_dropout.inputs.gated_unfused
    fused_like_megatron = estimate_inputs(dataclasses.replace(est.inputs, gated_unfused=False))
    assert with_dropout.stages[0].activations > fused_like_megatron.stages[0].activations
    assert est.stages[0].activations > fused_like_megatron.stages[0].activations  # the SiLU output kept
