"""Golden cases for every rule, in the manner of sqlfluff's YAML rule cases and yamllint's
(line, column) assertions. One YAML file per rule code under tests/rules/cases/:

    rule: TL110
    cases:
      - name: neox-zero2-with-pipeline-engine
        format: neox                 # which adapter the case exercises
        files:                       # written into a temporary directory
          run.yml: |
            pipe_parallel_size: 1
            zero_optimization: {stage: 2}
        check: run.yml               # default: the first file
        args: ["--env", "TP=4"]      # extra `trainlint check` arguments (optional; with
                                     # ["--config", "{dir}/trainlint.toml"] the case's own project config)
        expect:                      # (code, line, column) of the rule's findings; [] = passes
          - [TL110, 2, 29]           # or (code, line, column, severity): all entries then name it
        message: "ZeRO stage 2 with"   # the expected message, or a part of it: some finding of the
                                     # rule contains it (a list: each part in some finding)
        fixed:                       # every file `trainlint check --fix` changes, as it reads after
          run.yml: |                 # (with --unsafe-fixes when the findings' fix is unsafe); the
            ...                      # files not named must be left as they were

Only the findings of the case's own rule are compared, so a case need not be clean otherwise. A case
whose findings offer a fix (``applicability`` safe or unsafe in the JSON) must say ``fixed:``; a case
with findings should say ``message:`` (for a rule on the estimate, its wording rather than its numbers,
which move with the estimator).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from trainlint.rules import applies
from trainlint.core.spec import TrainingSpec
from trainlint.cli import main
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry

CASES_DIR = Path(__file__).resolve().parent / "cases"


def _load_cases() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in data["cases"]:
            out.append((data["rule"], case))
    return out


CASES = _load_cases()


@pytest.mark.parametrize("rule, case", CASES, ids=[f"{r}-{c['name']}" for r, c in CASES])
def test_golden_case(rule: str, case: dict, tmp_path: Path, capsys) -> None:
    for name, text in case["files"].items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    check = tmp_path / case.get("check", next(iter(case["files"])))
    args = [a.replace("{dir}", str(tmp_path)) for a in case.get("args", [])]
    isolation = [] if "--config" in args else ["--isolated"]  # a case may bring its own project config
    code = main(["check", *isolation, "--format", "json", "--select", rule, *args, str(check)])
    output = capsys.readouterr().out
    assert code in (0, 1), output
    # an expected finding may also name its severity: [code, line, column, severity]
    with_severity = any(len(e) == 4 for e in case["expect"])
    found = sorted((d["code"], d["line"], d["column"], *((d["severity"],) if with_severity else ()))
                   for f in json.loads(output)["files"] for d in f["diagnostics"] if d["code"] == rule)
    expected = sorted(tuple(e) for e in case["expect"])
    assert found == expected, json.dumps(json.loads(output), indent=1)
    diagnostics = [d for f in json.loads(output)["files"] for d in f["diagnostics"] if d["code"] == rule]
    parts = case.get("message", [])
    for part in [parts] if isinstance(parts, str) else parts:
        assert any(part in d["message"] for d in diagnostics), (part, [d["message"] for d in diagnostics])
    applicability = {d.get("applicability") for d in diagnostics} & {"safe", "unsafe"}
    if applicability:
        assert "fixed" in case, f"the findings offer a fix ({', '.join(sorted(applicability))}): say `fixed:`"
    if "fixed" in case:
        before = {name: (tmp_path / name).read_text(encoding="utf-8") for name in case["files"]}
        unsafe = ["--unsafe-fixes"] if "unsafe" in applicability else []
        main(["check", *isolation, "--fix", *unsafe, "--select", rule, *args, str(check)])
        capsys.readouterr()
        after = {name: (tmp_path / name).read_text(encoding="utf-8") for name in case["files"]}
        assert {name: text for name, text in after.items() if text != before[name]} == case["fixed"]


def test_every_rule_has_a_failing_and_a_passing_case_per_format() -> None:
    registry = build_registry(create_host(entry_points=False))
    missing = []
    for code, rule in registry.rules.items():
        # the built-in frameworks whose capabilities the rule requires (all three when it requires none)
        frameworks = [f.name for f in registry.frameworks
                      if applies(rule, TrainingSpec(framework=f.name, path=""))] or ["deepspeed", "megatron", "neox"]
        for framework in frameworks:
            cases = [c for r, c in CASES if r == code and c.get("format") == framework]
            if not any(c["expect"] for c in cases):
                missing.append(f"{code} {framework}: no failing case")
            if not any(not c["expect"] for c in cases):
                missing.append(f"{code} {framework}: no passing case")
    assert not missing, "\n".join(missing)
