"""CI output formats through the real CLI: SARIF (validated against the official 2.1.0 schema),
GitHub workflow commands, a Markdown job summary, and --statistics."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from trainlint.cli import main
from trainlint.core.diagnostics import Diagnostic, Severity
from trainlint.output.github import annotation, escape_data, escape_property
from trainlint.core.positions import Span

from conftest import EXAMPLES, REPO, SHARED, SHARED_ABSENT

SARIF_SCHEMA = SHARED / "schemas-ext" / "sarif-schema-2.1.0.json"
RULES_MD = REPO / "docs" / "rules.md"
URI_REFERENCE = re.compile(r"^[A-Za-z0-9\-._~%!$&'()*+,;=@/]+$")  # no ':' in a relative reference
CRAFTED_KEY = 'bad%key,:x\\r\\ny|z'  # as written in the JSON file: % , : CR LF and a pipe


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def validate_sarif(sarif: dict) -> None:
    """Against the official schema when ../shared has it (test_sarif_schema_present says when not:
    the other assertions of a SARIF test still run without it)."""
    import jsonschema

    if SARIF_SCHEMA.is_file():
        jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))


def test_sarif_schema_present():
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"SARIF schema not found at {SARIF_SCHEMA} ({SHARED_ABSENT}): "
                    "the SARIF tests ran without schema validation")
    import jsonschema

    assert json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))["properties"]["version"]["enum"] == ["2.1.0"]
    # the validation has teeth: a region at line 0 and an unknown level are refused
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "trainlint"}}, "results": [
        {"message": {"text": "m"}, "level": "fatal", "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": "a.json"}, "region": {"startLine": 0}}}]}]}]}
    with pytest.raises(jsonschema.ValidationError):
        validate_sarif(bad)


def json_findings(capsys, *argv: str) -> list[dict]:
    """Every diagnostic of ``check --format json`` with its file's resolved path."""
    _, out = run(capsys, "check", "--isolated", "--format", "json", *argv)
    return [{**d, "file": Path(f["path"]).resolve().as_posix()} for f in json.loads(out)["files"] for d in f["diagnostics"]]


def text_positions(capsys, *argv: str) -> list[tuple[str, str, int, int]]:
    """(resolved path, code, line, column) of each ``path:line:col: CODE message`` line."""
    _, out = run(capsys, "check", "--isolated", "--no-summary", *argv)
    found = []
    for line in out.splitlines():
        match = re.match(r"^(.+?):(\d+):(\d+): (?:error|warning|info) (\S+) ", line)
        if match and not line.startswith("    "):
            found.append((Path(match[1]).resolve().as_posix(), match[4], int(match[2]), int(match[3])))
    return sorted(found)


@pytest.fixture()
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


