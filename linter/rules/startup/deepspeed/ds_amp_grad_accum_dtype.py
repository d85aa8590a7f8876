"""TL114: Apex AMP without ZeRO with a gradient-accumulation dtype other than the model's fp32"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    ds,
    zero_stage,
)
from trainlint.rules.startup.releases import ReleaseBoundRule, Releases
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.launch_helpers import DS


_DTYPES = {"fp16": "fp16", "float16": "fp16", "half": "fp16", "torch.float16": "fp16", "bf16": "bf16",
           "bfloat16": "bf16", "torch.bfloat16": "bf16", "fp32": "fp32", "float32": "fp32", "float": "fp32",
           "torch.float32": "fp32"}
"""DeepSpeed's DtypeEnum spellings of the dtypes a gradient can accumulate in (deepspeed/runtime/config_utils)."""


class AmpGradAccumDtype(ReleaseBoundRule):
    """## What it does
    Reports Apex AMP (`amp.enabled`) without ZeRO with `data_types.grad_accum_dtype` other than fp32,
    the model dtype under AMP (DeepSpeed's own fp16/bf16 modes are off with AMP, TL128).

    ## Why is this bad?
    DeepSpeed raises NotImplementedError when it picks the optimizer wrapper: "Model data type and
    gradient accumulation data type must be equal to use Amp".

    ## Example
    ```json
    {"amp": {"enabled": true}, "data_types": {"grad_accum_dtype": "bf16"}}
    ```

    ## Fix
    Remove `data_types.grad_accum_dtype` (or set it to fp32).

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1998-2001` @ edaa722: "Model data type and gradient accumulation
      data type must be equal to use Amp".
    """

    code = "TL114"
    name = "ds-amp-grad-accum-dtype"
    default_severity = Severity.ERROR
    summary = "Apex AMP without ZeRO with a gradient-accumulation dtype other than the model's fp32"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        amp = ds(spec, "amp.enabled")
        dtype_v = ds(spec, "data_types.grad_accum_dtype")
        if as_bool(amp) is not True or dtype_v is None or not isinstance(dtype_v.value, str):
            return
        stage = zero_stage(spec)
        if stage is not None and as_int(stage) != 0:
            return  # ZeRO: TL128 (AMP and ZeRO are refused together)
        if as_bool(spec.precision.fp16_enabled) or as_bool(spec.precision.bf16_enabled):
            return  # TL128: AMP with DeepSpeed's fp16/bf16 mode
        accum = _DTYPES.get(dtype_v.value.lower())
        if accum is not None and accum != "fp32":
            yield Finding(f"data_types.grad_accum_dtype {dtype_v.value} with Apex AMP (model dtype fp32, no ZeRO): DeepSpeed "
                          "stops with \"Model data type and gradient accumulation data type must be equal to use Amp\"",
                          at=dtype_v, also=((amp, "AMP enabled"),), fix="remove data_types.grad_accum_dtype")
