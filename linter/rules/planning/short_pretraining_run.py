"""TL502: A pre-training run of a language model trains on fewer than 200B tokens."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS, CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext, capabilities
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec
from trainlint.rules.planning.helpers import _length_setting, _pretraining_scope, config_tokens


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
        est = usable(spec, ctx)
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
