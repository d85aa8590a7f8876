"""Rules are imported when a check needs them (issue 33): a rule bundle may declare its rules
(``DeferredRule``: code, name, module, capabilities) and the engine imports a rule's module only once
the rule is selected and its run's framework has what the rule requires. trainlint's own families
declare theirs from the codes table, so a check of a DeepSpeed JSON imports no Megatron, NeoX or
Bridge rule, and the rules of a plugin work the same way."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from trainlint import hookimpl
from trainlint.files.checker import check_file
from trainlint.project.config import ProjectConfig
from trainlint.project.engine import lint, settings_from
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.rules import DeferredRule
from trainlint.rules.codes import CODES, FAMILIES

REPO = Path(__file__).resolve().parents[1]
DS_JSON = REPO / "examples" / "deepspeed_zero3_offload.json"

RULE_MODULE = textwrap.dedent('''\
    from trainlint.rules import Finding, Rule
    from trainlint.core.diagnostics import Severity

    class Everything(Rule):
        code = "ZZ001"
        name = "zz-everything"
        summary = "says something about every run"
        default_severity = Severity.INFO
        requires = frozenset({REQUIRES})

        def check(self, spec, ctx):
            yield Finding("seen")
    ''')


def _imported_after_check(*argv: str) -> dict:
    """The trainlint and third-party modules a fresh process holds after ``trainlint check ARGV``."""
    code = ("import json, sys\nfrom trainlint.cli import main\n"
            f"status = main(['check', '--isolated', '--exit-zero', *{list(argv)!r}])\n"
            "print(json.dumps({'status': status, 'modules': sorted(sys.modules)}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_deepspeed_json_check_imports_only_the_rules_that_apply_to_it():
    from trainlint.adapters.deepspeed.framework import DeepSpeedFramework
    from trainlint.core.spec import TrainingSpec

    found = _imported_after_check(str(DS_JSON))
    assert found["status"] == 0
    modules = set(found["modules"])
    caps = DeepSpeedFramework().capabilities(TrainingSpec(framework="deepspeed", path=str(DS_JSON)))
    rule_modules = {row.module: row for row in CODES if row.module}
    imported = {rule_modules[m] for m in modules if m in rule_modules}
    # every imported rule is one that applies to a DeepSpeed run; every one that applies was imported
    assert imported and all(row.capabilities <= caps for row in imported)
    assert {row.code for row in imported} == {row.code for row in rule_modules.values() if row.capabilities <= caps}
    for family in ("megatron", "neox", "bridge", "planning"):
        assert not [m for m in modules if m.startswith(FAMILIES[family] + ".")], family
    assert "yaml" not in modules and "jsonschema" not in modules


def test_selecting_start_up_rules_imports_no_estimation_rule_nor_the_estimate():
    found = _imported_after_check("--select", "TL1", str(DS_JSON))
    modules = set(found["modules"])
    assert found["status"] == 0
    assert not [m for m in modules if m.startswith(FAMILIES["estimation"] + ".")]
    # the session's GPU table (the estimator's context) is read; the model of the estimate is not
    assert "trainlint.estimator.context" in modules
    assert not {"trainlint.estimator.core", "trainlint.estimator.inputs"} & modules
    assert [m for m in modules if m.startswith(FAMILIES["deepspeed"] + ".ds_")]


def _plugin_registry(tmp_path: Path, monkeypatch, module: str, source: str | None, requires: frozenset[str]):
    if source is not None:
        (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))

    class Plugin:
        @hookimpl
        def trainlint_rules(self):
            return [DeferredRule("ZZ001", "zz-everything", module, requires=requires)]

    host = create_host(entry_points=False)
    host.manager.register(Plugin(), name="zz-plugin")
    return build_registry(host)


def _findings(registry) -> list[tuple[str, str]]:
    results = lint([check_file(str(DS_JSON), registry.adapters)], registry, settings_from(ProjectConfig()))
    return [(d.code, d.message) for r in results for d in r.diagnostics if d.code in ("ZZ001", "TL998")]


def test_a_plugins_declared_rule_is_imported_when_it_runs(tmp_path, monkeypatch):
    registry = _plugin_registry(tmp_path, monkeypatch, "zz_rules_runs", RULE_MODULE.replace("{REQUIRES}", ""),
                                frozenset())
    assert "zz_rules_runs" not in sys.modules and not registry.failures
    assert [e.code for e in registry.entries_by_selector("zz-everything")] == ["ZZ001"]
    assert "zz_rules_runs" not in sys.modules  # selecting by name reads the declaration only
    assert _findings(registry) == [("ZZ001", "seen")]
    assert "zz_rules_runs" in sys.modules
    assert registry.rules["ZZ001"].plugin == "zz-plugin"


def test_a_declared_rule_whose_run_lacks_its_capability_is_never_imported(tmp_path, monkeypatch):
    source = RULE_MODULE.replace("{REQUIRES}", '"megatron-arguments"')
    registry = _plugin_registry(tmp_path, monkeypatch, "zz_rules_megatron", source, frozenset({"megatron-arguments"}))
    assert _findings(registry) == []
    assert "zz_rules_megatron" not in sys.modules


def test_a_declared_rule_that_cannot_be_loaded_is_a_tl998_not_a_traceback(tmp_path, monkeypatch):
    registry = _plugin_registry(tmp_path, monkeypatch, "zz_rules_missing", None, frozenset())
    (code, message), = _findings(registry)
    assert code == "TL998" and "zz-plugin" in message and "zz_rules_missing not imported" in message
    # a class that requires other capabilities than its declaration said: the declaration cannot be trusted
    source = RULE_MODULE.replace("{REQUIRES}", '"megatron-arguments"')
    registry = _plugin_registry(tmp_path, monkeypatch, "zz_rules_lying", source, frozenset())
    (code, message), = _findings(registry)
    assert code == "TL998" and "other capabilities" in message


def test_a_declaration_with_a_malformed_code_is_refused_at_registration(tmp_path, monkeypatch):
    class Plugin:
        @hookimpl
        def trainlint_rules(self):
            return [DeferredRule("zz1", "Not Kebab", "nowhere")]

    host = create_host(entry_points=False)
    host.manager.register(Plugin(), name="zz-bad")
    registry = build_registry(host)
    assert "zz1" not in registry.rules
    (failure,) = [f for f in registry.failures if f.plugin == "zz-bad"]
    assert "not 1-3 capitals" in failure.reason and "not kebab-case" in failure.reason
