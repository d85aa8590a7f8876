"""Golden tests: a Hugging Face Trainer run whose DeepSpeed settings are written inline in an accelerate
config (``distributed_type: DEEPSPEED`` + ``deepspeed_config: {zero_stage: 3, ...}``, no JSON) and whose
TrainingArguments are the training script's own YAML (TRL's ``--config FILE``, HfArgumentParser's lone
``FILE.yaml``), as alignment-handbook and TRL's examples launch it.

Facts (accelerate/utils/dataclasses.py DeepSpeedPlugin.__post_init__): without a DeepSpeed config file the
plugin builds ``train_batch_size`` / ``train_micro_batch_size_per_gpu`` "auto", ``gradient_accumulation_steps``
as given else "auto", ``zero_optimization.stage`` (default 2), ``offload_optimizer.device`` /
``offload_param.device`` (none | cpu | nvme, default none); ``set_mixed_precision`` sets bf16/fp16 from the
launch's mixed precision, which TrainingArguments' --bf16/--fp16 override when true. TRL
(TrlParser.parse_args_and_config): the --config file's values become defaults, so command-line flags win."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths
from trainlint.adapters.launch.command_line import parse_launch, read_deepspeed_launch
from trainlint.estimator import build_context, estimate
from trainlint.core.provenance import Origin
from conftest import estimate_run

CONFIG = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
          "num_key_value_heads": 16, "intermediate_size": 5504, "vocab_size": 32000,
          "max_position_embeddings": 4096, "hidden_act": "silu", "rms_norm_eps": 1e-6}
ZERO3 = """compute_environment: LOCAL_MACHINE
deepspeed_config:
  deepspeed_multinode_launcher: standard
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: true
  zero3_save_16bit_model: true
  zero_stage: 3
distributed_type: DEEPSPEED
mixed_precision: bf16
num_machines: 1
num_processes: 8
"""
SFT = """# Model arguments
model_name_or_path: model
torch_dtype: bfloat16

