"""TL128: Apex AMP with ZeRO, or with DeepSpeed's fp16/bf16 mode"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    ds_enabled,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also, _model_dtype, _stage


class AmpConflict(Rule):
    """## What it does
    Reports Apex AMP (`amp.enabled`) together with ZeRO, or together with DeepSpeed's own fp16
    / bf16 modes.

    ## Why is this bad?
    DeepSpeed refuses both combinations when it configures the optimizer.

    ## Example
    ```json
    {"amp": {"enabled": true}, "zero_optimization": {"stage": 1}}
    ```

    ## Fix
    Use DeepSpeed's `fp16` (or `bf16`) mode instead of AMP.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1983-1985` @ edaa722: "Amp and ZeRO are not currently
      compatible, please use (legacy) fp16 mode which performs similar to amp opt_mode=O2";
      `engine.py:2002-2003`: "Cannot enable both amp with (legacy) fp16 or bfloat16 mode".
    """

    code = "TL128"
    release_dependent = False
    name = "ds-amp-conflict"
    default_severity = Severity.ERROR
    summary = "Apex AMP with ZeRO, or with DeepSpeed's fp16/bf16 mode"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        amp = ds_enabled(spec, "amp")
        if not as_bool(amp):
            return
        stage = _stage(spec)
        if stage is not None and stage[0] > 0:
            yield Finding(f"Apex AMP with ZeRO stage {stage[0]}; DeepSpeed stops: \"Amp and ZeRO are not currently "
                          "compatible, please use (legacy) fp16 mode\"", at=amp, also=_also((stage[1], "ZeRO stage")),
                          fix="use \"fp16\": {\"enabled\": true} instead of amp")
            return
        model = _model_dtype(spec)
        if model is not None and model[0] != "fp32":
            yield Finding(f"Apex AMP with DeepSpeed's {model[0]} mode; DeepSpeed stops: \"Cannot enable both amp with "
                          "(legacy) fp16 or bfloat16 mode\"", at=amp, also=_also((model[1], f"{model[0]} enabled")),
                          fix="enable either amp or DeepSpeed's fp16/bf16 mode")
