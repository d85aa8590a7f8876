"""TL126: LAMB / 1-bit LAMB with a static fp16.loss_scale"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_number,
    ds,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also, _optimizer


class LambStaticLossScale(Rule):
    """## What it does
    Reports the LAMB or 1-bit LAMB optimizer with a static fp16 loss scale (`fp16.loss_scale`
    other than 0).

    ## Why is this bad?
    DeepSpeed's LAMB needs dynamic loss scaling and stops at start-up.

    ## Example
    ```json
    {"optimizer": {"type": "Lamb"}, "fp16": {"enabled": true, "loss_scale": 128}}
    ```

    ## Fix
    Set `fp16.loss_scale` to 0 (dynamic).

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1696-1698` @ edaa722: "DeepSpeed {} optimizer requires
      dynamic loss scaling"; `dynamic_loss_scale()` is `fp16.loss_scale == 0` (engine.py:1467-1468).
    """

    code = "TL126"
    release_dependent = False
    name = "ds-lamb-static-loss-scale"
    default_severity = Severity.ERROR
    summary = "LAMB / 1-bit LAMB with a static fp16.loss_scale"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        found = _optimizer(spec)
        scale_v = ds(spec, "fp16.loss_scale")
        scale = as_number(scale_v)
        if found is None or found[0] not in ("lamb", "onebitlamb") or scale is None or scale == 0:
            return
        yield Finding(f"{found[0]} with static loss scale {scale:g}; DeepSpeed stops: \"DeepSpeed {found[0]} optimizer "
                      "requires dynamic loss scaling\"", at=scale_v, also=_also((found[1], "optimizer")),
                      fix="set fp16.loss_scale to 0 (dynamic)")
