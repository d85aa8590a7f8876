"""TL186: min_lr greater than the learning rate (optimizer.params.lr)"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule, _number


OPT_DEFAULT_LR = 0.001
"""OPT_PARAMS_DEFAULTS["lr"] (arguments.py:84-92): the lr NeoX uses when optimizer.params has none."""


class MinLrAboveLr(_NeoXRule):
    """## What it does
    Checks that `min_lr` is not above the learning rate. NeoX takes the learning rate from
    `optimizer.params.lr` (0.001 when the optimizer gives none), replacing any top-level `lr`.

    ## Why is this bad?
    NeoX's `validate_values` raises "min_lr must be smaller or equal lr".

    ## Example
    ```yaml
    optimizer: {type: Adam, params: {lr: 0.0001}}
    min_lr: 0.0006
    ```

    ## Fix
    Set `min_lr` at or below `optimizer.params.lr` (often a tenth of it).

    ## References
    * `megatron/neox_arguments/arguments.py:1052-1060@ea7aefd`: `"lr": opt_params["params"].get("lr",
      OPT_PARAMS_DEFAULTS["lr"])`
    * `megatron/neox_arguments/arguments.py:1268-1276@ea7aefd`: "NeoXArgs.validate_values() min_lr must be
      smaller or equal lr"
    """

    code = "TL186"
    name = "neox-min-lr-above-lr"
    summary = "min_lr greater than the learning rate (optimizer.params.lr)"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        min_lr = _number(a.get("min_lr"))
        if min_lr is None or not a.given("min_lr"):
            return
        lr_value = a.s.get("optimizer.params.lr")
        if lr_value is not None:
            lr, target, note = _number(lr_value.value), a.at("optimizer.params.lr"), "optimizer.params.lr"
        elif a.given("optimizer") and isinstance(a.get("optimizer"), dict):
            lr, target, note = OPT_DEFAULT_LR, a.at("optimizer"), "NeoX's default lr 0.001 (no optimizer.params.lr)"
        else:
            return  # the optimizer may be in another file of the run
        if lr is not None and min_lr > lr:
            yield Finding(f"min_lr {min_lr} is greater than the learning rate {lr} ({note}): NeoX stops with "
                          "\"min_lr must be smaller or equal lr\"", at=a.at("min_lr"), also=((target, "learning rate"),))
