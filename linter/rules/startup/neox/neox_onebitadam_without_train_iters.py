"""TL181: OneBitAdam optimizer without train_iters"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule


class OneBitAdamWithoutTrainIters(_NeoXRule):
    """## What it does
    Checks that a run with the `OneBitAdam` optimizer sets `train_iters`.

    ## Why is this bad?
    NeoX builds DeepSpeed's WarmupDecayLR schedule for OneBitAdam from `train_iters` and asserts it
    is set.

    ## Example
    ```yaml
    optimizer: {type: OneBitAdam, params: {lr: 0.0006}}
    ```

    ## Fix
    Add `train_iters`.

    ## References
    * `megatron/neox_arguments/arguments.py:1062-1065@ea7aefd`: `assert self.train_iters is not None`,
      "OneBitAdam requires train_iters to be specified"
    """

    code = "TL181"
    name = "neox-onebitadam-without-train-iters"
    summary = "OneBitAdam optimizer without train_iters"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        kind = a.get("optimizer.type")
        if not isinstance(kind, str) or kind.lower() != "onebitadam" or a.given("train_iters") or not a.whole_run():
            return
        yield Finding(f"optimizer type {kind} without train_iters: NeoX stops with \"OneBitAdam requires train_iters to "
                      "be specified\"", at=a.at("optimizer.type"), fix="add train_iters")
