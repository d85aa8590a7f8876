"""TL5xx planning: the run's length against the compute-optimal token count and the 200B-token advice
(Transformer Math 101), and its estimated duration and cost against the project's limits (a CI gate on spend)."""

from __future__ import annotations

from typing import Any, Iterator

from trainlint.framework import CAP_MEGATRON_ARGUMENTS, CAP_MEGATRON_MODEL
from trainlint.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext, capabilities
from trainlint.rules.estimation.scope import usable_estimate
from trainlint.spec import TrainingSpec


def _length_setting(spec: TrainingSpec) -> Any:
    """Where a planning finding points: the run's length (train iterations or samples)."""
    from trainlint.rules.estimation.fixes import point_at  # with a finding only: the fix search's module is not needed at start

    return point_at(spec, "run.train_iters", "run.train_samples")


def _num(v: Any) -> float | None:
    from trainlint.planning.inputs import number

    return number(v)


def config_tokens(spec: TrainingSpec, est: Any) -> float | None:
    """Tokens the config trains for: train iters x global batch x sequence length, or train samples x
    sequence length (the estimate supplies a global batch the config leaves to DP, as NeoX does)."""
    from trainlint.planning.inputs import spec_tokens

    if est is not None:
        return spec_tokens(spec, tokens_per_step=est.tokens_per_step, seq=est.inputs.seq)[0]
    return spec_tokens(spec)[0]


def _steps(spec: TrainingSpec, tokens: float, est: Any) -> float | None:
    """Optimizer steps of the run: train iters, or tokens / tokens per step."""
    iters = _num(spec.run.train_iters)
    if iters:
        return iters
    per_step = est.tokens_per_step if est is not None else None
    if per_step is None:
        batch, seq = _num(spec.batch.global_batch), _num(spec.model.seq_length)
        per_step = batch * seq if batch and seq else None
    return tokens / per_step if per_step else None


def _fine_tuning(spec: TrainingSpec) -> str | None:
    """Why the run starts from trained weights (``run.fine_tuning``, as each adapter spells its
    format's sign: Megatron-LM --finetune, --pretrained-checkpoint, --sft, --load with --no-load-optim;
    GPT-NeoX finetune: true), or None."""
    entry = spec.run.fine_tuning
    return None if entry is None else str(entry.value)


_LANGUAGE_MODELS = ("gpt", "mamba", "hybrid")


def _pretraining_scope(spec: TrainingSpec, tokens: float, est: Any, min_steps: float) -> bool:
    """A decoder language model trained from scratch for a real run (not a smoke test of a few steps)."""
    arch = None if spec.model.architecture is None else spec.model.architecture.value
    if arch not in _LANGUAGE_MODELS or _fine_tuning(spec) is not None:
        return False
    steps = _steps(spec, tokens, est)
    return steps is None or steps >= min_steps


def _dense_params(spec: TrainingSpec, est: Any) -> tuple[float | None, bool]:
    """Parameters of a dense model and whether the figure is exact: the estimate's count, else the
    non-embedding weights from the config's dimensions (a lower bound: the vocabulary is often not in
    the config). MoE models: None (20 tokens per parameter is a dense-model rule)."""
    experts = _num(spec.model.num_experts)
    if experts and experts > 1:
        return None, False
    if est is not None:
        return (est.num_params or None), True
    layers, hidden, heads = (_num(spec.model.num_layers), _num(spec.model.hidden_size),
                             _num(spec.model.num_attention_heads))
    if not (layers and hidden and heads):
        return None, False
    kv = _num(spec.model.num_kv_heads) or heads
    head_dim = _num(spec.model.kv_channels) or hidden / heads
    ffn = _num(spec.model.ffn_hidden_size) or 4 * hidden
    gated = spec.model.gated_mlp is not None and spec.model.gated_mlp.value is True
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv * head_dim  # Q, O and K, V projections
    mlp = (3 if gated else 2) * hidden * ffn
    return layers * (attention + mlp), False


