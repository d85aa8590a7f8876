"""The severity policy on a Megatron-LM script (docs/rules.md, "What is an error"): a check quoted
from one release is an error only against a release that is known (located or stated); against an
assumed upstream it is a warning that names the assumption and where the behaviour changed. Flags
upstream does not define ("written for another release") lower nothing (issue 29 G2)."""

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


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, *options: str) -> list[dict]:
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT.format(extra=extra))
    main(["check", "--format", "json", *options, str(script)])
    return [d for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"]]


def _tl164(diags: list[dict]) -> dict:
    found = [d for d in diags if d["code"] == "TL164"]
    assert len(found) == 1
    return found[0]


def test_a_check_of_the_assumed_release_is_a_warning_naming_the_assumption(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    found = _tl164(_check(tmp_path, capsys, "", "--isolated"))
    assert found["severity"] == "warning"
    # the assumption, and the release where --save-interval lost its default
    assert "assumed" in found["message"] and "5000" in found["message"]


def test_a_check_of_a_stated_release_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nframework = {megatron = "core_v0.8.0"}\n')
    found = _tl164(_check(tmp_path, capsys, "", "--config", str(tmp_path / "pyproject.toml")))
    assert found["severity"] == "error"
    assert "assumed" not in found["message"]


@pytest.mark.parametrize("extra", ["", "--tensor-model-parallel-size 3 --pipeline-model-parallel-size 3 --nproc 8"])
def test_invented_flags_lower_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str) -> None:
    """Issue 29 G2: two invented flags once marked a script 'written for another release' and
    lowered every start-up error to a warning; now each finding's severity is what it was without them."""
    plain = _check(tmp_path, capsys, extra, "--isolated", "--exit-zero")
    invented = _check(tmp_path, capsys, f"{extra} --zz-made-up-one 1 --zz-made-up-two", "--isolated", "--exit-zero")

    def severities(diags: list[dict]) -> list[tuple[str, str]]:
        return sorted((d["code"], d["severity"]) for d in diags if d["code"] != "TL004")

    assert severities(invented) == severities(plain)
    assert any(d["code"] == "TL004" for d in invented)  # the invented names are still reported


def test_a_check_every_release_makes_stays_an_error_beside_invented_flags(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # 2 layers on 4 pipeline stages: every release refuses (or builds another model); TL105 is release-independent
    diags = _check(tmp_path, capsys, "--pipeline-model-parallel-size 4 --zz-made-up-one --zz-made-up-two",
                   "--isolated", "--exit-zero")
    assert [d["severity"] for d in diags if d["code"] == "TL105"] == ["error"]
