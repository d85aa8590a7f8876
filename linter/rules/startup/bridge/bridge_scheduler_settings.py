"""TL677: scheduler weight-decay and checkpoint-scheduler settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, number, stops


class SchedulerSettings(BridgeRule):
    """## What it does
    Checks the `scheduler` settings `SchedulerConfig.finalize` refuses besides the run length (TL670): a
    negative `start_weight_decay`, an `end_weight_decay` below `start_weight_decay`, and
    `override_opt_param_scheduler` with `use_checkpoint_opt_param_scheduler`.

    ## Why is this bad?
    An `AssertionError` when the ConfigContainer is finalized, before the first step.

    ## Example
    ```yaml
    scheduler:
      start_weight_decay: 0.1
      end_weight_decay: 0.01
    ```

    ## Fix
    Make the weight decay end at or above where it starts (or leave `start_weight_decay` out), and keep
    one of the two scheduler-checkpoint switches.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:411-416` @ 067f987 (`SchedulerConfig.finalize`).
    """

    code = "TL677"
    name = "bridge-scheduler-settings"
    summary = "scheduler weight-decay and checkpoint-scheduler settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        start, end = f.get("scheduler.start_weight_decay"), f.get("scheduler.end_weight_decay")
        if number(start):
            if start < 0:
                yield Finding(f"`scheduler.start_weight_decay` is {start}: {stops('start_weight_decay should be positive.')}",
                              at=f.at("scheduler.start_weight_decay"))
            elif number(end) and end < start:
                yield Finding(f"`scheduler.end_weight_decay` {end} is below `scheduler.start_weight_decay` {start}: Bridge "
                              "stops (`assert self.end_weight_decay >= self.start_weight_decay`)",
                              at=f.at("scheduler.end_weight_decay"), also=((f.at("scheduler.start_weight_decay"), "starts here"),))
        if f.get("scheduler.override_opt_param_scheduler") is True and \
                f.get("scheduler.use_checkpoint_opt_param_scheduler") is True:
            yield Finding("`scheduler.override_opt_param_scheduler` and `scheduler.use_checkpoint_opt_param_scheduler` are "
                          f"both true: {stops('both override and use-checkpoint are set.')}",
                          at=f.at("scheduler.use_checkpoint_opt_param_scheduler"))
