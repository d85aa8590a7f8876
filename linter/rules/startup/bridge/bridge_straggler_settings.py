"""TL681: NVRx straggler-detection settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, number, stops


class StragglerSettings(BridgeRule):
    """## What it does
    Checks the `nvrx_straggler` settings `NVRxStragglerDetectionConfig.finalize` refuses when detection
    is enabled: neither relative nor individual GPU performance computed, a `report_time_interval` not
    above 0, a performance threshold outside [0, 1].

    ## Why is this bad?
    A `ValueError` when the ConfigContainer is finalized, before the first step.

    ## Example
    ```yaml
    nvrx_straggler:
      enabled: true
      gpu_relative_perf_threshold: 70
    ```

    ## Fix
    Give thresholds as fractions (0.7) and a positive interval.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:885-896` @ 067f987.
    """

    code = "TL681"
    name = "bridge-straggler-settings"
    summary = "NVRx straggler-detection settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        if f.get("nvrx_straggler.enabled") is not True:
            return
        if f.get("nvrx_straggler.calc_relative_gpu_perf") is False and f.get("nvrx_straggler.calc_individual_gpu_perf") is False:
            yield Finding("`nvrx_straggler.calc_relative_gpu_perf` and `calc_individual_gpu_perf` are both false: " + stops(
                "At least one of calc_relative_gpu_perf or calc_individual_gpu_perf must be True when NVRx straggler "
                "detection is enabled."), at=f.at("nvrx_straggler.calc_individual_gpu_perf"))
        interval = f.get("nvrx_straggler.report_time_interval")
        if number(interval) and interval <= 0:
            yield Finding(f"`nvrx_straggler.report_time_interval` is {interval}: {stops('report_time_interval must be positive.')}",
                          at=f.at("nvrx_straggler.report_time_interval"))
        for name in ("gpu_relative_perf_threshold", "gpu_individual_perf_threshold"):
            value = f.get(f"nvrx_straggler.{name}")
            if number(value) and not 0.0 <= value <= 1.0:
                yield Finding(f"`nvrx_straggler.{name}` is {value}: {stops(f'{name} must be between 0.0 and 1.0.')}",
                              at=f.at(f"nvrx_straggler.{name}"))
