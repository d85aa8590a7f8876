"""SARIF validates against the official 2.1.0 schema in every case an adopting repository meets:
zero findings, a baseline that leaves findings out, and findings with safe fixes (SARIF ``fixes``).
(kube-linter broke GitHub uploads with invalid SARIF on zero findings.)"""

from __future__ import annotations

import json

from trainlint.cli import main

from test_output_formats import SARIF_SCHEMA, validate_sarif

DS = '{\n  "train_batch_size": 8,\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimisation": {"stage": 1}\n}\n'


def sarif(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["check", "--isolated", "--format", "sarif", *argv])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def test_the_schema_is_there_when_shared_is():
    # the validation below is real when ../shared is present (test_sarif_schema_present skips with the reason otherwise)
    assert SARIF_SCHEMA.name == "sarif-schema-2.1.0.json"


def test_zero_findings(tmp_path, capsys):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1}\n')
    code, log = sarif(capsys, "--ignore", "TL900", str(tmp_path))
    validate_sarif(log)
    assert code == 0 and log["runs"][0]["results"] == []
    # and when no file is a config at all
    (tmp_path / "ds_config.json").unlink()
    (tmp_path / "notes.txt").write_text("hello\n")
    code, log = sarif(capsys, str(tmp_path))
    validate_sarif(log)
    assert code == 0 and log["runs"][0]["results"] == [] and log["runs"][0]["artifacts"] == []


def test_with_a_baseline(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ds_config.json").write_text(DS)
    assert main(["check", "--isolated", "--write-baseline", "baseline.json", "."]) == 0
    capsys.readouterr()
    _code, log = sarif(capsys, "--baseline", "baseline.json", ".")
    validate_sarif(log)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["properties"]["baseline"]["suppressed"] == 2
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "ds_config.json").write_text(DS)
    _code, log = sarif(capsys, "--baseline", "baseline.json", ".")
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"TL004", "TL900"} and all(r["baselineState"] == "new" for r in results)
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "b/ds_config.json" for r in results)


def test_with_fixes(tmp_path, capsys):
    config = tmp_path / "ds_config.json"
    config.write_text(DS)
    _code, log = sarif(capsys, "--ignore", "TL900", str(config))
    validate_sarif(log)
    (result,) = log["runs"][0]["results"]
    (fix,) = result["fixes"]
    (change,) = fix["artifactChanges"]
    (replacement,) = change["replacements"]
    assert replacement == {"deletedRegion": {"startLine": 4, "startColumn": 3, "endLine": 4, "endColumn": 22},
                           "insertedContent": {"text": '"zero_optimization"'}}
    assert change["artifactLocation"]["index"] == result["locations"][0]["physicalLocation"]["artifactLocation"]["index"]
    assert "zero_optimization" in fix["description"]["text"]
    # the replacement, applied as a SARIF consumer would, is what --fix writes
    lines = DS.split("\n")
    lines[3] = lines[3][:2] + replacement["insertedContent"]["text"] + lines[3][21:]
    main(["check", "--isolated", "--fix", str(config)])
    capsys.readouterr()
    assert config.read_text() == "\n".join(lines)


def test_unsafe_fixes_are_not_sarif_fixes(tmp_path, capsys):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_clip": 1}\n')
    _, log = sarif(capsys, "--ignore", "TL900", str(tmp_path / "ds_config.json"))
    validate_sarif(log)
    (result,) = log["runs"][0]["results"]
    assert "fixes" not in result and "gradient_clipping" in result["message"]["text"]
