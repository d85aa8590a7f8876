"""TL301 compares with the best layout for the same job, keeps the global batch, labels recipe changes."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from trainlint.cli import main

CASES = Path(__file__).resolve().parent / "cases" / "TL301.yaml"


def _case(name: str) -> dict:
    return next(c for c in yaml.safe_load(CASES.read_text())["cases"] if c["name"] == name)


def _tl301(tmp_path: Path, capsys, config: str | None = None) -> dict:
    case = _case("megatron-dp128-tiny-global-batch")
    (tmp_path / "train.sh").write_text(case["files"]["train.sh"])
    args = ["--isolated"]
    if config is not None:
        (tmp_path / "t.toml").write_text(config)
        args = ["--config", str(tmp_path / "t.toml")]
    main(["check", *args, "--format", "json", "--select", "TL301", *case["args"], str(tmp_path / "train.sh")])
    (diag,) = [d for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"]]
    return diag


def test_the_fix_keeps_the_global_batch_and_is_unsafe(tmp_path, capsys):
    diag = _tl301(tmp_path, capsys)
    assert "best layout for the same model, GPUs and global batch" in diag["message"]
    assert "--global-batch-size" not in diag["fix"] and "training recipe" not in diag["fix"]
    # the rule classes its layout as an unsafe change; it gives it in words (no edits), so nothing
    # applies it, not even --unsafe-fixes, and JSON says display (never safe)
    assert diag["applicability"] == "display"


def test_a_fix_that_changes_the_global_batch_says_it_changes_the_recipe(tmp_path, capsys):
    diag = _tl301(tmp_path, capsys, "[rules.TL301]\nallow_batch_change = true\n")
    if "--global-batch-size" in diag["fix"]:
        assert diag["fix"].startswith("changes the training recipe (global batch 128 -> ")
        assert "tokens per step" in diag["fix"]


def test_a_larger_allowed_gap_silences_it(tmp_path, capsys):
    case = _case("megatron-dp128-tiny-global-batch")
    (tmp_path / "train.sh").write_text(case["files"]["train.sh"])
    (tmp_path / "t.toml").write_text("[rules.TL301]\nmax_gap = 0.6\n")
    main(["check", "--config", str(tmp_path / "t.toml"), "--format", "json", "--select", "TL301", *case["args"],
          str(tmp_path / "train.sh")])
    assert [d for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"]] == []


def test_the_absolute_floor_still_speaks_when_no_layout_is_much_better(tmp_path, capsys):
    """``threshold`` (off by default): an expected MFU below it is reported even when the gap to the
    best layout is within ``max_gap`` (then the model or the GPU is the limit, and the message says so)."""
    diag = _tl301(tmp_path, capsys, "[rules.TL301]\nmax_gap = 0.99\nthreshold = 0.99\n")
    assert "below the floor 99%" in diag["message"]
    assert "the model and the GPU set the limit" in diag["message"]
