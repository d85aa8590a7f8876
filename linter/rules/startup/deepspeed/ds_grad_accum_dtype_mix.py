"""TL130: grad_accum_dtype differs from the model dtype without ZeRO or AMP"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_str,
    ds,
    ds_enabled,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also, _model_dtype, _stage


class GradAccumDtypeMix(Rule):
    """## What it does
    Without ZeRO and without AMP, reports a `data_types.grad_accum_dtype` different from the
    model dtype (fp16 / bf16 / fp32 from the precision sections).

    ## Why is this bad?
    Only ZeRO's optimizers support accumulating gradients in another dtype; DeepSpeed stops.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"}}
    ```

    ## Fix
    Enable ZeRO (stage 1 keeps fp32 accumulation for bf16), or drop `grad_accum_dtype`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2006-2021` @ edaa722: "unsupported mix of
      model_dtype=... and grad_accum_dtype=..."; dtypes from `get_data_types` (engine.py:1485-1496).
    """

    code = "TL130"
    release_dependent = False
    name = "ds-grad-accum-dtype-mix"
    default_severity = Severity.ERROR
    summary = "grad_accum_dtype differs from the model dtype without ZeRO or AMP"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        accum_v = ds(spec, "data_types.grad_accum_dtype")
        accum = (as_str(accum_v) or "").lower()
        model, stage = _model_dtype(spec), _stage(spec)
        if not accum or model is None or stage is None or stage[0] > 0 or as_bool(ds_enabled(spec, "amp")):
            return
        if accum != model[0]:
            yield Finding(f"model dtype {model[0]} with grad_accum_dtype {accum} and no ZeRO; DeepSpeed stops: "
                          f"\"unsupported mix of model_dtype and grad_accum_dtype\"", at=accum_v,
                          also=_also((model[1], f"{model[0]} enabled"), (stage[1], "ZeRO stage 0")),
                          fix="enable ZeRO stage 1 or drop data_types.grad_accum_dtype")
