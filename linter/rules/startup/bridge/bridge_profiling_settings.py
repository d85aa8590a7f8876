"""TL679: profiling settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, positive_int, stops


class ProfilingSettings(BridgeRule):
    """## What it does
    Checks the `profiling` settings `ProfilingConfig.finalize` refuses: the PyTorch and the Nsight
    profiler both on, a negative `profile_step_start` / `profile_step_end`, and an end step before the
    start step (defaults: steps 10 to 12).

    ## Why is this bad?
    An `AssertionError` when the ConfigContainer is finalized, before the first step.

    ## Example
    ```yaml
    profiling:
      use_nsys_profiler: true
      profile_step_start: 20
      profile_step_end: 10
    ```

    ## Fix
    Keep one profiler and give an end step at or after the start step.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:757-764` @ 067f987 (`ProfilingConfig.finalize`);
      defaults from Megatron-LM `megatron/training/config/common_config.py` @ 2a75ac1 (Bridge's pin).
    """

    code = "TL679"
    name = "bridge-profiling-settings"
    summary = "profiling settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        if f.get("profiling.use_pytorch_profiler") is True and f.get("profiling.use_nsys_profiler") is True:
            yield Finding("`profiling.use_pytorch_profiler` and `profiling.use_nsys_profiler` are both true: " + stops(
                "Exactly one of pytorch or nsys profiler should be enabled, not both, when ProfilingConfig is active."),
                at=f.at("profiling.use_nsys_profiler"))
        known_start, start = f.known("profiling.profile_step_start", 10)
        known_end, end = f.known("profiling.profile_step_end", 12)
        for name, value in (("profile_step_start", start), ("profile_step_end", end)):
            if positive_int(value) and value < 0:
                yield Finding(f"`profiling.{name}` is {value}: {stops(f'{name} must be >= 0, got {value}')}",
                              at=f.at(f"profiling.{name}"))
        if known_start and known_end and positive_int(start) and positive_int(end) and 0 <= end < start and \
                (f.entry("profiling.profile_step_start") is not None or f.entry("profiling.profile_step_end") is not None):
            yield Finding(f"`profiling.profile_step_end` {end} is before `profiling.profile_step_start` {start}: "
                          + stops(f"profile_step_end ({end}) must be >= profile_step_start ({start})"),
                          at=f.at("profiling.profile_step_end", "profiling.profile_step_start"))
