"""The accuracy benchmark goes through the user's path: every calibration row it can write is a valid
config of its framework (no input or launch finding: what is left are estimate findings), read by the
adapter of that framework, and the estimate it scores is the one `trainlint estimate` prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.cli import main

from conftest import CALIBRATION, SHARED_ABSENT, calibration_rows

FORMAT = {"megatron-lm": "megatron", "megatron-deepspeed": "megatron", "neox": "neox", "deepspeed+hf": "deepspeed"}
ESTIMATE_FINDINGS = ("TL2", "TL3", "TL4")


@pytest.fixture(scope="module")
def loaded(accuracy, tmp_path_factory):
    # the first two files (published-runs-2026.yaml's Megatron-Bridge MoE recipes are still written with
    # launch findings: expert-tensor-parallel defaults and biases the recipes set; see the benchmark's notes)
    rows = calibration_rows()
    if not rows:
        pytest.skip(f"calibration data not found at {CALIBRATION} ({SHARED_ABSENT})")
    items, skipped, no_path = accuracy.load_cases(rows, tmp_path_factory.mktemp("cases"))
    assert len(items) >= 100 and len(items) + len(skipped) + len(no_path) == len(rows)
    return items


@pytest.mark.slow
def test_written_files_are_valid_configs_of_their_framework(loaded, capsys) -> None:
    seen = set()
    for item in loaded:
        code = main(["check", *item.argv, "--format", "json"])
        data = json.loads(capsys.readouterr().out)
        assert code in (0, 1), item.row["id"]
        # the launch file first; a Megatron-DeepSpeed run's estimate findings may anchor in its DeepSpeed JSON
        entry = data["files"][0]
        assert Path(entry["path"]).name == Path(item.argv[0]).name, item.row["id"]
        assert entry["format"] == FORMAT[item.case.how], (item.row["id"], entry["format"])
        assert all(Path(f["path"]).name in item.case.files for f in data["files"]), item.row["id"]
        # Megatron-FSDP (a Megatron-Bridge recipe's FSDP column) is estimated with its shard stage but trainlint
        # says it does not model it: that TL900 is expected on those rows, nothing else
        fsdp = "--use-megatron-fsdp" in item.case.files.get("train.sh", "")
        bad = [d for f in data["files"] for d in f["diagnostics"] if not d["code"].startswith(ESTIMATE_FINDINGS)
               and not (fsdp and d["code"] == "TL900" and "does not model" in d["message"])]
        assert not bad, (item.row["id"], bad)
        assert Path(item.argv[0]).name in item.case.files
        seen.add(item.case.how)
    assert seen == set(FORMAT)


def test_scored_estimate_is_what_trainlint_estimate_prints(accuracy, loaded) -> None:
    assert all(item.cli is not None for item in loaded)
    assert accuracy.cli_agreement(loaded) == []


def test_refit_swing_names_the_largest_move_and_its_source(accuracy) -> None:
    """The benchmark's swing report: for each fitted coefficient, the held-out source whose refit moved it
    furthest from the in-sample fit (a fall to an eighth outranks a doubling), largest first."""
    fit = {"DP": 0.8, "HOST": 2e-3, "STILL": 0.5}
    refits = {"vTrain:data": {"DP": 0.1, "HOST": 2e-3, "STILL": 0.5},
              "BLOOM": {"DP": 0.8, "HOST": 4e-3, "STILL": 0.5}}
    swings = accuracy.refit_swings(fit, refits)
    assert [(name, source) for name, _, source in swings][:2] == [("DP", "vTrain:data"), ("HOST", "BLOOM")]
    assert swings[0][1] == 0.125 and swings[1][1] == 2.0
    assert swings[2][0] == "STILL" and swings[2][1] == 1.0
