"""TL134: bf16 gradient accumulation on the pipeline engine without ZeRO (numerically unsafe)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_DEEPSPEED_CONFIG, CAP_DEEPSPEED_ENGINE
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    as_str,
    ds_enabled,
    pipeline_engine,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import _also, _stage


class Bf16GradAccumPipeline(Rule):
    """## What it does
    Warns when a bf16 run on DeepSpeed's pipeline engine, without ZeRO, accumulates gradients
    of several micro-batches (gradient_accumulation_steps > 1) in bf16 (no
    `data_types.grad_accum_dtype: "fp32"`).

    ## Why is this bad?
    bf16 has 8 bits of mantissa: summing many micro-batch gradients in bf16 loses precision.
    DeepSpeed only prints a warning and trains on.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "pipeline": {"stages": 4}, "gradient_accumulation_steps": 32}
    ```

    ## Fix
    Add `"data_types": {"grad_accum_dtype": "fp32"}` (with ZeRO stage 1) — or keep few
    accumulation steps.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2011-2017` @ edaa722: warning "BF16 gradient
      accumulation is not safe numerically with large number of accumulation steps, proceed with
      caution".
    """

    code = "TL134"
    release_dependent = False
    name = "ds-bf16-grad-accum-pipeline"
    default_severity = Severity.WARNING
    summary = "bf16 gradient accumulation on the pipeline engine without ZeRO (numerically unsafe)"
    requires = frozenset({CAP_DEEPSPEED_ENGINE})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        engine, stage = pipeline_engine(spec), _stage(spec)
        if engine is None or stage is None or stage[0] > 0 or as_str(spec.precision.dtype) != "bf16":
            return
        if as_bool(spec.precision.fp16_enabled):
            return  # DeeperSpeed's fp16 {type: bfloat16}: upstream DeepSpeed would run fp16 (TL103 territory)
        gas_v = spec.batch.grad_accum
        gas = as_int(gas_v)
        if gas is None or gas <= 1:
            return  # one micro-batch per step: nothing is accumulated
        accum_v = spec.precision.grad_accum_dtype
        accum = (as_str(accum_v) or "bf16").lower()
        if accum != "bf16" or (CAP_DEEPSPEED_CONFIG in capabilities(spec) and as_bool(ds_enabled(spec, "amp"))):
            return
        at = spec.precision.bf16_enabled if as_bool(spec.precision.bf16_enabled) else spec.precision.dtype
        yield Finding(f"bf16 on the pipeline engine ({engine.reason}) without ZeRO accumulates {gas} micro-batch gradients in bf16; "
                      "DeepSpeed only warns: \"BF16 gradient accumulation is not safe numerically with large number of "
                      "accumulation steps\"", at=at, also=_also((engine.at, "pipeline engine"), (gas_v, f"{gas} accumulation steps")),
                      fix="add data_types: {grad_accum_dtype: fp32} with ZeRO stage 1")
