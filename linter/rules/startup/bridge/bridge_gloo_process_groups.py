"""TL687: Gloo process-group settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops

DISTRIBUTED_FORMATS = ("torch_dist", "fsdp_dtensor")


class GlooProcessGroups(BridgeRule):
    """## What it does
    Checks `dist.use_decentralized_pg` with Gloo process groups (`dist.use_gloo_process_groups`, on by
    default), and Gloo process groups turned off with the distributed optimizer and a checkpoint format
    other than `torch_dist` / `fsdp_dtensor` (legacy checkpoints gather the optimizer state over Gloo).

    ## Why is this bad?
    An `AssertionError` before the first step.

    ## Example
    ```yaml
    dist:
      use_gloo_process_groups: false
    optimizer:
      use_distributed_optimizer: true
    checkpoint:
      ckpt_format: torch
    ```

    ## Fix
    Keep Gloo process groups, or save `torch_dist` checkpoints; turn Gloo off with decentralized groups.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1550-1566` @ 067f987; the default from
      Megatron-LM `megatron/training/config/common_config.py:109` @ 2a75ac1 (Bridge's pin).
    """

    code = "TL687"
    name = "bridge-gloo-process-groups"
    summary = "Gloo process-group settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        known, gloo = f.known("dist.use_gloo_process_groups", True)
        if not known:
            return
        if f.get("dist.use_decentralized_pg") is True and gloo is True:
            yield Finding("`dist.use_decentralized_pg` with Gloo process groups"
                          f"{'' if f.entry('dist.use_gloo_process_groups') else ' (on by default)'}: " + stops(
                              "Gloo process groups are not supported when use_decentralized_pg=True. Decentralized "
                              "process groups only support NCCL backend."),
                          at=f.at("dist.use_gloo_process_groups", "dist.use_decentralized_pg"))
        fmt = f.get("checkpoint.ckpt_format")
        distributed = f.get("optimizer.use_distributed_optimizer") is True or f.get("ddp.use_distributed_optimizer") is True
        if gloo is False and distributed and isinstance(fmt, str) and fmt not in DISTRIBUTED_FORMATS:
            yield Finding(f"`checkpoint.ckpt_format` {fmt} with the distributed optimizer and `dist.use_gloo_process_groups: "
                          "false`: " + stops("Legacy checkpointing requires ckpt_format='torch_dist' or 'fsdp_dtensor'"),
                          at=f.at("checkpoint.ckpt_format"), also=((f.at("dist.use_gloo_process_groups"), "Gloo off"),))
