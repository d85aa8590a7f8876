"""TL127: managed_gradient_accumulation false with overlap_comm below ZeRO-2, pipeline, DeepCompile or AMP"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    ds,
    ds_enabled,
    pipeline_engine,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also, _stage


class UnmanagedGradAccumConflict(Rule):
    """## What it does
    Reports `managed_gradient_accumulation: false` together with something DeepSpeed refuses
    with it: ZeRO `overlap_comm` below stage 2, the pipeline engine, DeepCompile, or Apex AMP.

    ## Why is this bad?
    DeepSpeed stops when it configures the optimizer.

    ## Example
    ```json
    {"managed_gradient_accumulation": false, "amp": {"enabled": true}}
    ```

    ## Fix
    Keep the default `managed_gradient_accumulation: true`, or drop the other option.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1705-1713` @ edaa722: "managed_gradient_accumulation=False
      supports ZeRO overlap_comm only with ZeRO stage 2", "... is not supported with pipeline
      parallelism", "... with DeepCompile", "... with Apex AMP".
    """

    code = "TL127"
    release_dependent = False
    name = "ds-unmanaged-grad-accum-conflict"
    default_severity = Severity.ERROR
    summary = "managed_gradient_accumulation false with overlap_comm below ZeRO-2, pipeline, DeepCompile or AMP"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        managed = ds(spec, "managed_gradient_accumulation")
        if as_bool(managed) is not False:
            return
        stage = _stage(spec)
        overlap = ds(spec, "zero_optimization.overlap_comm")
        quote = "DeepSpeed stops: \"managed_gradient_accumulation=False"
        if stage is not None and stage[0] < 2 and as_bool(overlap):
            yield Finding(f"managed_gradient_accumulation false with overlap_comm at ZeRO stage {stage[0]}; {quote} "
                          "supports ZeRO overlap_comm only with ZeRO stage 2\"", at=managed,
                          also=_also((overlap, "overlap_comm"), (stage[1], "ZeRO stage")))
        engine = pipeline_engine(spec)
        if engine is not None:
            yield Finding(f"managed_gradient_accumulation false with the pipeline engine ({engine.reason}); {quote} is not "
                          "supported with pipeline parallelism\"", at=managed, also=_also((engine.at, "pipeline")))
        compiled = ds(spec, "compile.deepcompile")
        if as_bool(compiled):
            yield Finding(f"managed_gradient_accumulation false with DeepCompile; {quote} is not supported with "
                          "DeepCompile\"", at=managed, also=_also((compiled, "DeepCompile")))
        amp = ds_enabled(spec, "amp")
        if as_bool(amp):
            yield Finding(f"managed_gradient_accumulation false with Apex AMP; {quote} is not supported with Apex AMP\"",
                          at=managed, also=_also((amp, "AMP enabled")))
