"""TL121."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_str,
    ds,
    ds_key,
    ds_present,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also, _stage


class AllreduceSumUnsupported(Rule):
    """## What it does
    Reports `gradient_allreduce_op: "sum"` with ZeRO stage 3, with ZenFlow
    (`zero_optimization.zenflow`) or with DeepCompile (`compile.deepcompile`).

    ## Why is this bad?
    DeepSpeed refuses the combination when it reads the config.

    ## Example
    ```json
    {"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}}
    ```

    ## Fix
    Use the default `"mean"`.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:1029-1035` @ edaa722: "gradient_allreduce_op='sum' is not
      supported with ZeRO stage 3" / "... with ZenFlow" / "... with DeepCompile".
    """

    code = "TL121"
    release_dependent = False
    name = "ds-allreduce-sum-unsupported"
    default_severity = Severity.ERROR
    summary = "gradient_allreduce_op \"sum\" with ZeRO-3, ZenFlow or DeepCompile"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        op = ds(spec, "gradient_allreduce_op")
        if (as_str(op) or "").lower() != "sum":
            return
        stage = _stage(spec)
        if stage is not None and stage[0] == 3:
            yield Finding("gradient_allreduce_op \"sum\" with ZeRO stage 3; DeepSpeed stops: \"gradient_allreduce_op='sum' "
                          "is not supported with ZeRO stage 3\"", at=op, also=_also((stage[1], "ZeRO stage 3")),
                          fix="use \"mean\"")
        # file text: DeepSpeed's check is on the zenflow section as written, whatever its value
        zenflow = spec.settings.get(ds_key(spec, "zero_optimization.zenflow"))
        if ds_present(spec, "zero_optimization.zenflow") and (zenflow is None or zenflow.value is not None):
            yield Finding("gradient_allreduce_op \"sum\" with ZenFlow; DeepSpeed stops: \"gradient_allreduce_op='sum' is "
                          "not supported with ZenFlow\"", at=op, fix="use \"mean\"")
        if as_bool(ds(spec, "compile.deepcompile")):
            yield Finding("gradient_allreduce_op \"sum\" with DeepCompile; DeepSpeed stops: \"gradient_allreduce_op='sum' "
                          "is not supported with DeepCompile\"", at=op,
                          also=_also((ds(spec, "compile.deepcompile"), "DeepCompile enabled")), fix="use \"mean\"")
