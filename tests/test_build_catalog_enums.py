"""scripts/build_framework_catalogs.py reads an option's choices from an Enum of the framework source
(issue 34): a tagged release of a source fixture written here, read with ``git show`` as the
generator reads the mirrors, gives a catalog whose enum-typed options carry the members."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ENUMS = textwrap.dedent('''
    import enum
    class AttnBackend(enum.Enum):
        flash = 1
        fused = 2
        auto = 3
    class StrictHandling(str, enum.Enum):
        ASSUME_OK = "assume_ok"
        RAISE_ALL = "raise_all"
    class Scope(enum.Enum):
        attn = 1
        mlp = 2
''')

ARGUMENTS = textwrap.dedent('''
    from megatron.core.transformer.enums import AttnBackend, StrictHandling, Scope
    from megatron.core.transformer.transformer_config import TransformerConfig
    def _add_args(parser):
        group = parser.add_argument_group(title='x')
        group.add_argument('--num-layers', type=int, default=None)
        group.add_argument('--attention-backend', type=lambda x: AttnBackend[x], choices=list(AttnBackend),
                           default=AttnBackend.auto)
        group.add_argument('--strictness', default='assume_ok', choices=[e.value for e in StrictHandling])
        group.add_argument('--scope', nargs='+', type=lambda s: Scope[s] if s != "full" else s, default=[])
        ArgumentGroupFactory(TransformerConfig).build_group(parser, "transformer")
        return parser
''')

CONFIG = textwrap.dedent('''
    from dataclasses import dataclass
    from megatron.core.transformer.enums import AttnBackend
    @dataclass
    class TransformerConfig:
        decode_backend: AttnBackend = AttnBackend.auto
''')


def _generator():
    spec = importlib.util.spec_from_file_location("build_framework_catalogs", ROOT / "scripts" / "build_framework_catalogs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_generator_reads_enum_choices_from_a_tagged_source(tmp_path, monkeypatch):
    repo = tmp_path / "Megatron-LM"
    for rel, text in (("megatron/training/arguments.py", ARGUMENTS), ("megatron/core/transformer/enums.py", ENUMS),
                      ("megatron/core/transformer/transformer_config.py", CONFIG)):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fixture"], check=True)
    subprocess.run([*git, "tag", "core_v0.99.0"], check=True)
    # a later change the tag does not hold: the generator reads the tag, not the working tree
    (repo / "megatron/core/transformer/enums.py").write_text(ENUMS.replace("fused = 2", "fused = 2\n    extra = 9"))

    generator = _generator()
    monkeypatch.setattr(generator, "OUT", tmp_path / "out")
    (tmp_path / "out").mkdir()
    entry = generator.build("megatron", "Megatron-LM", "core_v0.99.0", repo, "core_v0.99.0", "fixture/Megatron-LM")
    assert entry is not None
    data = json.loads((tmp_path / "out" / entry["file"]).read_text())
    args = {row[0]: row for row in data["args"]}
    choices = {name: args[name][4] for name in args}
    assert choices["--attention-backend"] == ["flash", "fused", "auto"]  # list(E): the names argparse takes
    assert choices["--strictness"] == ["assume_ok", "raise_all"]  # [e.value for e in E]
    assert choices["--scope"] == ["attn", "mlp", "full"]  # E[s], and the literal the lambda lets through
    assert choices["--decode-backend"] == ["flash", "fused", "auto"]  # an enum-typed dataclass field
    assert choices["--num-layers"] is None
    assert entry["commit"] == subprocess.run([*git, "rev-parse", "core_v0.99.0"], capture_output=True, text=True,
                                             check=True).stdout.strip()
    sys.modules.pop("build_framework_catalogs", None)


SCRIPT = ("#!/bin/bash\ntorchrun pretrain_gpt.py --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
          "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --lr 1e-4 --train-iters 10 {extra}\n")


def _invalid_choices(tmp_path: Path, release: str, extra: str, capsys) -> list[str]:
    from trainlint.cli import main

    (tmp_path / "train.sh").write_text(SCRIPT.format(extra=extra))
    (tmp_path / "trainlint.toml").write_text(f'framework = {{megatron = "{release}"}}\n')
    main(["check", "--config", str(tmp_path / "trainlint.toml"), "--format", "json", "--select", "TL006",
          str(tmp_path / "train.sh")])
    data = json.loads(capsys.readouterr().out)
    return [d["message"] for f in data["files"] for d in f["diagnostics"] if d["code"] == "TL006"]


@pytest.mark.parametrize("release, extra, named", [
    # type=lambda x: AttnBackend[x], choices=list(AttnBackend) (megatron/core/transformer/enums.py)
    ("core_v0.19.0", "--attention-backend flashy", "flash, fused, unfused, local, auto"),
    # choices=[e.value for e in StrictHandling] (megatron/core/dist_checkpointing/validation.py)
    ("core_v0.9.0", "--dist-ckpt-strictness raise", "assume_ok_unexpected"),
    # type=lambda scope: CudaGraphScope[scope] if scope != "full" else scope
    ("core_v0.17.0", "--cuda-graph-impl local --cuda-graph-scope attention", "full"),
])
def test_the_shipped_catalogs_refuse_an_invalid_enum_value(tmp_path, capsys, release, extra, named):
    messages = _invalid_choices(tmp_path, release, extra, capsys)
    assert len(messages) == 1 and named in messages[0], messages


def test_the_shipped_catalogs_accept_a_member_and_a_passed_through_literal(tmp_path, capsys):
    assert _invalid_choices(tmp_path, "core_v0.19.0", "--attention-backend flash", capsys) == []
    assert _invalid_choices(tmp_path, "core_v0.17.0", "--cuda-graph-impl local --cuda-graph-scope full attn", capsys) == []
