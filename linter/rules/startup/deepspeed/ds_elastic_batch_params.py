"""TL132: elasticity enabled with batch keys in the config (without ignore_non_elastic_batch_info)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    ds,
    ds_present,
    ds_target,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also


class ElasticBatchParams(Rule):
    """## What it does
    Reports elastic training (`elasticity.enabled`) with batch keys (`train_batch_size`,
    `train_micro_batch_size_per_gpu`, `gradient_accumulation_steps`) in the config, unless
    `elasticity.ignore_non_elastic_batch_info: true`.

    ## Why is this bad?
    Elasticity computes the batch itself; DeepSpeed refuses the config rather than silently
    ignore the keys.

    ## Example
    ```json
    {"train_batch_size": 256, "elasticity": {"enabled": true, "max_train_batch_size": 2048}}
    ```

    ## Fix
    Remove the batch keys, or set `elasticity.ignore_non_elastic_batch_info: true`.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:754-769` @ edaa722: "One or more batch related
      parameters were found in your ds_config ... These parameters *will not be used* since elastic
      training is enabled".
    """

    code = "TL132"
    release_dependent = False
    name = "ds-elastic-batch-params"
    default_severity = Severity.ERROR
    summary = "elasticity enabled with batch keys in the config (without ignore_non_elastic_batch_info)"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        enabled = ds(spec, "elasticity.enabled")
        if not as_bool(enabled) or as_bool(ds(spec, "elasticity.ignore_non_elastic_batch_info")):
            return
        keys = [k for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
                if ds_present(spec, k)]
        if not keys:
            return
        yield Finding(f"elastic training is enabled and the config sets {', '.join(keys)}; DeepSpeed stops: \"These "
                      "parameters *will not be used* since elastic training is enabled\"", at=ds_target(spec, keys[0]),
                      also=_also((enabled, "elasticity enabled")),
                      fix="remove the batch keys or set elasticity.ignore_non_elastic_batch_info: true")
