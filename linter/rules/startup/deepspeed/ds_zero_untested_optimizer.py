"""TL129: ZeRO with an optimizer it has not been tested with, without zero_allow_untested_optimizer"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    ds,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DEEPSPEED_OPTIMIZERS, DS, ONEBIT, TORCH_OPTIMIZERS, _also, _optimizer, _stage


# What the names above build, and whether ZeRO has tested it (deepspeed/runtime/zero/utils.py:45-62,
# ZERO_SUPPORTED_OPTIMIZERS: torch Adam/AdamW/Adagrad, FusedAdam, DeepSpeedCPUAdam, DeepSpeedCPUAdagrad,
# FusedLion/DeepSpeedCPULion, MuonWithAuxAdam).
ZERO_TESTED = ("adam", "adamw", "adagrad", "lion", "muon")


class ZeroUntestedOptimizer(Rule):
    """## What it does
    Reports ZeRO (stage >= 1) with a config optimizer ZeRO has not been tested with (LAMB,
    MuAdam/MuAdamW/MuSGD, torch.optim classes other than Adam/AdamW/Adagrad) unless
    `zero_allow_untested_optimizer: true`.

    ## Why is this bad?
    DeepSpeed stops when it wraps the optimizer.

    ## Example
    ```json
    {"optimizer": {"type": "SGD"}, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Use Adam/AdamW/Adagrad/Lion, or add `"zero_allow_untested_optimizer": true`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1986-1990` @ edaa722: "You are using an untested ZeRO
      Optimizer. Please add <\\"zero_allow_untested_optimizer\\": true> in the configuration file to
      use it."; tested classes in `deepspeed/runtime/zero/utils.py:45-62`.
    """

    code = "TL129"
    release_dependent = False
    name = "ds-zero-untested-optimizer"
    default_severity = Severity.ERROR
    summary = "ZeRO with an optimizer it has not been tested with, without zero_allow_untested_optimizer"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        found, stage = _optimizer(spec), _stage(spec)
        if found is None or stage is None or stage[0] == 0:
            return
        name, value = found
        if name in ZERO_TESTED or name in ONEBIT or as_bool(ds(spec, "zero_allow_untested_optimizer")):
            return
        if name not in DEEPSPEED_OPTIMIZERS and name not in TORCH_OPTIMIZERS:
            return  # TL125
        yield Finding(f"ZeRO stage {stage[0]} with optimizer `{name}`, which ZeRO has not been tested with; DeepSpeed "
                      "stops: \"You are using an untested ZeRO Optimizer. Please add <\\\"zero_allow_untested_optimizer\\\": "
                      "true> in the configuration file to use it.\"", at=value, also=_also((stage[1], "ZeRO stage")),
                      fix="add \"zero_allow_untested_optimizer\": true, or use adam/adamw")