@pytest.fixture()
def crafted(tmp_path, monkeypatch) -> Path:
    """A fake checkout (``.git``) with a DeepSpeed JSON whose name and unknown key need escaping
    everywhere; the working directory is a subdirectory of the checkout."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    folder = repo / "train" / "my configs"
    folder.mkdir(parents=True)
    (folder / "ds,a:b%.json").write_text(
        '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 1, "' + CRAFTED_KEY + '": 1}\n}\n', encoding="utf-8")
    monkeypatch.chdir(repo / "train")
    return folder / "ds,a:b%.json"


# ------------------------------------------------------------------------------------ SARIF

def sarif_positions(sarif: dict, root: Path) -> list[tuple[str, str, int, int, int, int]]:
    run_ = sarif["runs"][0]
    found = []
    for result in run_["results"]:
        location = result["locations"][0]["physicalLocation"]
        uri = location["artifactLocation"]["uri"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert URI_REFERENCE.match(uri) and not uri.startswith(("/", "../")), uri
        assert run_["artifacts"][location["artifactLocation"]["index"]]["location"]["uri"] == uri
        region = location["region"]
        found.append(((root / unquote(uri)).resolve().as_posix(), result["ruleId"], region["startLine"],
                      region["startColumn"], region.get("endLine", region["startLine"]),
                      region.get("endColumn", region["startColumn"])))
    return sorted(found)


def test_sarif_over_the_examples_is_valid_with_exact_regions(capsys, in_repo):
    code, out = run(capsys, "check", "--isolated", "--format", "sarif", "examples")
    assert code == 1  # exit codes do not depend on the format
    sarif = json.loads(out)
    validate_sarif(sarif)
    (run_,) = sarif["runs"]
    assert sarif["version"] == "2.1.0" and run_["columnKind"] == "unicodeCodePoints"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == REPO.resolve().as_uri() + "/"
    driver = run_["tool"]["driver"]
    assert driver["name"] == "trainlint" and driver["version"] and driver["informationUri"].startswith("https://")

    positions = sarif_positions(sarif, REPO.resolve())
    assert all(uri.startswith(EXAMPLES.resolve().as_posix() + "/") for uri, *_ in positions)
    # line/col equal the text output; the whole region equals the JSON output's span
    assert [p[:4] for p in positions] == text_positions(capsys, "examples")
    assert positions == sorted((d["file"], d["code"], d["line"], d["column"], d["end_line"], d["end_column"])
                               for d in json_findings(capsys, "examples"))

    rules = driver["rules"]
    assert [r["id"] for r in rules] == list(dict.fromkeys(r["ruleId"] for r in run_["results"]))  # every used rule, once
    for result in run_["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        assert len(result["partialFingerprints"]["primaryLocationLineHash"].split(":")) == 2
    anchors = {f"#{m[0].lower()}-{m[1]}" for m in re.findall(r"^### (TL\d{3}) (\S+)$", RULES_MD.read_text(), re.M)}
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] and rule["help"]["text"]
        assert rule["helpUri"].split("docs/rules.md", 1)[1] in anchors  # the link lands on the rule's heading
    tl201 = next(r for r in rules if r["id"] == "TL201")
    assert tl201["name"] == "oom-risk" and tl201["defaultConfiguration"]["level"] == "error"
    assert "## Why is this bad?" in tl201["help"]["markdown"] and not tl201["help"]["markdown"].startswith("# ")
    assert tl201["fullDescription"]["text"].startswith("Estimates the memory")
    assert "estimation" in tl201["properties"]["tags"] and tl201["properties"]["problem.severity"] == "error"
    oom = next(r for r in run_["results"] if r["ruleId"] == "TL201")
    assert "\nFix: with --micro-batch-size" in oom["message"]["text"]
    tl900 = next(r for r in run_["results"] if r["ruleId"] == "TL900")
    assert tl900["level"] == "note"


def test_sarif_uris_are_relative_to_the_checkout_and_escaped(capsys, crafted):
    code, out = run(capsys, "check", "--isolated", "--format", "sarif", "--select", "TL0", "my configs")
    assert code == 1
    sarif = json.loads(out)
    validate_sarif(sarif)
    run_ = sarif["runs"][0]
    (result,) = run_["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "train/my%20configs/ds%2Ca%3Ab%25.json"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == crafted.parents[2].resolve().as_uri() + "/"
    (finding,) = json_findings(capsys, "--select", "TL0", "my configs")
    assert location["region"] == {"startLine": finding["line"], "startColumn": finding["column"],
                                  "endLine": finding["end_line"], "endColumn": finding["end_column"]}
    assert result["message"]["text"] == finding["message"] and "%key,:x\r\ny|z" in finding["message"]
    (rule,) = run_["tool"]["driver"]["rules"]  # an input code: described from the TL0xx catalogue
    assert rule["id"] == "TL004" and rule["name"] == "unknown-key" and rule["properties"]["tags"] == ["input"]
    assert rule["helpUri"].endswith("/docs/rules.md#tl004-unknown-key")
    assert "### TL004 unknown-key" in RULES_MD.read_text()


def test_sarif_related_locations_and_fingerprints(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ds_config.json").write_text(
        '{\n  "train_batch_size": 10,\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 2\n}\n')
    _, out = run(capsys, "check", "--isolated", "--format", "sarif", "ds_config.json")
    sarif = json.loads(out)
    validate_sarif(sarif)
    results = sarif["runs"][0]["results"]
    fingerprints = [r["partialFingerprints"]["primaryLocationLineHash"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)
    with_related = [r for r in results if r.get("relatedLocations")]
    assert with_related, "a batch-size finding names the other batch keys"
    findings = {(d["code"], d["line"]): d for d in json_findings(capsys, "ds_config.json")}
    for result in with_related:
        region = result["locations"][0]["physicalLocation"]["region"]
        expected = findings[(result["ruleId"], region["startLine"])]["related"]
        got = [(rel["message"]["text"], rel["physicalLocation"]["region"]["startLine"],
                rel["physicalLocation"]["region"]["startColumn"]) for rel in result["relatedLocations"]]
        assert got == [(rel["message"], rel["line"], rel["column"]) for rel in expected]
        assert all(rel["physicalLocation"]["artifactLocation"]["uri"] == "ds_config.json"
                   for rel in result["relatedLocations"])

    # The fingerprint follows the line's text, not its number: a line inserted above keeps it.
    (tmp_path / "ds_config.json").write_text(
        '{\n  "wall_clock_breakdown": false,\n  "train_batch_size": 10,\n  "train_micro_batch_size_per_gpu": 4,\n'
        '  "gradient_accumulation_steps": 2\n}\n')
    _, out = run(capsys, "check", "--isolated", "--format", "sarif", "ds_config.json")
    moved = {r["ruleId"]: r["partialFingerprints"]["primaryLocationLineHash"] for r in json.loads(out)["runs"][0]["results"]}
    assert {r["ruleId"]: r["partialFingerprints"]["primaryLocationLineHash"] for r in results} == moved


@pytest.mark.slow
def test_sarif_and_statistics_over_the_corpus(corpus_dir, capsys, monkeypatch):
    monkeypatch.chdir(corpus_dir)
    # Warm the framework-source cache first: the first check in a fork's checkout adds a TL014 note
    # (how long reading its source took), the later ones do not; the runs compared below are later ones.
    run(capsys, "check", "--isolated", "--exit-zero", "--format", "json", "forks")
    start = time.perf_counter()
    code, out = run(capsys, "check", "--isolated", "--exit-zero", "--format", "sarif", ".")
    elapsed = time.perf_counter() - start
    assert code == 0
    sarif = json.loads(out)
    validate_sarif(sarif)
    results = sarif["runs"][0]["results"]
    findings = json_findings(capsys, "--exit-zero", ".")
    assert len(results) == len(findings)
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%" for r in results)
    size = len(out)
    # --statistics counts the same findings
    _, out = run(capsys, "check", "--isolated", "--exit-zero", "--statistics", "--format", "json", ".")
    # (one row per code and severity: TL004 errs where the framework refuses a key, warns where it ignores one)
    expected: dict[tuple[str, str], int] = {}
    for d in findings:
        expected[d["code"], d["severity"]] = expected.get((d["code"], d["severity"]), 0) + 1
    assert {(r["code"], r["severity"]): r["count"] for r in json.loads(out)} == expected
    print(f"corpus SARIF: {len(results)} results, {size:,} characters, {elapsed:.2f} s")  # shown with -rP


def test_statistics_cannot_be_sarif(capsys):
    assert main(["check", "--isolated", "--statistics", "--format", "sarif", str(EXAMPLES)]) == 2
    assert "--statistics cannot be combined with --format sarif" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ GitHub

def test_github_escaping():
    assert escape_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_github_annotation_of_a_crafted_finding(capsys, crafted):
    code, out = run(capsys, "check", "--isolated", "--format", "github", "--select", "TL0", "my configs")
    assert code == 1
    (finding,) = json_findings(capsys, "--select", "TL0", "my configs")
    line, col, end = finding["line"], finding["column"], finding["end_column"]
    assert out.splitlines() == [
        f"::error file=train/my configs/ds%2Ca%3Ab%25.json,line={line},col={col},endLine={line},endColumn={end},"
        f"title=TL004 unknown-key::train/my configs/ds,a:b%25.json:{line}:{col}: TL004 unknown key "
        "`bad%25key,:x%0D%0Ay|z` in `zero_optimization` (the framework refuses it)",
        "Found 1 problem (1 error) in 1 file.",
    ]


def test_github_multiline_span_has_no_columns():
    d = Diagnostic("TL900", "estimate-unavailable", Severity.INFO, "a\nb", Span(99, 1, 104, 25), fix="c,d")
    assert annotation(d, "x.sh") == (
        "::notice file=x.sh,line=99,endLine=104,title=TL900 estimate-unavailable::x.sh:99:1: TL900 a%0Ab%0Afix: c,d")
    empty = Diagnostic("TL002", "syntax-error", Severity.ERROR, "m", Span(1, 1, 1, 1))
    assert annotation(empty, "y.json") == "::error file=y.json,line=1,col=1,title=TL002 syntax-error::y.json:1:1: TL002 m"
    command_line = Diagnostic("TL104", "attention-heads-layout", Severity.ERROR, "m", Span(1, 5, 1, 9))
    assert annotation(command_line, "<command line>") == \
        "::error title=TL104 attention-heads-layout::<command line>:1:5: TL104 m"


def test_github_annotations_over_the_examples(capsys, in_repo):
    code, out = run(capsys, "check", "--isolated", "--format", "github", "--gpu", "h100-sxm", "examples")
    lines = out.splitlines()
    assert code == 1 and lines[-1] == "Found 12 problems (2 errors, 4 warnings, 6 info) in 10 files."
    annotations = lines[:-1]
    findings = json_findings(capsys, "--gpu", "h100-sxm", "examples")
    assert len(annotations) == len(findings) and all(l.startswith("::") for l in annotations)
    kinds = {"error": "error", "warning": "warning", "info": "notice"}

    def props_of(line: str) -> dict[str, str]:
        return dict(p.split("=", 1) for p in line.split("::")[1].split(" ", 1)[1].split(","))

    def place(line: str) -> tuple:  # the files in walk order (examples/bridge/ after the top-level files): by path
        props = props_of(line)
        return ((REPO / props["file"]).resolve().as_posix(), int(props["line"]), int(props.get("col", 0)), props["title"])

    annotations = sorted(annotations, key=place)
    for line, d in zip(annotations, sorted(findings, key=lambda d: (d["file"], d["line"], d["column"], d["code"]))):
        props = props_of(line)
        assert line.startswith(f"::{kinds[d['severity']]} ")
        assert (REPO / props["file"]).resolve().as_posix() == d["file"]
        assert (int(props["line"]), props["title"]) == (d["line"], f"{d['code']} {d['name']}")
        if d["end_line"] == d["line"]:
            assert int(props["col"]) == d["column"]
        else:
            assert "col" not in props and "endColumn" not in props
    oom = next(l for l in annotations if "TL201" in l)
    assert oom.startswith("::error file=examples/megatron_llama2_70b_oom.sh,line=20,col=24,endLine=20,endColumn=25,")
    assert "%0Afix: with --micro-batch-size 2" in oom


# ------------------------------------------------------------------------------------ Markdown

def cells(row: str) -> list[str]:
    """A GFM table row split as GitHub splits it (``\\|`` is not a separator)."""
    assert row.startswith("| ") and row.endswith(" |")
    return re.split(r"(?<!\\) \| ", row[2:-2])


def test_markdown_summary_over_the_examples(capsys, in_repo):
    code, out = run(capsys, "check", "--isolated", "--format", "markdown", "--gpu", "h100-sxm", "examples")
    assert code == 1
    lines = out.splitlines()
    assert lines[:3] == ["## trainlint", "", "Found 12 problems (2 errors, 4 warnings, 6 info) in 10 files."]
    assert "| error | 2 |\n| warning | 4 |\n| info | 6 |" in out
    findings = json_findings(capsys, "--gpu", "h100-sxm", "examples")
    start = lines.index("| location | code | severity | message |") + 2
    rows = [cells(l) for l in lines[start:start + len(findings)]]
    assert all(len(r) == 4 for r in rows)
    assert [r[2] for r in rows] == sorted((r[2] for r in rows), key=["error", "warning", "info"].index)
    oom = next(r for r in rows if "TL201" in r[1])
    assert oom[0] == r"examples/megatron\_llama2\_70b\_oom.sh:20:24"
    assert oom[1].startswith("[TL201](") and oom[1].endswith("#tl201-oom-risk) oom-risk")
    assert "<br>fix: with --micro-batch-size 2" in oom[3]
    by_rule = lines[lines.index("| code | rule | severity | count |") + 2:]
    assert sum(int(cells(l)[3]) for l in by_rule) == len(findings)
    assert cells(by_rule[0]) == ["TL900", "estimate-unavailable", "info", "5"]


def test_markdown_escapes_a_crafted_message(capsys, crafted):
    _, out = run(capsys, "check", "--isolated", "--format", "markdown", "--select", "TL0", "my configs")
    (row,) = [l for l in out.splitlines() if l.startswith("| train/")]
    assert cells(row) == [
        "train/my configs/ds,a:b%.json:3:37", "[TL004](https://github.com/trainlint/trainlint/blob/main/docs/rules.md"
        "#tl004-unknown-key) unknown-key", "error",
        r"unknown key `bad%key,:x\r\ny\|z` in `zero_optimization` (the framework refuses it)"]


def test_markdown_clean_run_and_row_limit(capsys, in_repo, monkeypatch):
    _, out = run(capsys, "check", "--isolated", "--format", "markdown", "--select", "TL1", "examples/megatron_gpt_8b.sh")
    assert out == "## trainlint\n\nFound 0 problems in 1 file.\n\nNo problems found.\n"
    from trainlint.output import markdown

    monkeypatch.setattr(markdown, "MAX_ROWS", 3)
    _, out = run(capsys, "check", "--isolated", "--format", "markdown", "--gpu", "h100-sxm", "examples")
    assert "9 more findings not shown" in out
    assert len([l for l in out.splitlines() if l.startswith("| examples/")]) == 3


# ------------------------------------------------------------------------------------ --statistics

def test_statistics_counts_equal_the_json_findings(capsys, in_repo):
    code, out = run(capsys, "check", "--isolated", "--statistics", "--format", "json", "--gpu", "h100-sxm", "examples")
    assert code == 1
    rows = json.loads(out)
    assert all(set(r) == {"code", "name", "count", "severity", "fixable"} for r in rows)
    findings = json_findings(capsys, "--gpu", "h100-sxm", "examples")
    # fixable: some finding of the code has a fix --fix applies (a safe one, with edits)
    assert {r["code"]: r["fixable"] for r in rows} == {
        d["code"]: any(e["code"] == d["code"] and e.get("applicability") == "safe" for e in findings) for d in findings}
    expected: dict[str, int] = {}
    for d in findings:
        expected[d["code"]] = expected.get(d["code"], 0) + 1
    assert {r["code"]: r["count"] for r in rows} == expected
    assert [(-r["count"], r["code"]) for r in rows] == sorted((-r["count"], r["code"]) for r in rows)
    assert {r["code"]: r["name"] for r in rows} == {d["code"]: d["name"] for d in findings}

    code, out = run(capsys, "check", "--isolated", "--statistics", "--gpu", "h100-sxm", "examples")
    lines = out.splitlines()
    assert code == 1 and lines[-2] == "Found 12 problems (2 errors, 4 warnings, 6 info) in 10 files."
    assert lines[0].split() == ["5", "TL900", "estimate-unavailable", "info"]
    # TL201's fix (the layout, written by the run's adapter) is unsafe: --fix alone does not apply it
    assert re.match(r"^1  TL201      oom-risk +error$", next(l for l in lines if "TL201" in l))
    assert lines[-1] == "0 fixable with `--fix` (1 with `--fix --unsafe-fixes`)."
    table = [l for l in lines if re.match(r"^ *\d+  TL", l)]
    assert [(int(l.split()[0]), l.split()[1]) for l in table] == [(r["count"], r["code"]) for r in rows]
    code, out = run(capsys, "check", "--isolated", "--statistics", "--unsafe-fixes", "--gpu", "h100-sxm", "examples")
    lines = out.splitlines()
    assert re.match(r"^1  TL201  \[\*\] oom-risk +error$", next(l for l in lines if "TL201" in l))
    assert sum("[*]" in l for l in lines) == 2 and lines[-1] == "[*] 1 fixable with `--fix --unsafe-fixes`."

    assert main(["check", "--isolated", "--statistics", "--exit-zero", "examples"]) == 0
    capsys.readouterr()
    _, out = run(capsys, "check", "--isolated", "--statistics", "--format", "markdown", "examples")
    assert out.startswith("## trainlint statistics\n") and "| 5 | TL900 | estimate-unavailable | info |" in out
    _, out = run(capsys, "check", "--isolated", "--statistics", "--format", "github", "examples")
    assert "::" not in out and "TL900" in out  # the table, for the log
