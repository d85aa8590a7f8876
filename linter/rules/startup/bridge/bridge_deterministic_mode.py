"""TL682: deterministic-mode settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops

ALL_REDUCE_CHOICES = ("Tree", "Ring", "CollnetDirect", "CollnetChain", "^NVLS")


class DeterministicMode(BridgeRule):
    """## What it does
    Checks what `ConfigContainer._validate_and_apply_deterministic_mode` refuses with
    `model.deterministic_mode`: the fused cross-entropy loss (`model.cross_entropy_loss_fusion`), and an
    `NCCL_ALGO` the ConfigContainer's `env_vars` set to something other than Tree, Ring, CollnetDirect,
    CollnetChain or ^NVLS. (An `NCCL_ALGO` the job's environment sets is not known statically.)

    ## Why is this bad?
    An `AssertionError` before the first step.

    ## Example
    ```yaml
    model:
      deterministic_mode: true
      cross_entropy_loss_fusion: true
    ```

    ## Fix
    Turn the fusion off in deterministic runs and set `NCCL_ALGO` to one of the allowed algorithms.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1050-1061` @ 067f987.
    """

    code = "TL682"
    name = "bridge-deterministic-mode"
    summary = "deterministic-mode settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        if f.get("model.deterministic_mode") is not True:
            return
        if f.get("model.cross_entropy_loss_fusion") is True:
            yield Finding("`model.cross_entropy_loss_fusion` with `model.deterministic_mode`: "
                          + stops("Cross Entropy Fusion is currently not deterministic."),
                          at=f.at("model.cross_entropy_loss_fusion"), also=((f.at("model.deterministic_mode"), "deterministic"),))
        algo = f.env("NCCL_ALGO")
        if algo is not None and str(algo.value) not in ALL_REDUCE_CHOICES:
            yield Finding(f"`env_vars.NCCL_ALGO` is {algo.value} in deterministic mode: "
                          + stops(f"NCCL_ALGO must be one of {ALL_REDUCE_CHOICES}."), at=algo)
