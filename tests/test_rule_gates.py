"""A rule family's gate (``Rule.gate``) is false only where each of its rules' ``check`` yields nothing:
the engine asks it once per run and passes by the whole family when it is false (issue 33)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_file
from trainlint.project.session import SessionOptions, open_session
from trainlint.rules import RuleContext, load

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _gated_rules(tmp_path):
    session = open_session(SessionOptions(isolated=True), tmp_path)
    rules = [load(entry) for entry in session.registry.rules.entries.values()]
    gated = [r for r in rules if r.gate is not None]
    assert len({r.gate for r in gated}) >= 2, "the Megatron-LM and the Bridge families are gated"
    return gated


def _closed_gates_yield_nothing(paths, gated) -> tuple[int, Counter]:
    """(runs checked, rule checks made behind a closed gate, by the gate's name)."""
    adapters = builtin_adapters()
    runs, closed = 0, Counter[str]()
    for path in paths:
        for spec in check_file(str(path), adapters).specs:
            runs += 1
            for rule in gated:
                if rule.gate(spec):
                    continue
                closed[rule.gate.__name__] += 1
                assert list(rule().check(spec, RuleContext())) == [], (rule.code, str(path))
    return runs, closed


def test_a_closed_gate_means_no_finding_on_the_examples(tmp_path):
    gated = _gated_rules(tmp_path)
    paths = sorted(p for p in EXAMPLES.rglob("*") if p.is_file() and p.suffix in (".sh", ".yaml", ".yml", ".json"))
    runs, closed = _closed_gates_yield_nothing(paths, gated)
    assert runs and closed["is_bridge"]  # the Bridge family's gate is closed on every Megatron-LM script


def test_a_closed_gate_means_no_finding_on_the_corpus(tmp_path, corpus_dir):
    """Legacy Megatron-DeepSpeed scripts close the Megatron-LM family's gate: each of its rules, asked
    anyway, says nothing."""
    gated = _gated_rules(tmp_path)
    paths = sorted(p for p in corpus_dir.rglob("*.sh") if p.is_file())[::3]
    runs, closed = _closed_gates_yield_nothing(paths, gated)
    assert runs > 20 and closed["is_current"] > 0 and closed["is_bridge"] > 0


def _rules_with_triggers(tmp_path):
    from trainlint.rules.startup.megatron.check_table import CheckTable
    from trainlint.rules.startup.megatron.release_table import ReleaseCheckTable

    session = open_session(SessionOptions(isolated=True), tmp_path)
    rules = [load(entry) for entry in session.registry.rules.entries.values()]
    own = [r for r in rules if issubclass(r, (CheckTable, ReleaseCheckTable)) and "findings" in vars(r)]
    assert own, "some tables' rules add checks of their own"
    assert all(r.triggers() is None for r in own), "a table whose rule adds checks of its own declares no triggers"
    return [r for r in rules if r.triggers() is not None]


def test_unwritten_triggers_mean_no_finding_on_the_corpus(tmp_path, corpus_dir):
    """A rule's triggers (``Rule.triggers``: the Megatron-LM check tables' first options) are a test the
    engine makes instead of the rule: on every run that writes none of them, the rule, asked anyway,
    says nothing; and the test does pass rules by (it is not empty on every run)."""
    triggered = _rules_with_triggers(tmp_path)
    assert len(triggered) >= 20, "the Megatron-LM check tables declare their first options"
    adapters = builtin_adapters()
    passed, asked = 0, 0
    for path in sorted(p for p in corpus_dir.rglob("*.sh") if p.is_file())[::2]:
        for spec in check_file(str(path), adapters).specs:
            for rule in triggered:
                if rule.triggers().isdisjoint(spec.settings):
                    passed += 1
                    assert list(rule().check(spec, RuleContext())) == [], (rule.code, str(path))
                else:
                    asked += 1
    assert passed > 100 and asked > 0
