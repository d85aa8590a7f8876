"""`trainlint check` on a launch script that runs a Hugging Face Trainer with DeepSpeed reads it as
`trainlint run` reads the same command line: the JSON's "auto" values filled as the Trainer fills them
(HfTrainerDeepSpeedConfig.trainer_config_process, transformers/integrations/deepspeed.py), the
launcher's world (deepspeed --num_gpus/--num_nodes; accelerate --num_processes is the total over
all machines, accelerate/commands/launch.py), each value located at its word in the script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths
from trainlint.estimator import build_context, estimate

CONFIG = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
          "num_key_value_heads": 16, "intermediate_size": 5504, "vocab_size": 32000,
          "max_position_embeddings": 4096, "hidden_act": "silu", "rms_norm_eps": 1e-6}
AUTO = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}}
ARGS = ("--per_device_train_batch_size 4 --gradient_accumulation_steps 2 --model_max_length 2048 --bf16 True "
        "--model_name_or_path model --output_dir out")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "ds_z3.json").write_text(json.dumps(AUTO))
    return tmp_path


def _spec(path: Path):
    (result,) = [r for r in check_paths([str(path)], builtin_adapters()) if r.path == str(path)]
    assert result.format == "hf-trainer", result.diagnostics
    (spec,) = result.specs
    return spec, result


def test_a_deepspeed_launch_script_estimates_like_the_written_out_json(project: Path):
    script = project / "train.sh"
    script.write_text(f"#!/bin/bash\nBS=4\ndeepspeed --num_gpus 8 train.py --deepspeed ds_z3.json {ARGS.replace(' 4 ', ' $BS ', 1)}\n")
    spec, _ = _spec(script)
    assert (spec.batch.micro_batch.value, spec.batch.grad_accum.value, spec.model.seq_length.value) == (4, 2, 2048)
    # located where the value is written, as the Megatron adapter locates a value from a variable: `4` in `BS=4`
    span = spec.batch.micro_batch.provenance.span
    assert (span.line, span.column) == (2, 4)
    span = spec.batch.grad_accum.provenance.span  # `2` after `--gradient_accumulation_steps ` on line 3
    line3 = script.read_text().splitlines()[2]
    assert (span.line, span.column) == (3, line3.index("--gradient_accumulation_steps 2") + len("--gradient_accumulation_steps ") + 1)
    via_script = estimate(spec, build_context(spec, gpu="h100-sxm"))

    written = dict(AUTO, train_batch_size=64, train_micro_batch_size_per_gpu=4, gradient_accumulation_steps=2,
                   bf16={"enabled": True}, fp16={"enabled": False})
    (project / "ds_written.json").write_text(json.dumps(written))
    (result,) = check_paths([str(project / "ds_written.json")], builtin_adapters())
    (plain,) = result.specs
    via_json = estimate(plain, build_context(plain, gpu="h100-sxm", model=str(project / "model"), nodes=1,
                                             gpus_per_node=8, seq_length=2048))
    assert via_script.ok and via_json.ok and via_script.inputs.world == via_json.inputs.world == 8
    assert via_script.worst_stage.total == pytest.approx(via_json.worst_stage.total, rel=1e-12)
    assert via_script.tokens_per_s == pytest.approx(via_json.tokens_per_s, rel=1e-12)


def test_accelerate_launch_in_a_script(project: Path):
    script = project / "train.sh"
    script.write_text("#!/bin/bash\naccelerate launch --num_processes 16 --num_machines 2 --use_deepspeed "
                      f"--deepspeed_config_file ds_z3.json train.py {ARGS}\n")
    spec, _ = _spec(script)
    assert (spec.cluster.world_size.value, spec.cluster.nodes.value, spec.cluster.gpus_per_node.value) == (16, 2, 8)
    est = estimate(spec, build_context(spec, gpu="h100-sxm"))
    assert est.ok and est.inputs.world == 16 and est.inputs.global_batch == 4 * 2 * 16


def test_a_missing_json_is_reported_at_its_word(project: Path):
    script = project / "train.sh"
    script.write_text(f"#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed nowhere.json {ARGS}\n")
    (result,) = check_paths([str(script)], builtin_adapters())
    (d,) = [d for d in result.diagnostics if d.code == "TL013"]
    assert (d.span.line, d.span.column) == (2, len("deepspeed --num_gpus 8 train.py --deepspeed ") + 1)


def test_a_megatron_deepspeed_script_stays_the_megatron_adapters(project: Path):
    script = project / "pretrain.sh"
    script.write_text("#!/bin/bash\ndeepspeed --num_gpus 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
                      "--num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
                      "--deepspeed --deepspeed_config ds_z3.json\n")
    (result,) = [r for r in check_paths([str(script)], builtin_adapters()) if r.path == str(script)]
    assert result.format == "megatron"
