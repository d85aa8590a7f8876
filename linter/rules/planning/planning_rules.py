"""TL5xx: the run's length against the compute-optimal token count (seed 001)."""

from __future__ import annotations

from typing import Any, Iterator

from trainlint.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.fixes import point_at
from trainlint.rules.estimation.scope import usable_estimate
from trainlint.spec import TrainingSpec


def _num(v: Any) -> float | None:
    raw = getattr(v, "value", v)
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        return float(raw)
    except (TypeError, ValueError):
        return None


def config_tokens(spec: TrainingSpec, est: Any) -> float | None:
    """Tokens the config trains for: train iters x tokens per step, or train samples x sequence length."""
    iters = _num(spec.run.train_iters)
    if iters:
        return iters * est.tokens_per_step
    samples = _num(spec.run.train_samples)
    if samples:
        return samples * est.inputs.seq
    return None


class FewTokensPerParameter(Rule):
    """## What it does
    Divides the tokens the run trains for (train iters x global batch x sequence length, or
    train samples x sequence length) by the model's parameter count and reports a ratio far
    below the compute-optimal 20 tokens per parameter.

    ## Why is this bad?
    For the same compute, a smaller model trained on more tokens reaches a lower loss
    (Hoffmann et al. 2022, seed 001: D = 20 P). A pre-training run at a few tokens per
    parameter spends its budget on parameters it cannot train. Fine-tuning runs and short
    smoke tests are expected to be far below: the finding is informational.

    ## Example
    A 7B model with `--train-iters 1000 --global-batch-size 256 --seq-length 4096` (1B tokens,
    0.15 tokens per parameter).

    ## Fix
    Train for more tokens (about 20 x parameters), or choose a smaller model for the budget.

    ## References
    Hoffmann et al. 2022 (Chinchilla); seed 001.
    """

    code = "TL501"
    name = "few-tokens-per-parameter"
    summary = "The run trains on far fewer tokens per parameter than the compute-optimal 20."
    default_severity = Severity.INFO
    needs_estimate = True
    frameworks = ("megatron", "neox")
    options = {"ratio": Option(2.0, "report below this many tokens per parameter (compute-optimal is 20)")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable_estimate(spec, ctx.estimate)
        if est is None or not est.num_params:
            return
        tokens = config_tokens(spec, est)
        if not tokens:
            return
        ratio = tokens / est.num_params
        if ratio >= float(ctx.options["ratio"]):
            return
        yield Finding(
            message=(f"the run trains {tokens:.3g} tokens for {est.num_params:.3g} parameters: {ratio:.2g} tokens "
                     f"per parameter, compute-optimal is about 20 ({20 * est.num_params:.3g} tokens)"),
            at=point_at(spec, "run.train_iters", "run.train_samples"),
            fix="train for about 20 tokens per parameter, or pick a smaller model for this compute")


def _fine_tuning(spec: TrainingSpec) -> bool:
    """Megatron's --finetune / --pretrained-checkpoint, NeoX's finetune: true: the run starts from
    trained weights, so a short run is expected."""
    for key in ("finetune", "pretrained_checkpoint"):
        entry = spec.settings.get(key)
        if entry is not None and entry.value not in (None, False, "", "false", "False"):
            return True
    return False


class ShortPretraining(Rule):
    """## What it does
    Reports a pre-training run (no `--finetune`, no `--pretrained-checkpoint`, no NeoX
    `finetune: true`) that trains on fewer than 200B tokens.

    ## Why is this bad?
    Seed 001: pre-training below about 200B tokens rarely gives a model worth its compute;
    the budget is usually better spent on a smaller model trained longer, or on fine-tuning an
    existing one. Informational: a smoke test or an ablation is short on purpose.

    ## Example
    `--train-iters 1000 --global-batch-size 256 --seq-length 4096` without `--finetune`: 1B tokens.

    ## Fix
    Train for more tokens, mark a fine-tuning run as such (`--finetune`), or raise the
    `min_tokens` option for this project.

    ## References
    Seed 001 (the 200B-token advice).
    """

    code = "TL502"
    name = "short-pretraining-run"
    summary = "A pre-training run trains on fewer than 200B tokens."
    default_severity = Severity.INFO
    needs_estimate = True
    frameworks = ("megatron", "neox")
    options = {"min_tokens": Option(200e9, "report pre-training runs below this many tokens")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable_estimate(spec, ctx.estimate)
        if est is None or _fine_tuning(spec):
            return
        tokens = config_tokens(spec, est)
        minimum = float(ctx.options["min_tokens"])
        if not tokens or tokens >= minimum:
            return
        yield Finding(
            message=f"a pre-training run of {tokens:.3g} tokens, below {minimum:.3g} (no --finetune or pretrained checkpoint given)",
            at=point_at(spec, "run.train_iters", "run.train_samples"),
            fix="train for more tokens, or mark a fine-tuning run with --finetune / finetune: true")


def _limit(ctx: RuleContext, option: str, key: str) -> float | None:
    """The rule option, else the project config's key (``max-days``, ``max-cost``)."""
    value = ctx.options.get(option)
    if value is None and ctx.project is not None:
        value = ctx.project.raw.get(key)
    return _num(value)


def _price(ctx: RuleContext, gpu_id: str) -> float | None:
    value = ctx.options.get("price_per_gpu_hour")
    raw = ctx.project.raw if ctx.project is not None else {}
    if value is None and isinstance(raw.get("prices"), dict):
        value = raw["prices"].get(gpu_id)
    if value is None:
        value = raw.get("price-per-gpu-hour")
    return _num(value)


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
    A faster layout (`trainlint suggest`), more GPUs, or fewer tokens.

    ## References
    Seed 000 (training time for a token budget).
    """

    code = "TL503"
    name = "run-exceeds-max-days"
    summary = "The estimated training time exceeds the project's max-days."
    default_severity = Severity.WARNING
    needs_estimate = True
    frameworks = ("megatron", "neox")
    options = {"max_days": Option(None, "limit in days (default: max-days in [tool.trainlint]; none: no check)")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        from trainlint.planning.budget import run_totals

        est = usable_estimate(spec, ctx.estimate)
        limit = _limit(ctx, "max_days", "max-days")
        if est is None or limit is None:
            return
        tokens = config_tokens(spec, est)
        if not tokens:
            return
        totals = run_totals(est, tokens)
        if totals.days <= limit:
            return
        yield Finding(
            message=(f"the run trains {tokens:.3g} tokens at an estimated {est.tokens_per_s:,.0f} tokens/s: "
                     f"{totals.days:.1f} days on {totals.gpus} GPUs, over the limit of {limit:g} days"),
            at=point_at(spec, "run.train_iters", "run.train_samples"),
            fix="a faster layout (trainlint suggest), more GPUs, or fewer tokens")


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
    (`trainlint estimate --compare-gpus`), or fewer tokens.

    ## References
    Seeds 000 and 002.
    """

    code = "TL504"
    name = "run-exceeds-max-cost"
    summary = "The estimated cost of the run exceeds the project's max-cost."
    default_severity = Severity.WARNING
    needs_estimate = True
    frameworks = ("megatron", "neox")
    options = {"max_cost": Option(None, "limit in currency units (default: max-cost in [tool.trainlint])"),
               "price_per_gpu_hour": Option(None, "price (default: prices.<gpu> or price-per-gpu-hour in [tool.trainlint])")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        from trainlint.planning.budget import run_totals

        est = usable_estimate(spec, ctx.estimate)
        limit = _limit(ctx, "max_cost", "max-cost")
        if est is None or limit is None:
            return
        price = _price(ctx, est.inputs.gpu.id)
        tokens = config_tokens(spec, est)
        if not tokens or price is None:
            return
        totals = run_totals(est, tokens, price)
        if totals.cost is None or totals.cost <= limit:
            return
        yield Finding(
            message=(f"the run costs an estimated {totals.cost:,.0f} ({totals.gpu_hours:,.0f} GPU-hours at {price:g} "
                     f"per GPU-hour on {est.inputs.gpu.id}), over the limit of {limit:,.0f}"),
            at=point_at(spec, "run.train_iters", "run.train_samples"),
            fix="a cheaper layout (trainlint suggest --price-per-gpu-hour), another GPU kind (trainlint estimate "
                "--compare-gpus), or fewer tokens")


RULES: list[type] = [FewTokensPerParameter, ShortPretraining, RunTooLong, RunTooExpensive]
