"""TL122: fp16/bf16 master-weights or bf16 optimizer-state options without ZeRO 1-3"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    ds,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also, _stage


class MasterWeightsWithoutZero(Rule):
    """## What it does
    Reports `fp16.fp16_master_weights_and_grads`, `bf16.bf16_master_weights_and_grads` or
    `bf16.bf16_optimizer_states` without ZeRO stage 1-3, and `bf16_optimizer_states` without
    `bf16_master_weights_and_grads`.

    ## Why is this bad?
    These options belong to the ZeRO optimizers; DeepSpeed refuses them otherwise.

    ## Example
    ```json
    {"bf16": {"enabled": true, "bf16_master_weights_and_grads": true}}
    ```

    ## Fix
    Enable ZeRO (stage 1 to 3) or drop the option.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:1037-1049` @ edaa722: "Fp16_master_weights_and_grads is
      only supported with ZeRO Stage 1, 2, or 3.", "Bf16_master_weights_and_grads is only supported
      with ZeRO Stage 1, 2, or 3.", "bf16_optimizer_states is only supported with ZeRO Stage 1, 2,
      or 3.", "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled."
    """

    code = "TL122"
    release_dependent = False
    name = "ds-master-weights-without-zero"
    default_severity = Severity.ERROR
    summary = "fp16/bf16 master-weights or bf16 optimizer-state options without ZeRO 1-3"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        stage = _stage(spec)
        if stage is None:
            return
        s, stage_v = stage
        for key, quote in (("fp16.fp16_master_weights_and_grads", "Fp16_master_weights_and_grads"),
                           ("bf16.bf16_master_weights_and_grads", "Bf16_master_weights_and_grads"),
                           ("bf16.bf16_optimizer_states", "bf16_optimizer_states")):
            value = ds(spec, key)
            if as_bool(value) and s == 0:
                yield Finding(f"{key} needs ZeRO stage 1, 2 or 3 (ZeRO stage is 0); DeepSpeed stops: \"{quote} is only "
                              "supported with ZeRO Stage 1, 2, or 3.\"", at=value, also=_also((stage_v, "ZeRO stage")),
                              fix="enable ZeRO stage 1-3 or remove the option")
        states = ds(spec, "bf16.bf16_optimizer_states")
        if as_bool(states) and s > 0 and not as_bool(ds(spec, "bf16.bf16_master_weights_and_grads")):
            yield Finding("bf16.bf16_optimizer_states without bf16.bf16_master_weights_and_grads; DeepSpeed stops: "
                          "\"bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.\"", at=states,
                          fix="add \"bf16_master_weights_and_grads\": true")
