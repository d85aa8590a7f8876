"""Baselines: ``check --write-baseline FILE`` records today's findings; ``--baseline FILE`` (or
``baseline`` in the project config) reports only new ones, in every output format."""

from __future__ import annotations

import json
import re

import pytest

from trainlint.cli import main

from test_output_formats import validate_sarif

DS = """{
  "train_batch_size": 8,
  "train_micro_batch_size_per_gpu": 1,
  "zero_optimisation": {"stage": 1},
  "gradient_clippin": 1.0
}
"""
MEGATRON = """#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 24 --hidden-size 1024 --num-attention-heads 16 \\
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 --batch-size 4 \\
    --seq-length 2048 --max-position-embeddings 2048 --global-batch-size 64
"""
# --batch-size: refused by the assumed upstream (a warning, TL008); 8 GPUs for TP 8 x PP 2: refused by
# every release (an error, TL101), so the gate fails before a baseline


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "ds_config.json").write_text(DS)
    (tmp_path / "train.sh").write_text(MEGATRON)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def codes(out: str) -> list[str]:
    return [f["path"].removeprefix("./") + ":" + d["code"] for f in json.loads(out)["files"] for d in f["diagnostics"]]


def test_recorded_findings_stay_suppressed_after_lines_are_inserted_above(project, capsys):
    code, out, err = run(capsys, "check", "--isolated", "--format", "json", ".")
    before = codes(out)
    assert "ds_config.json:TL004" in before and "train.sh:TL008" in before and "train.sh:TL101" in before and code == 1
    code, out, err = run(capsys, "check", "--isolated", "--write-baseline", "baseline.json", ".")
    assert code == 0 and f"Wrote {len(before)} findings to the baseline baseline.json." in err
    assert "Found 0 problems" in out
    # lines inserted above every finding: new keys at the top, comments at the top of the script
    (project / "ds_config.json").write_text(DS.replace("{\n", '{\n  "steps_per_print": 10,\n  "wall_clock_breakdown": false,\n', 1))
    (project / "train.sh").write_text(MEGATRON.replace("#!/bin/bash\n", "#!/bin/bash\n# launch\nset -e\n\n", 1))
    code, out, err = run(capsys, "check", "--isolated", "--baseline", "baseline.json", "--format", "json", ".")
    assert codes(out) == [] and code == 0, out
    assert f"{len(before)} findings in the baseline baseline.json not reported." in err
    assert json.loads(out)["baseline"] == {"path": "baseline.json", "suppressed": len(before), "stale": 0}


def test_a_new_finding_fails_the_gate_and_is_the_only_one_reported(project, capsys):
    run(capsys, "check", "--isolated", "--write-baseline", "baseline.json", ".")
    # a new error in the script: 12 heads over TP 8 (and the old findings still there)
    (project / "train.sh").write_text(MEGATRON.replace("--hidden-size 1024 --num-attention-heads 16", "--hidden-size 1536 --num-attention-heads 12"))
    code, out, _err = run(capsys, "check", "--isolated", "--baseline", "baseline.json", ".")
    lines = [line for line in out.splitlines() if re.search(r":\d+:\d+: (?:error|warning|info) TL\d", line)]
    assert code == 1
    assert len(lines) == 1 and "TL104" in lines[0], out
    # the same findings in another file are new (the file is part of what a finding is)
    (project / "train.sh").write_text(MEGATRON)
    (project / "other").mkdir()
    (project / "other" / "ds_config.json").write_text(DS)
    code, out, _ = run(capsys, "check", "--isolated", "--baseline", "baseline.json", "--format", "json", ".")
    assert sorted(codes(out)) == ["other/ds_config.json:TL004", "other/ds_config.json:TL004",
                                  "other/ds_config.json:TL900"], out


def test_a_finding_recorded_once_and_now_given_twice_is_new_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.sh").write_text(MEGATRON)
    run(capsys, "check", "--isolated", "--write-baseline", "baseline.json", "train.sh")
    # the same deprecated flag, same text, same message, once more on another line
    (tmp_path / "train.sh").write_text(MEGATRON.replace("--global-batch-size 64", "--global-batch-size 64 \\\n    --batch-size 4"))
    _code, out, _ = run(capsys, "check", "--isolated", "--baseline", "baseline.json", "--format", "json", "train.sh")
    assert sorted(codes(out)) == ["train.sh:TL008", "train.sh:TL011"], out


