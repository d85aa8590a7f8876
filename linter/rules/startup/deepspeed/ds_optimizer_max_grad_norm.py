"""TL113: optimizer.params.max_grad_norm, which DeepSpeed refuses when it builds the optimizer"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.derive import (
    ds,
    ds_present,
)
from trainlint.rules.startup.releases import ReleaseBoundRule, Releases
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.launch_helpers import DS


class OptimizerMaxGradNorm(ReleaseBoundRule):
    """## What it does
    Reports `max_grad_norm` among the params of the config's `optimizer`.

    ## Why is this bad?
    When DeepSpeed builds the optimizer the config names (no optimizer passed in code), it refuses the
    parameter with a ValueError, in every supported release; gradient clipping is the top-level
    `gradient_clipping` key. Whether it builds that optimizer is the training script's choice: Megatron
    front ends (Megatron-DeepSpeed, GPT-NeoX) and many scripts pass their own optimizer to
    `deepspeed.initialize`, and the config's section is then never built. A config does not say which,
    so this is a warning. (Outside fp16 the config reader first logs that it sets the value to 0,
    TL135, but the key is still there when the optimizer is built.)

    ## Example
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "max_grad_norm": 1.0}}}
    ```

    ## Fix
    Remove it and set `"gradient_clipping": 1.0`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2090-2093` @ edaa722: "'max_grad_norm' is not supported as an
      optimizer parameter, please switch to using the deepspeed parameter 'gradient_clipping'".
    """

    code = "TL113"
    name = "ds-optimizer-max-grad-norm"
    default_severity = Severity.WARNING
    summary = "optimizer.params.max_grad_norm, which DeepSpeed refuses when it builds the optimizer"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        value = ds(spec, "optimizer.params.max_grad_norm")
        if value is None or not ds_present(spec, "optimizer.type"):
            return
        shown = f"{value.value:g}" if isinstance(value.value, (int, float)) and not isinstance(value.value, bool) \
            else repr(value.value)
        yield Finding("optimizer.params.max_grad_norm: if DeepSpeed builds this optimizer (no optimizer passed to "
                      "deepspeed.initialize in code), it stops: \"'max_grad_norm' "
                      "is not supported as an optimizer parameter, please switch to using the deepspeed parameter "
                      "'gradient_clipping'\"", at=value, severity=Severity.WARNING, fix=f"remove it and set \"gradient_clipping\": {shown}")
