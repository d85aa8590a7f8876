"""TL120: DeepSpeed config with neither train_batch_size nor train_micro_batch_size_per_gpu"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    ds,
    ds_has_auto,
    ds_present,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS


class BatchSizeMissing(Rule):
    """## What it does
    Reports a DeepSpeed config that gives neither `train_batch_size` nor
    `train_micro_batch_size_per_gpu` (`gradient_accumulation_steps` alone is not enough).
    Configs that leave values to the Hugging Face Trainer / Accelerate (`"auto"`) are skipped:
    the launcher fills the batch in.

    ## Why is this bad?
    DeepSpeed cannot derive the batch and stops at start-up.

    ## Example
    ```json
    {"gradient_accumulation_steps": 4, "zero_optimization": {"stage": 1}}
    ```

    ## Fix
    Give `train_micro_batch_size_per_gpu` (and `gradient_accumulation_steps`), or `train_batch_size`.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:983-985` @ edaa722: "Either train_batch_size or
      train_micro_batch_size_per_gpu needs to be provided".
    """

    code = "TL120"
    release_dependent = False
    name = "ds-batch-size-missing"
    default_severity = Severity.ERROR
    summary = "DeepSpeed config with neither train_batch_size nor train_micro_batch_size_per_gpu"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if ds_has_auto(spec) or ds_present(spec, "train_batch_size") or ds_present(spec, "train_micro_batch_size_per_gpu"):
            return
        if ds_present(spec, "elasticity") and as_bool(ds(spec, "elasticity.enabled")):
            return  # elastic training computes the batch
        gas = ds(spec, "gradient_accumulation_steps")
        if gas is None:
            # No batch setting at all: the file is likely a template the program that loads it fills
            # (the Hugging Face Trainer of 2021 refused batch keys in it and set them from
            # --per_device_train_batch_size; DeepSpeed's autotuner writes them): said, not an error.
            yield Finding("neither train_batch_size nor train_micro_batch_size_per_gpu is given: DeepSpeed stops "
                          "(\"Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided\") unless "
                          "the program that loads this config fills the batch in (the Hugging Face Trainer, the "
                          "autotuner); write \"auto\" to say that it does", severity=Severity.WARNING,
                          fix="add \"train_micro_batch_size_per_gpu\" (a number, or \"auto\" when a launcher fills it)")
            return
        yield Finding("neither train_batch_size nor train_micro_batch_size_per_gpu is given; DeepSpeed stops: \"Either "
                      "train_batch_size or train_micro_batch_size_per_gpu needs to be provided\"",
                      at=gas, fix="add \"train_micro_batch_size_per_gpu\"")