class FewTokensPerParameter(Rule):
    """## What it does
    Divides the tokens a pre-training run trains for (train iters x global batch x sequence
    length, or train samples x sequence length) by the model's parameter count and reports a
    ratio far below the compute-optimal 20 tokens per parameter (below the `ratio` option,
    default 2). Without an estimate (no vocabulary size or world size) the parameters are the
    config's non-embedding weights, a lower bound, so the ratio shown is an upper bound.

    Not reported: fine-tuning (as TL502 tells it: `--finetune`, `--pretrained-checkpoint`,
    `--sft`, `--load` with `--no-load-optim`, NeoX `finetune: true`), runs shorter than
    `min_steps` optimizer steps (smoke tests, benchmarks), MoE models (the 20:1 rule is for
    dense models), and models other than decoder language models (BERT, T5, vision).

    ## Why is this bad?
    For the same compute, a smaller model trained on more tokens reaches a lower loss
    (Hoffmann et al. 2022; "Transformer Math 101": a compute-optimal model satisfies D = 20 P). A
    pre-training run at a fraction of a token per parameter spends its compute on parameters
    it cannot train.

    ## Example
    A 7B model with `--train-iters 1000 --global-batch-size 256 --seq-length 4096`: 1B tokens,
    0.15 tokens per parameter.

    ## Fix
    Train for about 20 tokens per parameter, or choose a smaller model for this compute
    (`trainlint plan --params 7B` shows the compute-optimal run). Set `ratio` (e.g.
    `[tool.trainlint.rules.TL501] ratio = 10`) to report more.

    ## References
    Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models" (Chinchilla);
    "Transformer Math 101" (EleutherAI, 2023: D = 20 P).
    """

    code = "TL501"
    release_dependent = False
    name = "few-tokens-per-parameter"
    summary = "A pre-training run trains on far fewer tokens per parameter than the compute-optimal 20."
    default_severity = Severity.INFO
    needs_estimate = True
    requires = frozenset({CAP_MEGATRON_MODEL})
    options = {"ratio": Option(2.0, "report below this many tokens per parameter (compute-optimal is 20)"),
               "min_steps": Option(1000, "runs with fewer optimizer steps are smoke tests: not reported")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable_estimate(spec, ctx.estimate)
        tokens = config_tokens(spec, est)
        if not tokens or not _pretraining_scope(spec, tokens, est, float(ctx.options["min_steps"])):
            return
        params, exact = _dense_params(spec, est)
        if not params:
            return
        ratio = tokens / params
        if ratio >= float(ctx.options["ratio"]):
            return
        counted = (f"{params:.3g} parameters" if exact
                   else f"at least {params:.3g} parameters (embeddings not counted)")
        yield Finding(
            message=(f"the run trains {tokens:.3g} tokens for {counted}: "
                     f"{'' if exact else 'at most '}{ratio:.2g} tokens per parameter; compute-optimal is about 20 "
                     f"({20 * params:.3g} tokens)"),
            at=_length_setting(spec),
            fix="train for about 20 tokens per parameter, or pick a smaller model for this compute")


class ShortPretraining(Rule):
    """## What it does
    Reports a pre-training run of a decoder language model that trains on fewer than 200B
    tokens (the `min_tokens` option).

    How a pre-training run is told from the rest (from the config alone; a wrong guess costs
    one informational line):
    - fine-tuning is not reported: Megatron-LM `--finetune`, `--pretrained-checkpoint`,
      `--sft`, or `--load` together with `--no-load-optim` (weights without the optimizer
      state start a new run from a checkpoint); GPT-NeoX `finetune: true`. A bare `--load` is
      how pre-training resumes, so it is not taken as fine-tuning;
    - runs shorter than `min_steps` optimizer steps (default 1000) are smoke tests,
      benchmarks or functional tests, not reported;
    - only decoder language models (Megatron `pretrain_gpt.py`, `pretrain_mamba.py`,
      `pretrain_hybrid.py`; GPT-NeoX): the advice is about LLMs, not BERT, T5 or vision models.

    ## Why is this bad?
    "Transformer Math 101": "We do not recommend training a LLM for less than 200B tokens. Although this is
    'chinchilla optimal' for many models, the resulting models are typically quite poor." The
    budget is usually better spent training a smaller model longer or fine-tuning an existing one.

    ## Example
    `pretrain_gpt.py --train-iters 5000 --global-batch-size 256 --seq-length 4096`: 5.2B tokens.

    ## Fix
    Train for more tokens; mark a fine-tuning run as such (`--finetune`, `finetune: true`); or,
    for a project of ablations, set `[tool.trainlint.rules.TL502] min_tokens = 1e9`.

    ## References
    "Transformer Math 101" (EleutherAI, 2023), "Parameter vs Dataset Tradeoffs".
    """

    code = "TL502"
    release_dependent = False
    name = "short-pretraining-run"
    summary = "A pre-training run of a language model trains on fewer than 200B tokens."
    default_severity = Severity.INFO
    needs_estimate = True
    requires = frozenset({CAP_MEGATRON_MODEL})
    options = {"min_tokens": Option(200e9, "report pre-training runs below this many tokens"),
               "min_steps": Option(1000, "runs with fewer optimizer steps are smoke tests: not reported")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable_estimate(spec, ctx.estimate)
        tokens = config_tokens(spec, est)
        minimum = float(ctx.options["min_tokens"])
        if not tokens or tokens >= minimum or not _pretraining_scope(spec, tokens, est, float(ctx.options["min_steps"])):
            return
        markers = ("no --finetune, --pretrained-checkpoint, --sft or --no-load-optim given" if CAP_MEGATRON_ARGUMENTS in capabilities(spec)
                   else "no finetune: true given")
        yield Finding(
            message=(f"a pre-training run of {tokens:.3g} tokens, below {minimum:.3g}: models pre-trained this "
                     f"briefly are typically poor ({markers})"),
            at=_length_setting(spec),
            fix="train for more tokens, or mark a fine-tuning run with --finetune / finetune: true")


def _limit(ctx: RuleContext, option: str, key: str) -> float | None:
    """The rule option, else the project config's key (``max-days``, ``max-cost``)."""
    value = ctx.options.get(option)
    if value is None and ctx.project is not None:
        value = ctx.project.planning.by_key(key)
    return _num(value)


def _price(ctx: RuleContext, gpu_id: str) -> float | None:
    """The rule option, else ``prices.<gpu>`` or ``price-per-gpu-hour`` of the project config."""
    from trainlint.planning.inputs import price_for

    return price_for(gpu_id, _num(ctx.options.get("price_per_gpu_hour")), ctx.project)[0]


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
        est = usable_estimate(spec, ctx.estimate)
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
        est = usable_estimate(spec, ctx.estimate)
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


RULES: list[type] = [FewTokensPerParameter, ShortPretraining, RunTooLong, RunTooExpensive]
