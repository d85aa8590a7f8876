"""TL135: optimizer.params.max_grad_norm without fp16 is silently set to 0 (use gradient_clipping)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_number,
    ds,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS


class MaxGradNormIgnored(Rule):
    """## What it does
    Warns when `optimizer.params.max_grad_norm` is set (> 0) without fp16.

    ## Why is this bad?
    Outside fp16 mode DeepSpeed silently sets it to 0: no clipping happens.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}}}
    ```

    ## Fix
    Use the top-level `gradient_clipping` instead.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:1060-1071` @ edaa722: "DeepSpeedConfig: In FP32 mode,
      DeepSpeed does not permit MAX_GRAD_NORM ({}) > 0, setting to zero".
    """

    code = "TL135"
    release_dependent = False
    name = "ds-max-grad-norm-ignored"
    default_severity = Severity.WARNING
    summary = "optimizer.params.max_grad_norm without fp16 is silently set to 0 (use gradient_clipping)"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        value = ds(spec, "optimizer.params.max_grad_norm")
        norm = as_number(value)
        if norm is None or norm <= 0 or as_bool(spec.precision.fp16_enabled) is not False:
            return
        yield Finding(f"optimizer.params.max_grad_norm {norm:g} without fp16: DeepSpeed sets it to 0 (\"DeepSpeed does "
                      "not permit MAX_GRAD_NORM > 0, setting to zero\"), so gradients are not clipped", at=value,
                      fix=f"remove it and set \"gradient_clipping\": {norm:g}")