# SFT trainer config
bf16: true
gradient_accumulation_steps: 2
gradient_checkpointing: true
max_seq_length: 2048
per_device_train_batch_size: 4
output_dir: data/out
report_to:
- wandb
"""
LAUNCH = ["accelerate", "launch", "--config_file", "zero3.yaml", "sft.py", "--config", "sft.yaml"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "zero3.yaml").write_text(ZERO3)
    (tmp_path / "sft.yaml").write_text(SFT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_spec(argv: list[str]):
    launch = parse_launch(argv)
    assert launch.kind == "deepspeed" and launch.accelerate_inline
    result = read_deepspeed_launch(launch)
    (spec,) = result.specs
    return spec, result


def where(value) -> tuple[str, int, int]:
    p = value.provenance
    return Path(p.path).name, p.span.line, p.span.column


def test_inline_zero3_with_a_trl_config(project: Path):
    spec, result = run_spec(LAUNCH)
    assert result.diagnostics == []
    assert spec.parallel.zero_stage.value == 3 and where(spec.parallel.zero_stage) == ("zero3.yaml", 8, 15)
    assert spec.parallel.offload_optimizer.value == "none" and where(spec.parallel.offload_optimizer) == ("zero3.yaml", 4, 29)
    assert spec.parallel.offload_params.value == "none"
    c = spec.cluster
    assert (c.world_size.value, c.nodes.value, c.gpus_per_node.value) == (8, 1, 8)
    # the TrainingArguments, each at its key in the training script's YAML
    assert spec.batch.micro_batch.value == 4 and where(spec.batch.micro_batch) == ("sft.yaml", 10, 30)
    assert spec.batch.grad_accum.value == 2 and where(spec.batch.grad_accum) == ("sft.yaml", 7, 30)
    assert spec.model.seq_length.value == 2048 and where(spec.model.seq_length) == ("sft.yaml", 9, 17)
    assert spec.precision.dtype.value == "bf16" and where(spec.precision.dtype) == ("sft.yaml", 6, 7)
    assert spec.memory.recompute.value == "full"
    assert spec.model.num_layers.value == 16 and spec.model.hidden_size.value == 2048
    # the engine follows the filled precision (nothing left assumed)
    assert spec.engine.optimizer_owner.value == "deepspeed-zero"
    assert spec.engine.optimizer_owner.provenance.origin is Origin.DERIVED
    result = estimate(spec, build_context(spec, gpu="h100-sxm"))
    assert result.inputs.global_batch == 8 * 4 * 2 and result.inputs.zero == 3


def test_accelerate_defaults_when_the_config_says_less(project: Path):
    (project / "min.yaml").write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero3_init_flag: false\n"
                                      "num_processes: 4\n")
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "min.yaml", "sft.py", "--config", "sft.yaml"])
    stage = spec.parallel.zero_stage
    assert stage.value == 2 and stage.provenance.origin is Origin.DEFAULT  # ACCELERATE_DEEPSPEED_ZERO_STAGE default
    assert spec.parallel.offload_optimizer.value == "none"
    assert spec.parallel.offload_optimizer.provenance.origin is Origin.DEFAULT
    assert spec.cluster.world_size.value == 4


def test_launch_options_win_over_the_config(project: Path):
    argv = ["accelerate", "launch", "--config_file", "zero3.yaml", "--zero_stage", "2",
            "--offload_optimizer_device", "cpu", "--gradient_accumulation_steps", "2",
            "sft.py", "--config", "sft.yaml"]
    spec, _ = run_spec(argv)
    text = " ".join(argv)
    assert spec.parallel.zero_stage.value == 2
    prov = spec.parallel.zero_stage.provenance
    assert prov.path == "<command line>" and prov.span.column == text.index("--zero_stage 2") + len("--zero_stage ") + 1
    assert spec.parallel.offload_optimizer.value == "cpu"
    assert spec.batch.grad_accum.value == 2 and spec.batch.grad_accum.provenance.key == "--gradient_accumulation_steps"


def test_a_deepspeed_config_file_still_wins(project: Path):
    (project / "ds.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto",
                                                 "gradient_accumulation_steps": "auto",
                                                 "zero_optimization": {"stage": 1}}))
    (project / "with_file.yaml").write_text(ZERO3.replace("  zero_stage: 3\n",
                                                          "  zero_stage: 3\n  deepspeed_config_file: ds.json\n"))
    launch = parse_launch(["accelerate", "launch", "--config_file", "with_file.yaml", "sft.py", "--config", "sft.yaml"])
    assert launch.kind == "deepspeed" and not launch.accelerate_inline and launch.deepspeed_config.written == "ds.json"
    (spec,) = read_deepspeed_launch(launch).specs
    assert spec.parallel.zero_stage.value == 1


def test_mixed_precision_unless_the_trainer_says(project: Path):
    (project / "plain.yaml").write_text("per_device_train_batch_size: 2\nmodel_name_or_path: model\n")
    (project / "fp16.yaml").write_text(ZERO3.replace("mixed_precision: bf16", "mixed_precision: fp16"))
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "fp16.yaml", "sft.py", "--config", "plain.yaml"])
    assert spec.precision.dtype.value == "fp16" and where(spec.precision.fp16_enabled) == ("fp16.yaml", 10, 18)
    # TrainingArguments.__post_init__: --bf16 true overrides ACCELERATE_MIXED_PRECISION
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "fp16.yaml", "sft.py", "--config", "plain.yaml",
                        "--bf16", "true"])
    assert spec.precision.dtype.value == "bf16" and spec.precision.fp16_enabled.value is False
    # accelerate launch --mixed_precision wins over the config's
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "fp16.yaml", "--mixed_precision", "no", "sft.py",
                        "--config", "plain.yaml"])
    assert spec.precision.dtype.value == "fp32"


def test_a_value_accelerate_would_not_take(project: Path):
    (project / "bad.yaml").write_text(ZERO3.replace("offload_param_device: none", "offload_param_device: disk"))
    spec, result = run_spec(["accelerate", "launch", "--config_file", "bad.yaml", "sft.py", "--config", "sft.yaml"])
    (d,) = result.diagnostics
    assert (d.code, Path(d.path).name, d.span.line, d.span.column) == ("TL006", "bad.yaml", 5, 25)
    assert spec.parallel.offload_params.provenance.origin is Origin.DEFAULT


def test_use_deepspeed_without_a_config_file(project: Path):
    spec, _ = run_spec(["accelerate", "launch", "--use_deepspeed", "--num_processes", "2", "--zero_stage", "1",
                        "sft.py", "--config", "sft.yaml"])
    assert spec.parallel.zero_stage.value == 1 and spec.cluster.world_size.value == 2


def test_not_deepspeed_or_outside_the_project(project: Path, tmp_path_factory):
    (project / "ddp.yaml").write_text("distributed_type: MULTI_GPU\nnum_processes: 8\n")
    assert parse_launch(["accelerate", "launch", "--config_file", "ddp.yaml", "sft.py", "--config", "sft.yaml"]).kind == "none"
    outside = tmp_path_factory.mktemp("home") / "zero3.yaml"
    outside.write_text(ZERO3)
    launch = parse_launch(["accelerate", "launch", "--config_file", str(outside), "sft.py", "--config", "sft.yaml"])
    assert launch.accelerate is None and launch.kind == "none"


# ------------------------------------------------------------------------------ the script's own config file


def test_command_line_flags_win_over_the_trl_config(project: Path):
    # TRL sets the file's values as the parser's defaults: a flag wins wherever it is written
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "zero3.yaml", "sft.py",
                        "--per_device_train_batch_size", "1", "--config", "sft.yaml", "--max_seq_length=4096"])
    assert spec.batch.micro_batch.value == 1 and spec.batch.micro_batch.provenance.path == "<command line>"
    assert spec.model.seq_length.value == 4096
    assert spec.batch.grad_accum.value == 2 and where(spec.batch.grad_accum) == ("sft.yaml", 7, 30)


@pytest.mark.parametrize("name, text", [
    ("args.yaml", SFT),
    ("args.json", json.dumps({"model_name_or_path": "model", "per_device_train_batch_size": 4,
                              "gradient_accumulation_steps": 2, "bf16": True, "max_seq_length": 2048}, indent=1)),
])
def test_a_lone_arguments_file(project: Path, name: str, text: str):
    (project / name).write_text(text)
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "zero3.yaml", "run_sft.py", name])
    assert (spec.batch.micro_batch.value, spec.batch.grad_accum.value, spec.model.seq_length.value) == (4, 2, 2048)
    assert Path(spec.batch.micro_batch.provenance.path).name == name
    assert spec.model.num_layers.value == 16


def test_h4_overrides_after_the_yaml(project: Path):
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "zero3.yaml", "run_sft.py", "sft.yaml",
                        "--per_device_train_batch_size=2"])
    assert spec.batch.micro_batch.value == 2 and spec.batch.grad_accum.value == 2


def test_not_the_only_argument_is_not_a_config(project: Path):
    # plain HfArgumentParser reads the file only when it is the script's single argument
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "zero3.yaml", "run.py", "sft.yaml", "--output_dir", "o"])
    assert spec.batch.micro_batch.provenance.origin is Origin.DEFAULT and spec.batch.micro_batch.value == 8


def test_a_missing_or_odd_config_is_not_read(project: Path):
    for written in ("nowhere.yaml", "odd.yaml"):
        (project / "odd.yaml").write_text("- a\n- list\n")
        spec, _ = run_spec(["accelerate", "launch", "--config_file", "zero3.yaml", "sft.py", "--config", written])
        assert spec.batch.micro_batch.value == 8 and spec.batch.micro_batch.provenance.origin is Origin.DEFAULT


def test_an_unknown_hub_model_is_named(project: Path, monkeypatch):
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(project / "empty-cache"))
    (project / "hub.yaml").write_text(SFT.replace("model_name_or_path: model", "model_name_or_path: acme/nonesuch-7b"))
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "zero3.yaml", "sft.py", "--config", "hub.yaml"])
    assert spec.model.named.value == "acme/nonesuch-7b" and where(spec.model.named) == ("hub.yaml", 2, 21)
    assert spec.model.num_layers is None


# ------------------------------------------------------------------------------ check of a launch script


def _script_spec(path: Path):
    (result,) = [r for r in check_paths([str(path)], builtin_adapters()) if r.path == str(path)]
    assert result.format == "hf-trainer", result.diagnostics
    (spec,) = result.specs
    return spec


def test_a_launch_script_with_inline_settings(project: Path):
    script = project / "train.sh"
    script.write_text("#!/bin/bash\nSTAGE=2\naccelerate launch --config_file zero3.yaml --zero_stage $STAGE \\\n"
                      "    sft.py --config sft.yaml\n")
    spec = _script_spec(script)
    assert spec.parallel.zero_stage.value == 2 and where(spec.parallel.zero_stage) == ("train.sh", 2, 7)
    assert spec.batch.micro_batch.value == 4 and where(spec.batch.micro_batch) == ("sft.yaml", 10, 30)
    assert spec.cluster.world_size.value == 8


def test_a_script_with_a_ddp_accelerate_config_is_not_ours(project: Path):
    (project / "ddp.yaml").write_text("distributed_type: MULTI_GPU\nnum_processes: 8\n")
    script = project / "ddp.sh"
    script.write_text("#!/bin/bash\nsource ~/.nowhere\naccelerate launch --config_file ddp.yaml sft.py --config sft.yaml\n")
    (result,) = [r for r in check_paths([str(script)], builtin_adapters()) if r.path == str(script)]
    assert result.specs == [] and result.diagnostics == []


# ------------------------------------------------------------------------------ one run, one answer

DS_Z3 = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
         "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"},
         "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "none"}, "offload_param": {"device": "none"}}}


def _estimate_json(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "trainlint", "estimate", "--isolated", "--format", "json", "--gpu",
                          "h100-sxm", str(path)], capture_output=True, text=True, timeout=120, cwd=path.parent)
    assert out.returncode == 0, out.stderr
    return estimate_run(out.stdout)


def test_the_same_run_written_both_ways_gets_one_answer(project: Path):
    (project / "ds_z3.json").write_text(json.dumps(DS_Z3))
    accel = project / "accel.sh"
    accel.write_text("#!/bin/bash\naccelerate launch --config_file zero3.yaml sft.py --config sft.yaml\n")
    ds = project / "ds.sh"
    ds.write_text("#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed ds_z3.json --model_name_or_path model \\\n"
                  "  --per_device_train_batch_size 4 --gradient_accumulation_steps 2 --bf16 True \\\n"
                  "  --gradient_checkpointing True --max_seq_length 2048 --output_dir out\n")
    a, b = _estimate_json(accel), _estimate_json(ds)
    assert a["world_size"] == b["world_size"] == 8
    assert a["memory_gib"] == b["memory_gib"]
    assert a["tokens_per_s"] == b["tokens_per_s"] and a["mfu"] == b["mfu"] and a["step_time_s"] == b["step_time_s"]
    specs = [_script_spec(accel), _script_spec(ds)]
    assert [s.parallel.zero_stage.value for s in specs] == [3, 3]
    # and `trainlint run` reads the command line as `check` reads the script
    spec, _ = run_spec(LAUNCH)
    via_run = estimate(spec, build_context(spec, gpu="h100-sxm"))
    assert via_run.inputs.world == 8 and via_run.inputs.zero == 3
    assert via_run.worst_stage.total / 2**30 == pytest.approx(a["memory_gib"]["total"], rel=1e-9)
    assert via_run.tokens_per_s == pytest.approx(a["tokens_per_s"], rel=1e-9)


def test_run_stops_on_an_accumulation_the_trainer_refuses(project: Path, capsys):
    # `accelerate config` writes gradient_accumulation_steps: 1; the recipe accumulates 2: the Trainer stops
    from trainlint.cli import main

    (project / "gas1.yaml").write_text(ZERO3.replace("  zero_stage: 3\n", "  zero_stage: 3\n  gradient_accumulation_steps: 1\n"))
    code = main(["run", "--dry-run", "--isolated", "--format", "json", "--", "accelerate", "launch", "--config_file",
                 "gas1.yaml", "sft.py", "--config", "sft.yaml"])
    found = [(Path(f["path"]).name, d["code"], d["line"], d["column"])
             for f in _report(capsys.readouterr().err)["files"] for d in f["diagnostics"]]
    assert code == 1 and found == [("gas1.yaml", "TL137", 9, 32)]
    # the same launch told to accumulate 2 (as alignment-handbook's launch.slurm does) runs
    code = main(["run", "--dry-run", "--isolated", "--format", "json", "--", "accelerate", "launch", "--config_file",
                 "gas1.yaml", "--gradient_accumulation_steps", "2", "sft.py", "--config", "sft.yaml"])
    assert code == 0 and not _report(capsys.readouterr().err)["files"][0]["diagnostics"]


def _report(err: str) -> dict:
    """The JSON report run writes on stderr (followed by its own "not running the command" line)."""
    return json.JSONDecoder().raw_decode(err)[0]


def test_only_the_trainer_checks_stated_values(project: Path):
    # DeepSpeed's own --deepspeed_config (deepspeed.add_config_arguments) runs no Trainer: nothing to check against
    (project / "ds2.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}))
    (spec,) = read_deepspeed_launch(parse_launch(["deepspeed", "train.py", "--deepspeed_config", "ds2.json"])).specs
    assert spec.batch.micro_batch.value == 2 and spec.batch.trainer_micro_batch is None
    # the Trainer's --deepspeed: its per_device_train_batch_size (default 8) must equal the stated 2
    (spec,) = read_deepspeed_launch(parse_launch(["deepspeed", "train.py", "--deepspeed", "ds2.json"])).specs
    trainer = spec.batch.trainer_micro_batch
    assert trainer.value == 8 and trainer.provenance.origin is Origin.DEFAULT


def test_peft_and_quantised_runs_are_not_modelled(project: Path):
    (project / "qlora.yaml").write_text(SFT + "use_peft: true\nload_in_4bit: true\nload_in_8bit: false\n")
    spec, _ = run_spec(["accelerate", "launch", "--config_file", "zero3.yaml", "sft.py", "--config", "qlora.yaml"])
    gaps = spec.run.unmodelled
    assert [flag for flag, _ in gaps.value] == ["use_peft: true", "load_in_4bit: true"]
    assert where(gaps) == ("qlora.yaml", 14, 11)
    from trainlint.rules.estimation.scope import usable_estimate

    assert usable_estimate(spec, estimate(spec, build_context(spec, gpu="h100-sxm"))) is None  # no memory findings


def test_the_trainer_values_are_in_the_spec_schema(project: Path):
    import jsonschema

    from trainlint.schemas import load_schema

    (project / "ds2.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3,
                                                 "zero_optimization": {"stage": 2}}))
    (spec,) = read_deepspeed_launch(parse_launch(["deepspeed", "train.py", "--deepspeed", "ds2.json"])).specs
    data = spec.to_dict()
    assert {"trainer_micro_batch", "trainer_grad_accum"} <= data["batch"].keys()
    jsonschema.validate(data, load_schema("spec"))


def test_nvme_offload_carries_its_path(project: Path, capsys):
    # DeepSpeedPlugin: with an nvme device the config gets offload_*_nvme_path (so TL136 does not speak)
    from trainlint.cli import main

    (project / "nvme.yaml").write_text(ZERO3.replace("offload_param_device: none", "offload_param_device: nvme\n"
                                                     "  offload_param_nvme_path: /local_nvme"))
    spec, result = run_spec(["accelerate", "launch", "--config_file", "nvme.yaml", "sft.py", "--config", "sft.yaml"])
    assert spec.parallel.offload_params.value == "nvme" and result.diagnostics == []
    assert spec.settings["zero_optimization.offload_param.nvme_path"].value == "/local_nvme"
    code = main(["run", "--dry-run", "--isolated", "--format", "json", "--select", "TL136", "--", "accelerate", "launch",
                 "--config_file", "nvme.yaml", "sft.py", "--config", "sft.yaml"])
    assert code == 0 and not _report(capsys.readouterr().err)["files"][0]["diagnostics"]
