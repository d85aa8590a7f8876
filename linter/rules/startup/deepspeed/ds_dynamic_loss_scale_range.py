"""TL138: fp16 dynamic loss scaling with loss_scale_window or min_loss_scale not positive"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    ds,
    ds_target,
)
from trainlint.rules.startup.releases import ReleaseBoundRule, Releases
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.launch_helpers import DS, _number


class DynamicLossScaleRange(ReleaseBoundRule):
    """## What it does
    Reports an fp16 config with dynamic loss scaling (`fp16.enabled` and `fp16.loss_scale` 0, the
    default) whose `loss_scale_window` or `min_loss_scale` is not positive.

    ## Why is this bad?
    From DeepSpeed 0.19.3 the fp16 config model refuses it when the config is read: a window of 0
    would divide by zero in the loss scaler, a floor of 0 or less lets the scale collapse. Static
    loss scaling (`loss_scale` > 0) does not read them and is accepted.

    ## Example
    ```json
    {"fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 0}}
    ```

    ## Fix
    Use a positive window (DeepSpeed's default is 1000) and a positive minimum scale (default 1).

    ## References
    - DeepSpeed `deepspeed/runtime/precision_config.py:182-196` @ edaa722 (since v0.19.3, #8050):
      "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0)",
      "fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)".
    """

    code = "TL138"
    name = "ds-dynamic-loss-scale-range"
    default_severity = Severity.ERROR
    summary = "fp16 dynamic loss scaling with loss_scale_window or min_loss_scale not positive"
    requires = DS
    releases = Releases("deepspeed", first="0.19.3")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        enabled = ds(spec, "fp16.enabled")
        if as_bool(enabled) is not True:
            return
        scale = ds(spec, "fp16.loss_scale")
        if scale is not None and _number(scale) != 0:
            return  # static loss scaling (or a value the schema reports)
        for key in ("loss_scale_window", "min_loss_scale"):
            value = ds(spec, "fp16." + key)
            n = _number(value)
            if n is not None and n <= 0:
                yield Finding(f"fp16.{key} is {value.value!r} with dynamic loss scaling (fp16 enabled, loss_scale 0); "  # type: ignore[union-attr]
                              f"DeepSpeed (0.19.3 and later) stops: \"fp16.{key} must be > 0 when dynamic loss scaling "
                              "is enabled (loss_scale=0)\"", at=ds_target(spec, "fp16." + key),
                              also=((enabled, "fp16 enabled"),),
                              fix=f"set fp16.{key} to a positive value (default {1000 if key == 'loss_scale_window' else 1})")
