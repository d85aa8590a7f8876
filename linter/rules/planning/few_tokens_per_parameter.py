"""TL501: A pre-training run trains on far fewer tokens per parameter than the compute-optimal 20."""

from __future__ import annotations

from typing import Any, Iterator

from trainlint.core.framework import CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec
from trainlint.rules.planning.helpers import _length_setting, _num, _pretraining_scope, config_tokens


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
        est = usable(spec, ctx)
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
