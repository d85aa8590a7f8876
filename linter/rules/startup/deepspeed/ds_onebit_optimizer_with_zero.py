"""TL131: 1-bit Adam / 0/1 Adam / 1-bit LAMB with ZeRO"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, ONEBIT, _also, _optimizer, _stage


class OneBitOptimizerWithZero(Rule):
    """## What it does
    Reports the 1-bit optimizers (OneBitAdam, ZeroOneAdam, OneBitLamb) with ZeRO.

    ## Why is this bad?
    They compress the gradient all-reduce themselves; DeepSpeed refuses them with ZeRO.

    ## Example
    ```json
    {"optimizer": {"type": "OneBitAdam"}, "zero_optimization": {"stage": 1}}
    ```

    ## Fix
    Use ZeRO stage 0 with 1-bit optimizers, or a plain Adam with ZeRO.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2152, 2159, 2166` @ edaa722: "1bit-Adam is not
      compatible with ZeRO", "0/1 Adam is not compatible with ZeRO", "1bit-Lamb is not compatible
      with ZeRO".
    """

    code = "TL131"
    release_dependent = False
    name = "ds-onebit-optimizer-with-zero"
    default_severity = Severity.ERROR
    summary = "1-bit Adam / 0/1 Adam / 1-bit LAMB with ZeRO"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        found, stage = _optimizer(spec), _stage(spec)
        if found is None or stage is None or stage[0] == 0 or found[0] not in ONEBIT:
            return
        label = ONEBIT[found[0]]
        yield Finding(f"{found[0]} with ZeRO stage {stage[0]}; DeepSpeed stops: \"{label} is not compatible with ZeRO\"",
                      at=found[1], also=_also((stage[1], "ZeRO stage")), fix="use ZeRO stage 0 or another optimizer")
