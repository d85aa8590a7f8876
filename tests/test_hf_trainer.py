"""Golden tests: a Hugging Face Trainer + DeepSpeed launch, read as the Trainer fills the JSON's "auto"
values (HfTrainerDeepSpeedConfig.trainer_config_process, transformers/integrations/deepspeed.py:
train_micro_batch_size_per_gpu <- per_device_train_batch_size, gradient_accumulation_steps <-
gradient_accumulation_steps, train_batch_size <- world x both, bf16/fp16.enabled <- --bf16/--fp16;
TrainingArguments defaults per_device_train_batch_size 8, gradient_accumulation_steps 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.adapters.launch.command_line import read_deepspeed_launch
from trainlint.estimator import build_context, estimate
from trainlint.adapters.hf.trainer_args import trainer_words
from trainlint.adapters.launch.command_line import parse_launch
from conftest import estimate_run

CONFIG = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
          "num_key_value_heads": 16, "intermediate_size": 5504, "vocab_size": 32000,
          "max_position_embeddings": 4096, "hidden_act": "silu", "rms_norm_eps": 1e-6}
AUTO = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"},
        "zero_optimization": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True}}


@pytest.fixture
def project(tmp_path: Path, monkeypatch):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "ds_z3.json").write_text(json.dumps(AUTO))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_spec(argv: list[str]):
    result = read_deepspeed_launch(parse_launch(argv))
    (spec,) = result.specs
    return spec


def test_trainer_words():
    words = trainer_words(["--per_device_train_batch_size", "4", "--bf16", "--fp16=False", "--gradient-checkpointing", "True"])
    assert words == {"per_device_train_batch_size": ("4", 1), "bf16": ("True", 2), "fp16": ("False", 3),
                     "gradient_checkpointing": ("True", 5)}


def test_auto_config_estimates_like_the_written_out_json(project: Path):
    argv = ["deepspeed", "--num_gpus", "8", "train.py", "--deepspeed", "ds_z3.json", "--per_device_train_batch_size",
            "4", "--gradient_accumulation_steps", "2", "--model_max_length", "2048", "--bf16", "True",
            "--model_name_or_path", "model", "--output_dir", "out"]
    spec = run_spec(argv)
    assert (spec.batch.micro_batch.value, spec.batch.grad_accum.value, spec.model.seq_length.value) == (4, 2, 2048)
    assert spec.precision.dtype.value == "bf16" and spec.model.hidden_size.value == 2048
    assert spec.batch.micro_batch.provenance.span.column == len(" ".join(argv[:7])) + 2
    via_run = estimate(spec, build_context(spec))
    assert via_run.ok and via_run.inputs.world == 8

    written = dict(AUTO, train_batch_size=64, train_micro_batch_size_per_gpu=4, gradient_accumulation_steps=2,
                   bf16={"enabled": True}, fp16={"enabled": False})
    (project / "ds_written.json").write_text(json.dumps(written))
    plain = run_spec(["deepspeed", "--num_gpus", "8", "train.py", "--deepspeed", "ds_written.json",
                      "--model_name_or_path", "model", "--model_max_length", "2048"])
    via_json = estimate(plain, build_context(plain))
    assert via_json.ok
    assert via_run.worst_stage.total == pytest.approx(via_json.worst_stage.total, rel=1e-12)
    assert via_run.tokens_per_s == pytest.approx(via_json.tokens_per_s, rel=1e-12)
    assert via_run.inputs.global_batch == via_json.inputs.global_batch == 64


def test_trainer_defaults_when_the_command_line_says_nothing(project: Path):
    spec = run_spec(["torchrun", "--nproc_per_node", "2", "train.py", "--deepspeed", "ds_z3.json"])
    assert spec.batch.micro_batch.value == 8 and spec.batch.micro_batch.provenance.origin.value == "default"
    assert spec.batch.grad_accum.value == 1 and spec.precision.dtype.value == "fp32"


def test_a_value_the_json_states_is_kept(project: Path):
    (project / "ds.json").write_text(json.dumps(dict(AUTO, train_micro_batch_size_per_gpu=2)))
    spec = run_spec(["deepspeed", "train.py", "--deepspeed", "ds.json", "--per_device_train_batch_size", "4"])
    assert spec.batch.micro_batch.value == 2


def test_auto_values_the_trainer_fills_are_not_reported_unresolved(project: Path):
    result = read_deepspeed_launch(parse_launch(["deepspeed", "train.py", "--deepspeed", "ds_z3.json",
                                      "--per_device_train_batch_size", "4"]))
    assert not [d for d in result.diagnostics if d.code == "TL007"]
    from trainlint.adapters.deepspeed.adapter import load_deepspeed_config
    from trainlint.files.sources import read_source

    alone = load_deepspeed_config(read_source(str(project / "ds_z3.json")))
    assert len([d for d in alone.diagnostics if d.code == "TL007"]) == 5  # checked alone, each is unresolved


def test_the_run_estimates_like_trainlint_estimate_on_the_written_out_json(project: Path):
    # Issue 16's "done when": `trainlint run -- deepspeed train.py --deepspeed ds_z3.json ...` on a ZeRO-3
    # "auto" config gives the estimate `trainlint estimate` prints for the written-out JSON with the same
    # model, world and sequence given as flags (the JSON states the batch; DP = 64 / (4 x 2) = 8).
    import subprocess
    import sys

    spec = run_spec(["deepspeed", "--num_gpus", "8", "train.py", "--deepspeed", "ds_z3.json",
                     "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
                     "--model_max_length", "2048", "--bf16", "True", "--model_name_or_path", "model"])
    via_run = estimate(spec, build_context(spec, gpu="h100-sxm"))
    written = dict(AUTO, train_batch_size=64, train_micro_batch_size_per_gpu=4, gradient_accumulation_steps=2,
                   bf16={"enabled": True}, fp16={"enabled": False})
    (project / "ds_written.json").write_text(json.dumps(written))
    out = subprocess.run([sys.executable, "-m", "trainlint", "estimate", "--isolated", "--format", "json", "--gpu",
                          "h100-sxm", "--model", "model", "--nodes", "1", "--gpus-per-node", "8", "--seq-length", "2048",
                          "ds_written.json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    printed = estimate_run(out.stdout)
    assert printed["world_size"] == via_run.inputs.world == 8
    assert printed["memory_gib"]["total"] == pytest.approx(via_run.worst_stage.total / 2**30, rel=1e-9)
    assert printed["memory_gib"]["optimizer"] == pytest.approx(via_run.worst_stage.optimizer / 2**30, rel=1e-9)
    assert printed["tokens_per_s"] == pytest.approx(via_run.tokens_per_s, rel=1e-6)
