"""Golden tests: a launch script's positional arguments ($1 $2 ...) given by the user.

bash: an argument not given expands to the empty string ("$2" is "" with one argument), so
`if [ -n "$2" ]; then TP=$2; fi` keeps the script's own TP; ${1:-24} is 24 only when $1 is unset or
empty (bash(1), Positional Parameters, Parameter Expansion)."""

from __future__ import annotations

from pathlib import Path

from trainlint.adapters import builtin_adapters
from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.commands.check import parse_env
from trainlint.adapters.launch.command_line import read_command
from trainlint.adapters.launch.command_line import parse_launch
from trainlint.core.provenance import Origin
from trainlint.files.sources import SourceText
from conftest import estimate_run

SCRIPT = ("#!/bin/bash\nTP=2\nif [ -n \"$2\" ]; then\n  TP=$2\nfi\nLAYERS=${1:-24}\n"
          "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers $LAYERS --hidden-size 1024 "
          "--num-attention-heads 16 --tensor-model-parallel-size $TP --seq-length 1024 --micro-batch-size 1\n")


def spec_with(environment: dict[str, str]):
    (spec,) = MegatronAdapter().load(SourceText("/x/train.sh", SCRIPT), LoadContext(environment=environment)).specs
    return spec


def test_without_arguments_the_script_defaults_are_read():
    spec = spec_with({})
    assert spec.model.num_layers.value == 24


def test_arguments_bind_dollar_one_and_two():
    spec = spec_with({"1": "32", "2": "4"})
    assert spec.model.num_layers.value == 32 and spec.parallel.tensor.value == 4
    prov = spec.model.num_layers.provenance
    assert prov.origin is Origin.CLI and "launch argument $1" in prov.note


def test_an_argument_not_given_keeps_the_scripts_own_default():
    spec = spec_with({"1": "32"})
    assert spec.model.num_layers.value == 32 and spec.parallel.tensor.value == 2
    assert spec.parallel.tensor.provenance.origin is Origin.FILE


def test_env_takes_numbered_arguments():
    assert parse_env(["1=32", "TP=4"]) == {"1": "32", "TP": "4"}


def test_run_binds_the_words_after_the_script(tmp_path: Path):
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT)
    (result,) = read_command(parse_launch(["bash", str(script), "40", "8"]), builtin_adapters(), {})
    (spec,) = result.specs
    assert spec.model.num_layers.value == 40 and spec.parallel.tensor.value == 8


# --arg VALUE (repeatable): check and estimate bind $1 $2 ... as `bash train.sh VALUE...` does.

def _script(tmp_path: Path) -> Path:
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT)
    return script


def test_launch_environment_numbers_the_args_and_env_wins():
    from argparse import Namespace

    from trainlint.commands.check import launch_environment

    assert launch_environment(Namespace(script_args=["32", "4"], env=[])) == {"1": "32", "2": "4"}
    assert launch_environment(Namespace(script_args=["32", "4"], env=["2=8", "TP=1"])) == \
        {"1": "32", "2": "8", "TP": "1"}
    assert launch_environment(Namespace(env=["X=1"])) == {"X": "1"}  # run has no --arg


def test_estimate_arg_binds_dollar_one_and_two(tmp_path, capsys):

    from trainlint.cli import main

    script = _script(tmp_path)
    assert main(["estimate", str(script), "--isolated", "--format", "json", "--arg", "40", "--arg", "8"]) in (0, 1)
    with_args = estimate_run(capsys.readouterr().out)
    assert main(["estimate", str(script), "--isolated", "--format", "json"]) in (0, 1)
    without = estimate_run(capsys.readouterr().out)
    assert with_args["stages"][0]["layers"] == 40 and without["stages"][0]["layers"] == 24


def test_check_arg_reaches_the_script(tmp_path, capsys):
    from trainlint.cli import main

    script = _script(tmp_path)
    # TP=3 does not divide 16 heads: a finding that exists only when $2 is bound to 3
    main(["check", str(script), "--isolated", "--no-summary"])
    without = capsys.readouterr().out
    main(["check", str(script), "--isolated", "--no-summary", "--arg", "24", "--arg", "3"])
    with_arg = capsys.readouterr().out
    assert "TL104" not in without
    assert "TL104 16 attention heads are not divisible by tensor parallel size 3" in with_arg


def test_arg_is_in_the_help(capsys):
    import pytest

    from trainlint.cli import main

    for command in ("check", "estimate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--arg VALUE" in capsys.readouterr().out
