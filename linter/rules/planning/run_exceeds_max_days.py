"""TL503: The estimated training time exceeds the project's max-days."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec
from trainlint.rules.planning.helpers import _length_setting, _limit, config_tokens


class RunTooLong(Rule):
    """## What it does
    Estimates how long the whole run takes (its tokens at the estimated tokens/s) and warns
    when that exceeds the limit: the `max_days` option, or `max-days` in `[tool.trainlint]`.

    ## Why is this bad?
    A run that cannot finish in its reservation wastes the part it does run. A CI gate on
    duration catches a config change (a smaller micro batch, full recompute) that silently
    adds weeks.

    ## Example
    `max-days = 30` and a run estimated at 45 days.

    ## Fix
    A faster layout (`trainlint suggest`), more GPUs, or fewer tokens. To block a merge on it
    (the finding is a warning, which does not fail `trainlint check`), raise it to an error:
    `severity = { TL503 = "error" }` in `[tool.trainlint]`.

    ## References
    "Estimation as Discipline" (a capacity-planning tutorial): training time for a token budget.
    """

    code = "TL503"
    release_dependent = False
    name = "run-exceeds-max-days"
    summary = "The estimated training time exceeds the project's max-days."
    default_severity = Severity.WARNING
    needs_estimate = True
    requires = frozenset({CAP_MEGATRON_MODEL})
    options = {"max_days": Option(None, "limit in days (default: max-days in [tool.trainlint]; none: no check)")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable(spec, ctx)
        limit = _limit(ctx, "max_days", "max-days")
        if est is None or limit is None:
            return
        tokens = config_tokens(spec, est)
        if not tokens:
            return
        from trainlint.planning.budget import run_totals  # here: without a limit (most projects) the check ends above

        totals = run_totals(est, tokens)
        if totals.days <= limit:
            return
        yield Finding(
            message=(f"the run trains {tokens:.3g} tokens at an estimated {est.tokens_per_s:,.0f} tokens/s: "
                     f"{totals.days:.1f} days on {totals.gpus} GPUs, over the limit of {limit:g} days"),
            at=_length_setting(spec),
            fix="a faster layout (trainlint suggest), more GPUs, or fewer tokens")
