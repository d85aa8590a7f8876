"""A scheduler variable's default (``${SLURM_NNODES:-1}``) is a guess, not the run's world size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.cli import main
from conftest import estimate_run

SCRIPT = """#!/bin/bash
NNODES={nodes}
torchrun --nproc_per_node 8 --nnodes $NNODES pretrain_gpt.py \\
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \\
    --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 \\
    --vocab-size 32000 --bf16
"""


def _world(tmp_path: Path, capsys: pytest.CaptureFixture[str], nodes: str) -> dict:
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT.format(nodes=nodes))
    assert main(["estimate", "--isolated", "--format", "json", "--gpu", "h100-sxm", str(script)]) == 0
    out = estimate_run(capsys.readouterr().out)
    assert out["world_size"] == 8
    return next((a for a in out["assumptions"] if a["field"] == "cluster.world_size"), {})


def test_a_slurm_default_gives_an_assumed_world_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    world = _world(tmp_path, capsys, "${SLURM_NNODES:-1}")
    assert world.get("origin") == "assumed"
    assert "train.sh:2" in world["source"]


@pytest.mark.parametrize("nodes", ["1", "${NNODES:-1}"])
def test_a_written_or_script_default_world_size_is_stated(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          nodes: str) -> None:
    assert _world(tmp_path, capsys, nodes).get("origin") != "assumed"


def test_an_allocation_gives_the_slurm_variable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\n#SBATCH --nodes=2\n" + SCRIPT.format(nodes="${SLURM_NNODES:-1}").split("\n", 1)[1])
    assert main(["estimate", "--isolated", "--format", "json", "--gpu", "h100-sxm", str(script)]) == 0
    out = estimate_run(capsys.readouterr().out)
    assert out["world_size"] == 16
    world = next((a for a in out["assumptions"] if a["field"] == "cluster.world_size"), {})
    assert world.get("origin") != "assumed"


def test_tl900_says_the_world_size_is_known_only_at_launch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT.format(nodes="${SLURM_NNODES:-1}"))
    main(["check", "--isolated", "--format", "json", "--gpu", "h100-sxm", "--select", "TL900", str(script)])
    messages = [d["message"] for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"]]
    assert len(messages) == 1
    assert "how many GPUs the run uses is known only at launch (the script's 8 rests on" in messages[0]
    assert "${SLURM_NNODES:-1}" in messages[0]
