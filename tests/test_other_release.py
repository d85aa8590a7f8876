"""A Megatron-LM script written for another release: the assumed release's start-up checks warn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.cli import main

SCRIPT = """#!/bin/bash
python pretrain_gpt.py \\
    --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 \\
    --max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8 \\
    --save /ckpt {extra}
"""


def _tl164(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str) -> dict:
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT.format(extra=extra))
    main(["check", "--isolated", "--format", "json", "--select", "TL164", str(script)])
    found = [d for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"] if d["code"] == "TL164"]
    assert len(found) == 1
    return found[0]


def test_a_script_for_the_assumed_release_gets_the_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _tl164(tmp_path, capsys, "")["severity"] == "error"


def test_a_script_for_another_release_gets_a_warning_that_says_why(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # two flags upstream never had, misspelling none it has: the script targets another release
    found = _tl164(tmp_path, capsys, "--use-tfrecords --presplit-sentences")
    assert found["severity"] == "warning"
    assert "`--presplit-sentences`, `--use-tfrecords`" in found["message"]
    assert "written for another release or a fork" in found["message"]


def test_one_unknown_flag_is_not_enough(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _tl164(tmp_path, capsys, "--use-tfrecords")["severity"] == "error"
