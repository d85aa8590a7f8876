"""TL691: a memory-efficient fully reshardable optimizer checkpoint, which Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops


class ReshardableOptimizer(BridgeRule):
    """## What it does
    Checks `checkpoint.distrib_optim_fully_reshardable_mem_efficient` with
    `checkpoint.dist_ckpt_optim_fully_reshardable`, which `CheckpointConfig.finalize` refuses.

    ## Why is this bad?
    An `AssertionError` when the ConfigContainer is finalized, before the first step: Bridge asserts the
    memory-efficient variant is off whenever the optimizer checkpoint is fully reshardable (its message
    names Gloo process groups, which that variant needs).

    ## Example
    ```yaml
    checkpoint:
      dist_ckpt_optim_fully_reshardable: true
      distrib_optim_fully_reshardable_mem_efficient: true
    ```

    ## Fix
    Set `checkpoint.distrib_optim_fully_reshardable_mem_efficient: false`.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:625-628` @ 067f987 (`CheckpointConfig.finalize`).
    """

    code = "TL691"
    name = "bridge-reshardable-optimizer"
    summary = "a memory-efficient fully reshardable optimizer checkpoint, which Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        if f.get("checkpoint.dist_ckpt_optim_fully_reshardable") is True and \
                f.get("checkpoint.distrib_optim_fully_reshardable_mem_efficient") is True:
            yield Finding("`checkpoint.distrib_optim_fully_reshardable_mem_efficient` with "
                          "`checkpoint.dist_ckpt_optim_fully_reshardable`: "
                          + stops("distrib_optim_fully_reshardable_mem_efficient requires use_gloo_process_groups"),
                          at=f.at("checkpoint.distrib_optim_fully_reshardable_mem_efficient"),
                          also=((f.at("checkpoint.dist_ckpt_optim_fully_reshardable"), "fully reshardable"),))
