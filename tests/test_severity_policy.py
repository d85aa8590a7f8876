"""The severity policy (docs/rules.md, "What is an error"), over every registered rule: each
declares whether its verdict depends on the framework's release, and the engine lowers an error
of a release-dependent rule to a warning that names the assumption when the run's release is
assumed, and leaves every other finding as the rule gave it."""

from __future__ import annotations

import pytest

from trainlint.core.diagnostics import Severity
from trainlint.project.engine import _place
from trainlint.frameworks.locate import assumed
from trainlint.frameworks.target import FrameworkTarget, TargetOrigin
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.rules import Finding
from trainlint.core.spec import TrainingSpec

RULES = sorted(build_registry(create_host(entry_points=False)).rules.values(), key=lambda r: r.code)


def _spec(framework: str, known: bool) -> TrainingSpec:
    spec = TrainingSpec(framework=framework, path="train.sh")
    spec.target = (FrameworkTarget(framework, "Megatron-LM", "core_v0.8.0", TargetOrigin.PROJECT_CONFIG)
                   if known else assumed(framework))
    return spec


def test_every_rule_declares_whether_its_verdict_depends_on_the_release() -> None:
    undeclared = [r.code for r in RULES if r.release_dependent is None]
    assert undeclared == []
    # a check quoted from one release's source is release-dependent: every Megatron-LM start-up rule
    assert all(r.release_dependent for r in RULES if "TL140" <= r.code <= "TL179")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_an_error_is_a_certainty_about_the_targeted_release(rule: type) -> None:
    framework = (rule.frameworks or ("megatron",))[0]
    finding = Finding("the framework refuses this", severity=Severity.ERROR)
    on_known = _place(rule, finding, _spec(framework, known=True))
    on_assumed = _place(rule, finding, _spec(framework, known=False))
    assert on_known.severity is Severity.ERROR and on_known.message == finding.message
    if rule.release_dependent:
        assert on_assumed.severity is Severity.WARNING
        assert "assumed" in on_assumed.message
        if rule.behaviour_changed:
            assert rule.behaviour_changed in on_assumed.message
    else:
        assert on_assumed.severity is Severity.ERROR and on_assumed.message == finding.message
    # a warning or an info is never raised nor lowered
    warning = Finding("a risk", severity=Severity.WARNING)
    assert _place(rule, warning, _spec(framework, known=False)).severity is Severity.WARNING
