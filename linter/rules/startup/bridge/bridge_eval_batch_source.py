"""TL693: the evaluation batch left to a training batch that is null, which Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields

_PAIRS = (("eval_global_batch_size", "global_batch_size"), ("eval_micro_batch_size", "micro_batch_size"))


class EvalBatchSource(BridgeRule):
    """## What it does
    Checks `validation.eval_global_batch_size` and `validation.eval_micro_batch_size` left unset (null)
    while the training batch they default to, `train.global_batch_size` / `train.micro_batch_size`, is
    written as null.

    ## Why is this bad?
    An `AssertionError` in `ConfigContainer.validate`, before the first step: the evaluation batch is taken
    from the training batch when it is not given, and there is none.

    ## Example
    ```yaml
    train:
      micro_batch_size: 1
      global_batch_size: null
    ```

    ## Fix
    Set the training batch, or the evaluation batch (`validation.eval_global_batch_size`).

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1432-1442` @ 067f987 (`ConfigContainer.validate`).
    """

    code = "TL693"
    name = "bridge-eval-batch-source"
    summary = "the evaluation batch left to a training batch that is null, which Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        for evaluation, training in _PAIRS:
            train = f.entry(f"train.{training}")
            if train is None or train.value is not None:
                continue  # unwritten: the recipe's (or a field trainlint does not see); written: a batch
            known, value = f.known(f"validation.{evaluation}", None)  # ValidationConfig's default: None
            if known and value is None:
                yield Finding(f"`train.{training}` is null and `validation.{evaluation}` is not set: Bridge stops with "
                              f"\"train.{training} must be set when {evaluation} is not explicitly configured\"",
                              at=train)