def test_entries_that_no_longer_occur_are_counted(project, capsys):
    run(capsys, "check", "--isolated", "--write-baseline", "baseline.json", ".")
    (project / "ds_config.json").write_text(DS.replace("zero_optimisation", "zero_optimization"))
    _code, out, err = run(capsys, "check", "--isolated", "--baseline", "baseline.json", "--format", "json", ".")
    assert json.loads(out)["baseline"]["stale"] == 1
    assert "1 baseline entry no longer occurs" in err
    # a run over one file does not call the other file's entries stale (pre-commit passes a few files)
    _code, out, err = run(capsys, "check", "--isolated", "--baseline", "baseline.json", "--format", "json", "train.sh")
    assert json.loads(out)["baseline"]["stale"] == 0 and codes(out) == []


def test_a_re_estimated_number_is_the_same_finding():
    from trainlint.project.baseline import message_kind

    assert message_kind("estimated 84.0 GiB per GPU (105%)") == message_kind("estimated 85.2 GiB per GPU (107%)")
    assert message_kind("unknown key `a`") != message_kind("unknown key `b`")


def test_project_config_names_the_baseline(project, capsys, monkeypatch):
    (project / "ci").mkdir()
    run(capsys, "check", "--isolated", "--write-baseline", "ci/baseline.json", ".")
    (project / ".trainlint.toml").write_text('baseline = "ci/baseline.json"\n')
    code, out, err = run(capsys, "check", ".")
    assert code == 0 and "Found 0 problems" in out and "not reported" in err
    # from another folder: the path is the config's, not the working directory's
    monkeypatch.chdir(project / "ci")
    code, out, _ = run(capsys, "check", "..")
    assert code == 0 and "Found 0 problems" in out
    # --write-baseline with a configured baseline rewrites it instead of reading it
    (project / "ds_config.json").write_text(DS.replace("zero_optimisation", "zero_optimization"))
    code, _, err = run(capsys, "check", "--write-baseline", "baseline.json", "..")
    assert code == 0 and "Wrote" in err


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown"])
def test_every_output_format_reports_only_new_findings(project, capsys, fmt):
    run(capsys, "check", "--isolated", "--write-baseline", "baseline.json", ".")
    code, out, _ = run(capsys, "check", "--isolated", "--baseline", "baseline.json", "--format", fmt, ".")
    assert code == 0 and "TL004" not in out and "TL008" not in out
    (project / "train.sh").write_text(MEGATRON.replace("--hidden-size 1024 --num-attention-heads 16", "--hidden-size 1536 --num-attention-heads 12"))
    code, out, _ = run(capsys, "check", "--isolated", "--baseline", "baseline.json", "--format", fmt, ".")
    assert code == 1 and "TL104" in out and "TL004" not in out
    if fmt == "sarif":
        log = json.loads(out)
        validate_sarif(log)
        (result,) = log["runs"][0]["results"]
        assert result["ruleId"] == "TL104" and result["baselineState"] == "new"
        assert log["runs"][0]["properties"]["baseline"]["suppressed"] >= 3


def test_a_bad_baseline_file_is_a_usage_error(project, capsys):
    code, _, err = run(capsys, "check", "--isolated", "--baseline", "missing.json", ".")
    assert code == 2 and "baseline file not found: missing.json" in err
    (project / "baseline.json").write_text('{"findings": [{"code": 1}]}')
    code, _, err = run(capsys, "check", "--isolated", "--baseline", "baseline.json", ".")
    assert code == 2 and "not a trainlint baseline" in err
    (project / "baseline.json").write_text("{")
    code, _, err = run(capsys, "check", "--isolated", "--baseline", "baseline.json", ".")
    assert code == 2 and "invalid JSON" in err
    (project / ".trainlint.toml").write_text("baseline = 3\n")
    code, _, err = run(capsys, "check", ".")
    assert code == 2 and "`baseline` must be a file path" in err
