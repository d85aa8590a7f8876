"""CI output formats: SARIF (validated against the official 2.1.0 schema), GitHub workflow
commands, a Markdown job summary, and --statistics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.cli import main
from trainlint.output.github import escape_data, escape_property

from conftest import EXAMPLES, SHARED

SARIF_SCHEMA = SHARED / "schemas-ext" / "sarif-schema-2.1.0.json"


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def json_findings(capsys, *paths: str) -> list[tuple[str, str, int, int, int, int]]:
    _, out = run(capsys, "check", "--isolated", "--format", "json", *paths)
    return sorted((Path(f["path"]).resolve().as_posix(), d["code"], d["line"], d["column"], d["end_line"], d["end_column"])
                  for f in json.loads(out)["files"] for d in f["diagnostics"])


@pytest.fixture()
def in_repo(monkeypatch):
    monkeypatch.chdir(EXAMPLES.parent)


def test_sarif_is_valid_and_matches_the_json_output(capsys, in_repo):
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"SARIF schema not found at {SARIF_SCHEMA} (../shared absent)")
    import jsonschema

    code, out = run(capsys, "check", "--isolated", "--format", "sarif", "examples")
    assert code == 1
    sarif = json.loads(out)
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text()))
    (sarif_run,) = sarif["runs"]
    assert sarif_run["columnKind"] == "unicodeCodePoints"
    rules = sarif_run["tool"]["driver"]["rules"]
    found = []
    for result in sarif_run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        uri = location["artifactLocation"]["uri"]
        assert uri.startswith("examples/") and location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        region = location["region"]
        found.append((Path(uri).resolve().as_posix(), result["ruleId"], region["startLine"], region["startColumn"],
                      region.get("endLine", region["startLine"]), region.get("endColumn", region["startColumn"])))
    assert sorted(found) == json_findings(capsys, "examples")
    tl201 = next(r for r in rules if r["id"] == "TL201")
    assert "## What it does" in tl201["help"]["markdown"] and tl201["helpUri"].endswith("#tl201-oom-risk")
    assert tl201["defaultConfiguration"]["level"] == "error"


def test_sarif_related_locations_and_fingerprints(tmp_path, capsys, monkeypatch):
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"SARIF schema not found at {SARIF_SCHEMA} (../shared absent)")
    import jsonschema

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ds_config.json").write_text(
        '{\n  "train_batch_size": 10,\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 2\n}\n')
    _, out = run(capsys, "check", "--isolated", "--format", "sarif", "ds_config.json")
    sarif = json.loads(out)
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text()))
    results = sarif["runs"][0]["results"]
    assert results and all(len(r["partialFingerprints"]["primaryLocationLineHash"]) == 32 for r in results)
    with_related = [r for r in results if r.get("relatedLocations")]
    assert with_related, "a batch-size finding names the other batch keys"
    assert all(rel["physicalLocation"]["artifactLocation"]["uri"] == "ds_config.json"
               for r in with_related for rel in r["relatedLocations"])


def test_github_escaping():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"


def test_github_annotations_match_findings(capsys, in_repo):
    code, out = run(capsys, "check", "--isolated", "--format", "github", "examples")
    lines = out.splitlines()
    assert lines[-1].startswith("Found ") and code == 1
    annotations = [l for l in lines if l.startswith("::")]
    assert len(annotations) == len(json_findings(capsys, "examples"))
    oom = next(l for l in annotations if "TL201" in l)
    assert oom.startswith("::error file=examples/megatron_llama2_70b_oom.sh,line=")
    assert "title=TL201 oom-risk::" in oom and "\n" not in oom
    assert any(l.startswith("::notice ") for l in annotations)  # info -> notice
    assert all("%0Afix: " in l for l in annotations if "TL401" in l)


def test_markdown_summary(capsys, in_repo, tmp_path):
    _, out = run(capsys, "check", "--isolated", "--format", "markdown", "examples")
    assert out.startswith("## trainlint\n")
    assert "| error | 3 |" in out
    rows = [l for l in out.splitlines() if l.startswith("| `examples/")]
    assert len(rows) == len(json_findings(capsys, "examples"))
    assert all(l.count(" | ") == 3 for l in rows)  # no pipe inside a message breaks a row
    clean = EXAMPLES / "megatron_gpt_8b.sh"
    _, out = run(capsys, "check", "--isolated", "--format", "markdown", "--select", "TL1", str(clean))
    assert "No problems found." in out


def test_statistics_counts_equal_the_findings(capsys):
    _, out = run(capsys, "check", "--isolated", "--statistics", "--format", "json", str(EXAMPLES))
    rows = json.loads(out)
    expected: dict[str, int] = {}
    for _, code, *_ in json_findings(capsys, str(EXAMPLES)):
        expected[code] = expected.get(code, 0) + 1
    assert {r["code"]: r["count"] for r in rows} == expected
    assert [r["count"] for r in rows] == sorted((r["count"] for r in rows), reverse=True)
    code, out = run(capsys, "check", "--isolated", "--statistics", str(EXAMPLES))
    assert code == 1 and out.splitlines()[0].split()[1] == rows[0]["code"]
