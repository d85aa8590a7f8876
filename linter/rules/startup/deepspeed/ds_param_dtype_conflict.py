"""TL124: data_types.param_dtype differs from the enabled fp16/bf16 mode"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_str,
    ds,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also, _model_dtype


class ParamDtypeConflict(Rule):
    """## What it does
    Reports `data_types.param_dtype` different from the precision mode the `fp16` / `bf16`
    sections enable (fp32 when neither is).

    ## Why is this bad?
    DeepSpeed derives the model dtype from the fp16/bf16 flags and refuses a divergent
    `param_dtype` at engine start-up.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "data_types": {"param_dtype": "fp16"}}
    ```

    ## Fix
    Enable the matching mode, or omit `data_types.param_dtype`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1498-1515` @ edaa722: "data_types.param_dtype='...'
      conflicts with the enabled precision mode (model dtype ...). Set the matching fp16/bf16
      'enabled' flag or omit data_types.param_dtype."
    """

    code = "TL124"
    release_dependent = False
    name = "ds-param-dtype-conflict"
    default_severity = Severity.ERROR
    summary = "data_types.param_dtype differs from the enabled fp16/bf16 mode"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        value = ds(spec, "data_types.param_dtype")
        wanted = (as_str(value) or "").lower()
        model = _model_dtype(spec)
        if not wanted or model is None or wanted == model[0]:
            return
        yield Finding(f"data_types.param_dtype is {wanted} but the enabled precision mode makes the model {model[0]}; "
                      "DeepSpeed stops: \"data_types.param_dtype=... conflicts with the enabled precision mode\"",
                      at=value, also=_also((model[1], f"{model[0]} enabled here")),
                      fix=f"set param_dtype to {model[0]}, enable the matching mode, or omit it")
