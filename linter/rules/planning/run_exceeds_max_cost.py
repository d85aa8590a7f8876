"""TL504: The estimated cost of the run exceeds the project's max-cost."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec
from trainlint.rules.planning.helpers import _length_setting, _limit, _num, config_tokens


def _price(ctx: RuleContext, gpu_id: str) -> float | None:
    """The rule option, else ``prices.<gpu>`` or ``price-per-gpu-hour`` of the project config."""
    from trainlint.planning.inputs import price_for

    return price_for(gpu_id, _num(ctx.options.get("price_per_gpu_hour")), ctx.project)[0]


class RunTooExpensive(Rule):
    """## What it does
    Prices the whole run (GPU-hours x the price per GPU-hour of its GPU kind: the
    `price_per_gpu_hour` option, else `prices.<gpu>` or `price-per-gpu-hour` in
    `[tool.trainlint]`) and warns when it exceeds the `max_cost` option or `max-cost`.

    ## Why is this bad?
    A CI gate on spend: a config change that doubles the cost of a run should be seen before
    the job is submitted, not on the invoice.

    ## Example
    `max-cost = 2000000`, `price-per-gpu-hour = 4` and a run of 600,000 GPU-hours.

    ## Fix
    A cheaper layout (`trainlint suggest --price-per-gpu-hour`), another GPU kind
    (`trainlint estimate --compare-gpus`), or fewer tokens. To block a merge on it, raise it
    to an error: `severity = { TL504 = "error" }` in `[tool.trainlint]`.

    ## References
    "Estimation as Discipline" (a capacity-planning tutorial); Hodge 2025, "Sizing AI Training by Cost per Memory Bandwidth".
    """

    code = "TL504"
    release_dependent = False
    name = "run-exceeds-max-cost"
    summary = "The estimated cost of the run exceeds the project's max-cost."
    default_severity = Severity.WARNING
    needs_estimate = True
    requires = frozenset({CAP_MEGATRON_MODEL})
    options = {"max_cost": Option(None, "limit in currency units (default: max-cost in [tool.trainlint])"),
               "price_per_gpu_hour": Option(None, "price (default: prices.<gpu> or price-per-gpu-hour in [tool.trainlint])")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable(spec, ctx)
        limit = _limit(ctx, "max_cost", "max-cost")
        if est is None or limit is None:
            return
        price = _price(ctx, est.inputs.gpu.id)
        tokens = config_tokens(spec, est)
        if not tokens or price is None:
            return
        from trainlint.planning.budget import run_totals

        totals = run_totals(est, tokens, price)
        if totals.cost is None or totals.cost <= limit:
            return
        yield Finding(
            message=(f"the run costs an estimated {totals.cost:,.0f} ({totals.gpu_hours:,.0f} GPU-hours at {price:g} "
                     f"per GPU-hour on {est.inputs.gpu.id}), over the limit of {limit:,.0f}"),
            at=_length_setting(spec),
            fix="a cheaper layout (trainlint suggest --price-per-gpu-hour), another GPU kind (trainlint estimate "
                "--compare-gpus), or fewer tokens")
