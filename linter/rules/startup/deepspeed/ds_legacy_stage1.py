"""TL115: zero_optimization.legacy_stage1 with ZeRO, removed in DeepSpeed 0.5.9"""

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


class LegacyStage1(ReleaseBoundRule):
    """## What it does
    Reports `zero_optimization.legacy_stage1: true` with ZeRO enabled.

    ## Why is this bad?
    The legacy ZeRO stage 1 was removed in DeepSpeed 0.5.9; building the ZeRO optimizer raises
    "The deprecated version of ZeRO Stage 1 is not supported in deepspeed >= 0.5.9".

    ## Example
    ```json
    {"zero_optimization": {"stage": 1, "legacy_stage1": true}}
    ```

    ## Fix
    Remove `legacy_stage1`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2377-2380` @ edaa722: "The deprecated version of ZeRO Stage 1 is not
      supported in deepspeed >= 0.5.9".
    """

    code = "TL115"
    name = "ds-legacy-stage1"
    default_severity = Severity.ERROR
    summary = "zero_optimization.legacy_stage1 with ZeRO, removed in DeepSpeed 0.5.9"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        legacy = ds(spec, "zero_optimization.legacy_stage1")
        stage = as_int(zero_stage(spec))
        if as_bool(legacy) is True and stage is not None and stage > 0:
            yield Finding("zero_optimization.legacy_stage1 with ZeRO stage "
                          f"{stage}: DeepSpeed stops with \"The deprecated version of ZeRO Stage 1 is not supported in "
                          "deepspeed >= 0.5.9\"", at=legacy, fix="remove legacy_stage1")
