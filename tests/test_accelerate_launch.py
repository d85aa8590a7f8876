"""Golden tests: ``accelerate launch`` read as the same Hugging Face Trainer + DeepSpeed run.

accelerate/commands/launch.py: --num_processes is the total number of processes over all machines,
--num_machines the node count, --config_file a YAML whose num_processes / num_machines /
deepspeed_config.deepspeed_config_file apply unless the command line gives them;
--deepspeed_config_file names the JSON directly. The Trainer then fills the JSON's "auto" values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.adapters.launch.command_line import read_deepspeed_launch
from trainlint.adapters.launch.command_line import parse_launch
from trainlint.core.provenance import Origin

AUTO = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}}
YAML = ("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
        "  deepspeed_config_file: ds_z3.json\n  zero3_init_flag: true\nnum_machines: 2\nnum_processes: 16\n")
TRAINER = ["train.py", "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2", "--bf16", "True"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "ds_z3.json").write_text(json.dumps(AUTO))
    (tmp_path / "acc.yaml").write_text(YAML)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def spec_of(argv: list[str]):
    launch = parse_launch(argv)
    assert launch.kind == "deepspeed"
    (spec,) = read_deepspeed_launch(launch).specs
    return spec


def test_command_line_options(project):
    spec = spec_of(["accelerate", "launch", "--use_deepspeed", "--num_processes", "16", "--num_machines", "2",
                    "--deepspeed_config_file", "ds_z3.json", *TRAINER])
    c = spec.cluster
    assert (c.world_size.value, c.nodes.value, c.gpus_per_node.value) == (16, 2, 8)
    assert spec.batch.micro_batch.value == 4 and spec.batch.grad_accum.value == 2
    from trainlint.estimator import build_context, estimate

    result = estimate(spec, build_context(spec, model="llama2-7b", gpu="h100-sxm"))
    assert result.inputs.global_batch == 16 * 4 * 2


def test_config_file_gives_world_and_json(project):
    spec = spec_of(["accelerate", "launch", "--config_file", "acc.yaml", *TRAINER])
    c = spec.cluster
    assert (c.world_size.value, c.nodes.value, c.gpus_per_node.value) == (16, 2, 8)
    prov = c.world_size.provenance
    assert prov.origin is Origin.FILE and prov.path.endswith("acc.yaml") and prov.span.line == 7
    assert spec.parallel.zero_stage.value == 3


def test_command_line_wins_over_the_config_file(project):
    spec = spec_of(["accelerate", "launch", "--config_file=acc.yaml", "--num_processes=8", "--num_machines", "1",
                    *TRAINER])
    assert (spec.cluster.world_size.value, spec.cluster.nodes.value) == (8, 1)


def test_one_machine_by_default(project):
    spec = spec_of(["accelerate", "launch", "--multi_gpu", "--num_processes", "4", "--deepspeed_config_file",
                    "ds_z3.json", *TRAINER])
    assert (spec.cluster.world_size.value, spec.cluster.nodes.value, spec.cluster.gpus_per_node.value) == (4, 1, 4)


def test_a_config_outside_the_project_is_not_read(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("home") / "default_config.yaml"
    outside.write_text(YAML)
    launch = parse_launch(["accelerate", "launch", "--config_file", str(outside), *TRAINER])
    assert launch.accelerate is None and launch.kind == "none"
