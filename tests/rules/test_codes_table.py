"""The codes table (linter/rules/codes.py) and the registered rules agree, every rule lives in the module
its row names, and the lifecycle means what the table's docstring says: a preview rule runs only in
preview mode, a removed code selects (and configures) the code that replaced it, with a warning."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from trainlint.project.config import ProjectConfig
from trainlint.project.engine import LintSettings, lint, settings_from
from trainlint.project.plugins import BUILTIN_PLUGINS, create_host
from trainlint.project.registry import build_registry
from trainlint.rules import codes
from trainlint.rules.codes import CODES, FAMILIES, PREVIEW, REMOVED, Code

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "linter" / "rules"


@pytest.fixture(scope="module")
def registry():
    return build_registry(create_host(entry_points=False))


def test_codes_and_names_are_unique():
    assert len({row.code for row in CODES}) == len(CODES)
    assert len({row.name for row in CODES}) == len(CODES)
    assert all(row.family in FAMILIES for row in CODES)


def test_every_row_is_a_registered_rule_and_every_builtin_rule_has_its_row(registry):
    builtin = {code: rule for code, rule in registry.rules.items() if rule.plugin == "trainlint.builtin"}
    live = {row.code: row for row in CODES if row.lifecycle is not REMOVED}
    assert sorted(builtin) == sorted(live)
    for code, rule in builtin.items():
        row = live[code]
        assert (rule.name, rule.__module__, rule.lifecycle) == (row.name, row.module, row.lifecycle.value), code
    assert not registry.failures


def test_every_row_declares_what_its_rule_requires(registry):
    """The registry decides whether a rule runs on a run from its row (without importing it): the row's
    capabilities must be its rule's ``requires``, and no built-in rule is limited by framework name."""
    for row in CODES:
        if row.lifecycle is REMOVED:
            continue
        rule = registry.rules[row.code]
        assert (row.capabilities, rule.frameworks) == (rule.requires, ()), row.code


def test_a_registry_imports_no_rule_until_one_is_needed():
    """Building a registry imports the family packages, not their rule modules; asking for one rule
    imports that rule's module only."""
    import subprocess
    import sys

    code = ("import sys\nfrom trainlint.project.plugins import create_host\nfrom trainlint.project.registry import build_registry\n"
            "from trainlint.rules.codes import CODES\n"
            "registry = build_registry(create_host(entry_points=False))\n"
            "modules = {row.module for row in CODES if row.module}\n"
            "before = sorted(m for m in modules if m in sys.modules)\n"
            "rule = registry.rules['TL152']\n"
            "after = sorted(m for m in modules if m in sys.modules)\n"
            "print(len(registry.rules), before, after, rule.plugin, rule.lifecycle)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    live = sum(row.lifecycle is not REMOVED for row in CODES)
    expected = f"{live} [] ['{codes.BY_CODE['TL152'].module}'] trainlint.builtin {codes.BY_CODE['TL152'].lifecycle.value}"
    assert done.stdout.strip() == expected, done.stdout + done.stderr


def test_removed_codes_redirect_to_a_live_code_and_have_no_rule(registry):
    for row in CODES:
        if row.lifecycle is REMOVED:
            assert row.redirect in registry.rules and codes.BY_CODE[row.redirect].lifecycle is not REMOVED, row
            assert row.code not in registry.rules
        else:
            assert row.redirect is None, row


def test_every_family_is_a_builtin_bundle():
    # the shared families by the host, the others by their framework (Framework.rules())
    host = create_host(entry_points=False)
    build_registry(host)
    registered = {impl.plugin_name for impl in host.hook.trainlint_rules.get_hookimpls()}
    assert set(FAMILIES.values()) <= registered
    assert all(f in BUILTIN_PLUGINS or host.owners[f] in BUILTIN_PLUGINS for f in FAMILIES.values())


def _rule_classes(path: Path) -> list[str]:
    """Codes of the classes a module defines with a ``code = "..."`` (a rule)."""
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "code" for t in stmt.targets):
                    found.append(ast.literal_eval(stmt.value))
    return found


def test_one_rule_per_module_named_by_its_slug():
    """No rule outside the module its row names, and no rule module holds two rules."""
    where = {row.module: row.code for row in CODES if row.module}
    for path in RULES_DIR.rglob("*.py"):
        module = ".".join(("trainlint", *path.relative_to(RULES_DIR.parent).with_suffix("").parts))
        found = _rule_classes(path)
        if module in where:
            assert found == [where[module]], (path, found)
        else:
            assert not found, f"{path} defines rules {found} but is no row's module (linter/rules/codes.py)"


# -- lifecycle semantics ----------------------------------------------------------------------

SCRIPT = """#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 24 \\
    --hidden-size 1024 \\
    --num-attention-heads 16 \\
    --micro-batch-size 2 \\
    --tensor-model-parallel-size 2 \\
    --tp-comm-overlap
"""


def _codes_found(tmp_path: Path, registry, settings: LintSettings) -> set[str]:
    from trainlint.files.checker import check_file

    path = tmp_path / "train.sh"
    path.write_text(SCRIPT)
    results = lint([check_file(str(path), registry.adapters)], registry, settings)
    return {d.code for r in results for d in r.diagnostics}


def test_a_preview_rule_runs_only_in_preview_mode(tmp_path, registry, monkeypatch):
    rule = registry.rules["TL152"]
    assert "TL152" in _codes_found(tmp_path, registry, settings_from(ProjectConfig()))
    monkeypatch.setattr(rule, "lifecycle", PREVIEW.value)
    assert "TL152" not in _codes_found(tmp_path, registry, settings_from(ProjectConfig()))
    assert "TL152" not in _codes_found(tmp_path, registry, settings_from(ProjectConfig(), select=["TL152"]))
    assert "TL152" in _codes_found(tmp_path, registry, settings_from(ProjectConfig(), preview=True))
    assert "TL152" in _codes_found(tmp_path, registry, settings_from(ProjectConfig(preview=True)))
    assert "TL152" not in _codes_found(tmp_path, registry, settings_from(ProjectConfig(preview=True), preview=False))


def test_a_removed_code_means_its_redirect_with_a_warning(tmp_path, registry, monkeypatch):
    gone = Code("TL139", "megatron", "megatron-old-tp-comm-overlap-check", REMOVED, redirect="TL152")
    monkeypatch.setattr(codes, "BY_CODE", {**codes.BY_CODE, gone.code: gone})
    selected = settings_from(ProjectConfig(), select=["TL139"])
    assert selected.warnings == ["TL139 (megatron-old-tp-comm-overlap-check) was removed; using TL152 instead"]
    assert _codes_found(tmp_path, registry, selected) & {"TL152", "TL139"} == {"TL152"}
    ignored = settings_from(ProjectConfig(ignore=["tl139"]))
    assert "TL152" not in _codes_found(tmp_path, registry, ignored) and ignored.warnings
    configured = settings_from(ProjectConfig(severity={"TL139": "info"}))
    assert configured.severity == {"TL152": "info"}
    # a prefix is not a code: it keeps selecting what exists under it, without a warning
    assert settings_from(ProjectConfig(), select=["TL13"]).warnings == []
