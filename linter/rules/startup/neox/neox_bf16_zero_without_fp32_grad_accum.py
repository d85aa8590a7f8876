"""TL180: bf16 with ZeRO >= 1 on the pipeline engine without data_types.grad_accum_dtype fp32"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule


class Bf16ZeroWithoutFp32GradAccum(_NeoXRule):
    """## What it does
    Warns when a run trains in bf16 with ZeRO (stage >= 1) on DeepSpeed's pipeline engine
    (`pipe_parallel_size >= 1`) without `data_types: {grad_accum_dtype: fp32}`.

    ## Why is this bad?
    NeoX knows this combination breaks in DeepSpeed (microsoft/DeepSpeed#1835) and only logs a
    warning: gradients accumulate in bf16 and training degrades or fails later. (NeoX's own
    condition tests `pp_size > 0` after clamping pp_size to >= 1, so it warns even without the
    pipeline engine; trainlint warns only where the pipeline engine is engaged.)

    ## Example
    ```yaml
    pipe_parallel_size: 1
    precision: bfloat16
    zero_optimization: {stage: 1}
    ```

    ## Fix
    Add `data_types: {grad_accum_dtype: fp32}`.

    ## References
    * `megatron/neox_arguments/arguments.py:999-1009@ea7aefd`: `if (zero_stage > 0) and (pp_size > 0) and not
      fp32_grad_accum: logging.warn("Outstanding DeepSpeed issue means that pp>0, zero1, and bf16 will break
      without fp32 grads")`
    """

    code = "TL180"
    name = "neox-bf16-zero-without-fp32-grad-accum"
    default_severity = Severity.WARNING
    summary = "bf16 with ZeRO >= 1 on the pipeline engine without data_types.grad_accum_dtype fp32"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        dtype = a.spec.get("precision.dtype")
        stage = a.zero_stage()
        if dtype is None or dtype.value != "bf16" or not stage or not a.spec.value("parallel.pipeline_engine"):
            return
        accum = a.spec.value("precision.grad_accum_dtype")
        if accum == "fp32" or (accum is None and not a.whole_run() and not a.given("data_types")):
            return
        yield Finding(f"bf16 with ZeRO stage {stage} on the pipeline engine (pipe_parallel_size "
                      f"{a.get('pipe_parallel_size')}) and no data_types.grad_accum_dtype fp32: NeoX warns \"Outstanding "
                      "DeepSpeed issue means that pp>0, zero1, and bf16 will break without fp32 grads\"",
                      at="parallel.zero_stage", also=((dtype, "bf16 set here"), ("parallel.pipeline", "pipeline")),
                      fix="add data_types: {grad_accum_dtype: fp32}")
