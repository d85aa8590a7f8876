"""Running the start-up rules (TL1xx, :mod:`trainlint.rules.startup`) on a candidate spec.

A candidate is refused when a TL1xx rule reports something on it that the config as written
does not already get: the suggestion must not introduce a start-up failure, but a finding that
has nothing to do with the layout (a missing data path) must not refuse every layout either.
"""

from __future__ import annotations

from typing import Any, Sequence

from trainlint.rules import Rule, RuleContext, applies, capabilities
from trainlint.spec import TrainingSpec

StartupRules = Sequence[tuple[type[Rule], dict[str, Any]]]


def startup_rules(registry: Any, rule_options: dict[str, dict[str, Any]] | None = None, *,
                  preview: bool = False) -> StartupRules:
    """The registry's TL1xx rules with their options (the project's, else the defaults); the preview
    rules only in preview mode, as in a check."""
    from trainlint.engine import resolve_options

    return [(rule, resolve_options(rule, rule_options or {})) for rule in registry.by_selector("TL1")
            if preview or rule.lifecycle != "preview"]


def default_startup_rules() -> StartupRules:
    """The built-in and installed plugins' TL1xx rules (no project config)."""
    from trainlint.plugins import create_host
    from trainlint.registry import build_registry

    return startup_rules(build_registry(create_host()))


def startup_findings(spec: TrainingSpec, rules: StartupRules, project: Any = None) -> set[tuple[str, str]]:
    """(code, message) of every TL1xx finding on ``spec``."""
    out: set[tuple[str, str]] = set()
    caps = capabilities(spec)
    for rule, options in rules:
        if not applies(rule, spec, caps):
            continue
        ctx = RuleContext(options=options, project=project)
        try:
            for finding in rule().check(spec, ctx):
                out.add((rule.code, finding.message))
        except Exception as exc:  # noqa: BLE001 - a failing rule refuses the candidate, it does not stop the search
            out.add((rule.code, f"rule failed: {type(exc).__name__}: {exc}"))
    return out
