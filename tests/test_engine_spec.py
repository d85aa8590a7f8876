"""The spec's engine section: each adapter says what runs the step by the framework's own rules, and
the estimate follows the engine, not the file format (issue 15)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from run_writer import Run, read, read_one, write

from trainlint.estimator import InvariantError, build_context, estimate
from trainlint.estimator.core import estimate_inputs

GIB = 2**30
BIG = Run(layers=24, hidden=4096, heads=32, seq=2048, tp=2, pp=2, dp=8, micro=1, accum=8)


def spec_of(tmp_path: Path, run: Run, fmt: str, name: str = "run"):
    return read_one(write(run, fmt, str(tmp_path / f"{name}-{fmt}")))


def est(spec, **ctx):
    result = estimate(spec, build_context(spec, gpu=ctx.pop("gpu", "a100-80gb"), **ctx))
    assert result.ok, getattr(result, "missing", None)
    return result


def engine(spec) -> dict:
    return {f.name: getattr(spec.engine, f.name).value for f in dataclasses.fields(spec.engine)
            if getattr(spec.engine, f.name) is not None}


# ----------------------------------------------------------------------------- optimizer owner


@pytest.mark.parametrize("fmt", ["megatron-deepspeed", "neox"])
def test_deepspeed_engine_zero_stages(tmp_path, fmt):
    owners = {z: engine(spec_of(tmp_path, dataclasses.replace(BIG, zero=z, pp=1, tp=2, dp=8), fmt, f"z{z}"))
              for z in range(4)}
    assert owners[0]["optimizer_owner"] == "deepspeed-bf16" and owners[0]["shard_stage"] == 1
    assert owners[0]["grad_dtype"] == "fp32"  # BF16_Optimizer keeps fp32 gradients
    for z in (1, 2, 3):
        assert owners[z]["optimizer_owner"] == "deepspeed-zero" and owners[z]["shard_stage"] == z
        assert owners[z]["grad_dtype"] == "bf16"
    assert owners[3]["dp_overlap"] is True and owners[1]["dp_overlap"] is False  # overlap_comm default: stage 3


def test_megatron_deepspeed_memory_follows_its_zero_stage(tmp_path):
    mem = {z: est(spec_of(tmp_path, dataclasses.replace(BIG, zero=z, pp=1), "megatron-deepspeed", f"z{z}"))
           .worst_stage.total for z in range(4)}
    assert mem[1] > mem[2] > mem[3]
    fp16 = est(spec_of(tmp_path, dataclasses.replace(BIG, zero=0, pp=1, dtype="fp16"), "megatron-deepspeed", "fp16"))
    assert fp16.worst_stage.total > mem[0] > mem[2]  # FP16_Optimizer keeps everything; BF16_Optimizer shards


def test_megatron_deepspeed_without_deepspeed_flag_runs_megatrons_optimizer(tmp_path):
    path = write(dataclasses.replace(BIG, zero=2), "megatron-deepspeed", str(tmp_path))
    text = Path(path).read_text().replace("--deepspeed \\\n", "")
    Path(path).write_text(text)
    spec = read_one(path)
    assert spec.value("engine.optimizer_owner") == "megatron" and spec.value("engine.shard_stage") == 0


def test_bf16_optimizer_source_is_cited(tmp_path):
    spec = spec_of(tmp_path, dataclasses.replace(BIG, zero=0), "megatron-deepspeed")
    note = spec.engine.optimizer_owner.provenance.note
    assert "BF16_Optimizer" in note and "deepspeed/runtime/bf16_optimizer.py" in note
    assert any(p.key == "zero_optimization.stage" for p in spec.engine.optimizer_owner.provenance.inputs)


def test_megatron_lm_distributed_optimizer_and_grad_reduce_in_bf16(tmp_path):
    plain = spec_of(tmp_path, BIG, "megatron-lm", "plain")
    dist = spec_of(tmp_path, dataclasses.replace(BIG, zero=1), "megatron-lm", "dist")
    assert engine(plain)["shard_stage"] == 0 and engine(dist)["shard_stage"] == 1
    assert engine(dist)["shard_group"] == "dp_cp" and engine(dist)["grad_dtype"] == "fp32"
    path = write(BIG, "megatron-lm", str(tmp_path / "bf16grad"))
    Path(path).write_text(Path(path).read_text().replace("--bf16", "--bf16 \\\n    --grad-reduce-in-bf16"))
    bf16 = read_one(path)
    assert bf16.value("engine.grad_dtype") == "bf16"
    assert est(bf16).worst_stage.grads < est(plain).worst_stage.grads
    assert est(dist).worst_stage.total < est(plain).worst_stage.total


# ----------------------------------------------------------------------------- attention, MoE


def test_attention_kernel_per_framework(tmp_path):
    unfused = dataclasses.replace(BIG, flash=False)
    assert engine(spec_of(tmp_path, unfused, "megatron-deepspeed"))["attention"] == "unfused"
    assert engine(spec_of(tmp_path, unfused, "neox"))["attention"] == "unfused"
    assert engine(spec_of(tmp_path, unfused, "megatron-lm"))["attention"] == "unfused"
    assert engine(spec_of(tmp_path, BIG, "megatron-deepspeed", "f"))["attention"] == "flash"
    path = write(BIG, "megatron-lm", str(tmp_path / "default"))
    Path(path).write_text(Path(path).read_text())
    assert engine(read_one(path))["attention"] == "flash"  # Megatron-LM: --attention-backend auto
    # unfused attention keeps s^2 scores: more memory at seq 4096
    long = dataclasses.replace(BIG, seq=4096)
    assert est(spec_of(tmp_path, dataclasses.replace(long, flash=False), "megatron-deepspeed", "u")).worst_stage.activations \
        > 2 * est(spec_of(tmp_path, long, "megatron-deepspeed", "fl")).worst_stage.activations


def test_megatron_deepspeed_moe_defaults(tmp_path):
    path = write(BIG, "megatron-deepspeed", str(tmp_path))
    text = Path(path).read_text().replace("--deepspeed \\", "--num-experts 8 \\\n    --moe-expert-parallel-size 4 \\\n    --deepspeed \\")
    Path(path).write_text(text)
    spec = read_one(path)
    assert spec.value("model.num_experts") == 8 and spec.value("model.moe_top_k") == 1  # --topk default 1
    assert spec.value("engine.moe_layer_interval") == 2  # --expert-interval default 2
    assert spec.value("parallel.expert") == 4
    e = est(spec)
    every = dataclasses.replace(e.inputs, moe_interval=1)
    assert estimate_inputs(every).num_params > e.num_params  # half the layers carry experts


# ----------------------------------------------------------------------------- batch


def test_megatron_batch_flags_win_over_the_json(tmp_path):
    run = dataclasses.replace(BIG, micro=2, accum=4)
    path = write(run, "megatron-deepspeed", str(tmp_path))
    ds = tmp_path / "ds_config.json"
    data = json.loads(ds.read_text())
    data.update(train_batch_size=4096, gradient_accumulation_steps=256)  # what set_train_batch_size overrides
    ds.write_text(json.dumps(data))
    spec = read_one(path)
    assert (spec.value("batch.micro_batch"), spec.value("batch.grad_accum"), spec.value("batch.global_batch")) == (2, 4, 64)
    assert est(spec).tokens_per_step == 64 * run.seq


def test_neox_triple_that_neox_refuses_is_not_estimated(tmp_path):
    path = tmp_path / "neox.yml"
    path.write_text(Path(write(BIG, "neox", str(tmp_path))).read_text()
                    .replace("gradient_accumulation_steps: 8\n", "")
                    .replace("train_batch_size: 64", "train_batch_size: 256"))
    spec = read_one(str(path))
    assert spec.value("batch.grad_accum") == 1  # NeoX's default
    result = estimate(spec, build_context(spec, gpu="a100-80gb"))
    assert not result.ok and [m.field for m in result.missing] == ["batch"]
    assert "TL100" in result.missing[0].how


def test_check_reports_tl100_and_tl900_points_to_it(tmp_path, capsys):
    from trainlint.cli import main

    path = tmp_path / "neox.yml"
    path.write_text(Path(write(BIG, "neox", str(tmp_path))).read_text().replace("train_batch_size: 64", "train_batch_size: 256"))
    main(["check", "--gpu", "a100-80gb", "--format", "json", str(path)])
    out = json.loads(capsys.readouterr().out)
    codes = {d["code"]: d["message"] for f in out["files"] for d in f["diagnostics"]}
    assert "TL100" in codes and "TL100" in codes["TL900"]


# ----------------------------------------------------------------------------- precedence


def test_cli_nodes_win_over_the_launcher_and_the_disagreement_is_noted(tmp_path):
    spec = spec_of(tmp_path, BIG, "megatron-deepspeed")  # 32 GPUs: 4 nodes of 8
    assert spec.value("cluster.world_size") == 32
    e = est(spec, nodes=8)
    assert e.inputs.world == 64 and e.inputs.dp == 16
    note = next(a.source for a in e.assumptions if a.field == "cluster.world_size")
    assert "--nodes 8" in note and "overrides the world size 32" in note and "megatron_deepspeed.sh:" in note


# ----------------------------------------------------------------------------- invariants


def test_broken_invariant_raises_instead_of_printing(tmp_path, monkeypatch, capsys):
    from trainlint.cli import main
    from trainlint.estimator import coefficients

    spec = spec_of(tmp_path, BIG, "neox")
    monkeypatch.setattr(coefficients, "STEP_OVERHEAD_S", -1e6)  # a broken time model: negative step time
    with pytest.raises(InvariantError, match=r"MFU .* outside"):
        estimate(spec, build_context(spec, gpu="a100-80gb"))
    code = main(["estimate", "--gpu", "a100-80gb", str(tmp_path / "run-neox" / "neox.yml")])
    assert code == 2 and "TL999" in capsys.readouterr().err
    code = main(["check", "--gpu", "a100-80gb", "--format", "json", str(tmp_path / "run-neox" / "neox.yml")])
    out = json.loads(capsys.readouterr().out)
    assert "TL999" in {d["code"] for f in out["files"] for d in f["diagnostics"]}


def test_written_files_read_without_errors(tmp_path):
    for fmt in ("megatron-lm", "megatron-deepspeed", "neox"):
        specs, diagnostics = read(write(BIG, fmt, str(tmp_path / fmt)))
        assert len(specs) == 1
        assert [d.code for d in diagnostics if d.severity.value == "error"] == []
