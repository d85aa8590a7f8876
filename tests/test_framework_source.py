"""Issue 28, deliverables 1 and 2: the framework source a config is judged against is looked for
only inside its project (the git work tree, else the project config's folder, else the current
directory), a user points elsewhere explicitly (--framework-source, framework-source), and every
output says once per file what the file was judged against."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.cli import main
from trainlint.frameworks import locate

SCRIPT = """#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \\
    --max-position-embeddings 2048 --micro-batch-size 2 --global-batch-size 64 \\
    --lr 3e-4 --train-iters 1000 --bf16
"""

# A fork that spells every flag with underscores (as Megatron-LLM does): upstream's spelling is
# no argument of it, so judged against it the upstream script above gets TL004 errors.
FORK_ARGUMENTS = """
import argparse
def parse_args():
    parser = argparse.ArgumentParser()
    group = parser.add_argument_group('model')
""" + "".join(f"    group.add_argument('--{name}', type=int)\n" for name in (
    "num_layers", "hidden_size", "num_attention_heads", "seq_length", "max_position_embeddings",
    "micro_batch_size", "global_batch_size", "train_iters")) + """    group.add_argument('--lr', type=float)
    group.add_argument('--bf16', action='store_true')
    return parser.parse_args()
"""


@pytest.fixture(autouse=True)
def _fresh_targets():
    locate.clear_caches()
    yield
    locate.clear_caches()


def _layout(tmp_path: Path, *, git: bool = True) -> Path:
    """~/src: the user's project (its own git repository) next to a checkout of a fork."""
    src = tmp_path / "src"
    (src / "proj").mkdir(parents=True)
    if git:
        (src / "proj" / ".git").mkdir()
    (src / "proj" / "train.sh").write_text(SCRIPT)
    (src / "Megatron-LM-fork" / "megatron").mkdir(parents=True)
    (src / "Megatron-LM-fork" / "megatron" / "arguments.py").write_text(FORK_ARGUMENTS + f"# {tmp_path}\n")
    return src


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    main(["check", "--format", "json", "--exit-zero", *args])
    return json.loads(capsys.readouterr().out)["files"][0]


def test_a_sibling_checkout_is_not_the_projects_framework(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    src = _layout(tmp_path)
    monkeypatch.chdir(src)
    found = _json(capsys, "proj/train.sh")
    assert [d for d in found["diagnostics"] if d["severity"] == "error"] == []
    assert found["target"]["origin"] == "assumed"
    main(["check", "--exit-zero", "proj/train.sh"])
    text = capsys.readouterr().out
    # the output says what it judged against, once for the file
    assert text.count("judged against upstream Megatron-LM") == 1 and "--framework-source" in text


def test_a_parent_outside_the_project_is_not_its_framework(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the project (a git work tree) sits inside a folder that holds a framework's argument module
    (tmp_path / "megatron").mkdir()
    (tmp_path / "megatron" / "arguments.py").write_text(FORK_ARGUMENTS)
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert locate.resolve("megatron", str(tmp_path / "proj" / "train.sh")).origin.value == "assumed"


def test_a_checkout_the_config_lives_in_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _layout(tmp_path)
    fork = src / "Megatron-LM-fork"
    (fork / ".git").mkdir()
    (fork / "examples").mkdir()
    (fork / "examples" / "train.sh").write_text(SCRIPT)
    found = _json(capsys, str(fork / "examples" / "train.sh"))
    assert found["target"]["origin"] == "source-beside" and found["target"]["path"] == str(fork)
    assert sum(d["code"] == "TL004" and d["severity"] == "error" for d in found["diagnostics"]) == 8


def test_the_user_points_at_the_source_explicitly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    src = _layout(tmp_path)
    monkeypatch.chdir(src)
    found = _json(capsys, "--framework-source", "Megatron-LM-fork", "proj/train.sh")
    assert found["target"]["path"] == str((src / "Megatron-LM-fork").resolve())
    assert "--framework-source" in found["target"]["statement"]
    assert sum(d["code"] == "TL004" and d["severity"] == "error" for d in found["diagnostics"]) == 8
    # the project config's framework-source, relative to the project root (the git work tree)
    (src / "proj" / "pyproject.toml").write_text('[tool.trainlint]\nframework-source = "../Megatron-LM-fork"\n')
    locate.clear_caches()
    found = _json(capsys, "proj/train.sh")
    assert found["target"]["origin"] == "project-config"
    assert main(["check", "--framework-source", "proj", "proj/train.sh"]) == 2  # no framework there: a usage error
    assert "no megatron/training/arguments.py" in capsys.readouterr().err


def test_sarif_states_the_target_once_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    src = _layout(tmp_path)
    monkeypatch.chdir(src)
    main(["check", "--format", "sarif", "--exit-zero", "proj/train.sh"])
    run = json.loads(capsys.readouterr().out)["runs"][0]
    targets = [a["properties"]["target"] for a in run["artifacts"] if "properties" in a]
    assert len(targets) == 1 and targets[0]["origin"] == "assumed"
    assert not any("judged against" in r["message"]["text"] for r in run["results"])


def test_the_language_server_hovers_the_target_on_line_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from trainlint.adapters import builtin_adapters
    from trainlint.checker import check_paths
    from trainlint.lsp.server import TrainlintServer

    src = _layout(tmp_path)
    monkeypatch.chdir(src)
    linted = SimpleNamespace(result=check_paths(["proj/train.sh"], builtin_adapters())[0])
    hover = TrainlintServer._target_hover(linted, 1)  # type: ignore[arg-type]
    assert hover is not None and "judged against upstream Megatron-LM" in hover.contents.value
    assert TrainlintServer._target_hover(linted, 2) is None  # type: ignore[arg-type]
