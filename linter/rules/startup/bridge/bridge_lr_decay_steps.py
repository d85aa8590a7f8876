"""TL694: a learning-rate decay of zero or fewer steps, which Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Any, Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, number, stops


class LrDecaySteps(BridgeRule):
    """## What it does
    Computes the scheduler's `lr_decay_steps` as `ConfigContainer._calculate_scheduler_steps` does and
    checks that it is positive: with sample-based training, `scheduler.lr_decay_samples` (else
    `train.train_samples`); with iteration-based training, `scheduler.max_steps`, else
    `scheduler.lr_decay_iters`, else `train.train_iters`, times `train.global_batch_size`. It speaks when
    the decay length written (`lr_decay_iters`, `lr_decay_samples`) makes it zero or negative; a
    non-positive training length or `max_steps` is TL670's.

    ## Why is this bad?
    A `ValueError` in `ConfigContainer.validate`, before the first step.

    ## Example
    ```yaml
    train:
      train_iters: 1000
      global_batch_size: 256
    scheduler:
      lr_decay_iters: 0
    ```

    ## Fix
    Give a positive `scheduler.lr_decay_iters` (or leave it unset: the training length is used).

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1745-1797` @ 067f987
      (`ConfigContainer._calculate_scheduler_steps`).
    """

    code = "TL694"
    name = "bridge-lr-decay-steps"
    summary = "a learning-rate decay of zero or fewer steps, which Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        known, samples = f.known("train.train_samples", None)
        if not known:
            return
        if samples is not None:
            yield from self._decay(f, "scheduler.lr_decay_samples", 1, "")
            return
        known, max_steps = f.known("scheduler.max_steps", None)
        if not known or max_steps is not None:
            return  # max_steps decides the decay: its sign is TL670's
        known, batch = f.known("train.global_batch_size", None)
        if known and number(batch) and batch > 0:
            yield from self._decay(f, "scheduler.lr_decay_iters", batch, f" x `train.global_batch_size` {batch}")

    def _decay(self, f: Fields, path: str, factor: Any, times: str) -> Iterator[Finding]:
        decay = f.entry(path)
        if decay is None or not number(decay.value) or decay.value * factor > 0:
            return
        steps = decay.value * factor
        yield Finding(f"`{path}` {decay.value}{times} gives lr_decay_steps {steps}: "
                      + stops(f"lr_decay_steps must be > 0, got {steps}."), at=decay)
