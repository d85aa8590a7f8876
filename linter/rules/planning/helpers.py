"""TL5xx planning: the run's length against the compute-optimal token count and the 200B-token advice
(Transformer Math 101), and its estimated duration and cost against the project's limits (a CI gate on spend)."""

from __future__ import annotations

from typing import Any

from trainlint.rules import RuleContext
from trainlint.core.spec import TrainingSpec


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


def _limit(ctx: RuleContext, option: str, key: str) -> float | None:
    """The rule option, else the project config's key (``max-days``, ``max-cost``)."""
    value = ctx.options.get(option)
    if value is None and ctx.project is not None:
        value = ctx.project.planning.by_key(key)
    return _num(value)
