"""Running the start-up rules (TL1xx, :mod:`trainlint.rules.startup`) on a candidate spec.

A candidate is refused when a TL1xx rule reports something on it that the config as written
does not already get: the suggestion must not introduce a start-up failure, but a finding that
has nothing to do with the layout (a missing data path) must not refuse every layout either.

The rules come from the caller: the session's (:meth:`trainlint.project.session.Session.startup_rules`,
made by :func:`trainlint.project.engine.startup_rules` from its registry and rule options).
"""

from __future__ import annotations

from typing import Any, Sequence

from trainlint.rules import Rule, RuleContext, applies, capabilities
from trainlint.core.spec import TrainingSpec

StartupRules = Sequence[tuple[type[Rule], dict[str, Any]]]


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
