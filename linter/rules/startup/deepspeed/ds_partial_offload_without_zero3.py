"""TL123: offload_optimizer.ratio < 1.0 with a ZeRO stage other than 3"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_number,
    ds,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also, _stage


class PartialOffloadWithoutZero3(Rule):
    """## What it does
    Reports `zero_optimization.offload_optimizer.ratio` below 1.0 (partial optimizer offload)
    with a ZeRO stage other than 3.

    ## Why is this bad?
    DeepSpeed's ZeRO config validator refuses it.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}}
    ```

    ## Fix
    Use ZeRO stage 3 or offload the whole optimizer (ratio 1.0).

    ## References
    - DeepSpeed `deepspeed/runtime/zero/config.py:389-393` @ edaa722: "Partial offloading only
      supported for ZeRO Stage 3."
    """

    code = "TL123"
    release_dependent = False
    name = "ds-partial-offload-without-zero3"
    default_severity = Severity.ERROR
    summary = "offload_optimizer.ratio < 1.0 with a ZeRO stage other than 3"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        ratio_v = ds(spec, "zero_optimization.offload_optimizer.ratio")
        ratio = as_number(ratio_v)
        stage = _stage(spec)
        if ratio is None or ratio >= 1.0 or stage is None or stage[0] == 3:
            return
        yield Finding(f"offload_optimizer.ratio {ratio:g} (partial offload) with ZeRO stage {stage[0]}; DeepSpeed stops: "
                      "\"Partial offloading only supported for ZeRO Stage 3.\"", at=ratio_v,
                      also=_also((stage[1], "ZeRO stage")), fix="use ZeRO stage 3 or ratio 1.0")
