"""TL136: ZeRO-3 NVMe offload without nvme_path"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_str,
    ds,
    ds_key,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _stage


class NvmePathMissing(Rule):
    """## What it does
    With ZeRO stage 3, reports NVMe offload (`offload_param.device` or
    `offload_optimizer.device` `"nvme"`) without an `nvme_path`.

    ## Why is this bad?
    DeepSpeed cannot place the swap files and stops when ZeRO-3 initialises.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}
    ```

    ## Fix
    Add `"nvme_path": "/local_nvme"` to the offload section.

    ## References
    - DeepSpeed `deepspeed/runtime/zero/partition_parameters.py:1211-1216` @ edaa722: "\\"nvme_path\\"
      in DeepSpeed Config cannot be None if remote device is nvme".
    """

    code = "TL136"
    release_dependent = False
    name = "ds-nvme-path-missing"
    default_severity = Severity.ERROR
    summary = "ZeRO-3 NVMe offload without nvme_path"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        stage = _stage(spec)
        if stage is None or stage[0] != 3:
            return
        for section in ("offload_param", "offload_optimizer"):
            device = ds(spec, f"zero_optimization.{section}.device")
            if (as_str(device) or "").lower() != "nvme":
                continue
            # file text: DeepSpeed's check is on nvme_path as written (null or absent)
            path = spec.settings.get(ds_key(spec, f"zero_optimization.{section}.nvme_path"))
            if path is None or path.value is None:
                yield Finding(f"zero_optimization.{section}.device is nvme but no nvme_path is given; DeepSpeed stops: "
                              "\"\\\"nvme_path\\\" in DeepSpeed Config cannot be None if remote device is nvme\"",
                              at=device, fix="add \"nvme_path\" with a local NVMe directory")
