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
    # the project config's framework-source, relative to the project root (the git work tree); a
    # path outside the checkout counts only from a config the user trusts (issue 29: a repository's
    # config cannot widen what is read), here the one named with --config
    (src / "proj" / "pyproject.toml").write_text('[tool.trainlint]\nframework-source = "../Megatron-LM-fork"\n')
    locate.clear_caches()
    assert main(["check", "--format", "json", "proj/train.sh"]) == 2
    assert "`framework-source` names" in capsys.readouterr().err
    found = _json(capsys, "--config", "proj/pyproject.toml", "proj/train.sh")
    assert found["target"]["origin"] == "project-config"
    (src / "proj" / "pyproject.toml").unlink()
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
    from trainlint.files.checker import check_paths
    from trainlint.lsp.server import TrainlintServer

    src = _layout(tmp_path)
    monkeypatch.chdir(src)
    linted = SimpleNamespace(result=check_paths(["proj/train.sh"], builtin_adapters())[0])
    hover = TrainlintServer._target_hover(linted, 1)  # type: ignore[arg-type]
    assert hover is not None and "judged against upstream Megatron-LM" in hover.contents.value
    assert TrainlintServer._target_hover(linted, 2) is None  # type: ignore[arg-type]


# GLM (THUDM/GLM) keeps Megatron's parser in a root-level arguments.py: add_training_args declares
# `group.add_argument('--warmup', type=float, default=0.01, ...)`, where upstream Megatron-LM keeps
# --warmup only to refuse it (an integer of iterations in its old releases).
GLM_ARGUMENTS = """
def add_model_config_args(parser):
    group = parser.add_argument_group('model', 'model configuration')
    group.add_argument('--num-layers', type=int, default=24)
    group.add_argument('--hidden-size', type=int, default=1024)
    group.add_argument('--num-attention-heads', type=int, default=16)
    return parser

def add_training_args(parser):
    group = parser.add_argument_group('train', 'training configurations')
    group.add_argument('--batch-size', type=int, default=4)
    group.add_argument('--warmup', type=float, default=0.01)
    group.add_argument('--block-lm', action='store_true')
    return parser
"""


def test_a_root_level_arguments_module_is_a_forks_parser(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "arguments.py").write_text(GLM_ARGUMENTS + f"# {tmp_path}\n")
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "pretrain.sh"
    script.write_text("deepspeed pretrain_glm.py --block-lm --num-layers 24 --hidden-size 1024 "
                      "--num-attention-heads 16 --batch-size 4 --warmup 0.04\n")
    found = _json(capsys, str(script))
    assert found["target"]["path"] == str(tmp_path) and found["target"]["origin"] == "source-beside"
    assert [d for d in found["diagnostics"] if d["code"] in ("TL004", "TL005", "TL008")] == []


def test_another_projects_arguments_module_is_not_a_framework(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    # a Hugging Face project's own dataclass arguments: no Megatron parser
    (tmp_path / "arguments.py").write_text("from dataclasses import dataclass\n@dataclass\nclass ModelArguments:\n"
                                           "    model_name_or_path: str = 'gpt2'\n")
    assert locate.resolve("megatron", str(tmp_path / "train.sh")).origin.value == "assumed"


def test_a_patch_projects_parser_extension_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pai-Megatron-Patch's layout: a Megatron checkout as a folder of the project, entry points that
    pass ``extra_args_provider=get_patch_args`` imported from ``megatron_patch/arguments.py``. The
    patch's flags are known; a flag neither defines is an error (the whole parser was read)."""
    (tmp_path / ".git").mkdir()
    mlm = tmp_path / "Megatron-LM-230922" / "megatron"
    mlm.mkdir(parents=True)
    (mlm / "arguments.py").write_text("def parse_args(extra_args_provider=None):\n" + "".join(
        f"    parser.add_argument('--{n}', type=int)\n" for n in (
            "num-layers", "hidden-size", "num-attention-heads", "micro-batch-size")) + f"# {tmp_path}\n")
    (tmp_path / "megatron_patch").mkdir()
    (tmp_path / "megatron_patch" / "arguments.py").write_text(
        "def get_patch_args(parser):\n    group = parser.add_argument_group(title='patch')\n"
        "    group.add_argument('--patch-tokenizer-type', type=str)\n    return parser\n")
    entry = tmp_path / "examples" / "llama2"
    entry.mkdir(parents=True)
    (entry / "pretrain_megatron_llama.py").write_text(
        "from megatron_patch.arguments import get_patch_args\n"
        "pretrain(train_ds, model_provider, forward_step, extra_args_provider=get_patch_args)\n")
    (entry / "run.sh").write_text(
        "torchrun --nproc_per_node 8 pretrain_megatron_llama.py --num-layers 2 --hidden-size 64 "
        "--num-attention-heads 4 --micro-batch-size 1 --patch-tokenizer-type LLamaTokenizer --zz-nobody 1\n")
    found = _json(capsys, str(entry / "run.sh"))
    assert found["target"]["path"] == str(tmp_path / "Megatron-LM-230922")
    unknown = [d for d in found["diagnostics"] if d["code"] == "TL004"]
    assert [(d["severity"], "--zz-nobody" in d["message"]) for d in unknown] == [("error", True)]


def _index_with_gitlink(path: str, commit: str) -> bytes:
    """A git index (version 2) holding one gitlink (mode 160000), as `git submodule add` records it."""
    import struct

    name = path.encode()
    entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o160000, 0, 0, 0) + bytes.fromhex(commit) + \
        struct.pack(">H", len(name)) + name
    entry += b"\0" * (8 - len(entry) % 8)
    return b"DIRC" + struct.pack(">II", 2, 1) + entry


@pytest.mark.parametrize("shipped", [True, False])
def test_a_pinned_submodule_commit_decides_the_release(tmp_path: Path, shipped: bool) -> None:
    from trainlint.frameworks.catalog import find_shipped

    release = find_shipped("megatron", "core_v0.8.0")
    assert release is not None
    commit = release.commit if shipped else "ab" * 20
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "index").write_bytes(_index_with_gitlink("third_party/Megatron-LM", commit))
    (tmp_path / ".gitmodules").write_text('[submodule "mlm"]\n\tpath = third_party/Megatron-LM\n')
    (tmp_path / "third_party" / "Megatron-LM").mkdir(parents=True)  # not checked out: an empty folder
    target = locate.resolve("megatron", str(tmp_path / "train.sh"))
    if shipped:
        assert (target.version, target.known) == ("core_v0.8.0", True)
    else:
        assert not target.known and "pinned at abababab" in target.note
