"""TL674: Megatron-FSDP / torch FSDP2 settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields


class FsdpSettings(BridgeRule):
    """## What it does
    Checks the data-parallel sharding settings `ConfigContainer.validate` refuses: `dist.use_megatron_fsdp`
    with `dist.use_torch_fsdp2`; Megatron-FSDP with `ddp.fsdp_manual_registration` but no `ddp.nccl_ub`,
    with `dist.use_tp_pp_dp_mapping`, or with the `optim_grads_params` strategy and
    `train.check_weight_hash_across_dp_replicas_interval`.

    ## Why is this bad?
    An `AssertionError` / `ValueError` before the first step.

    ## Example
    ```yaml
    dist:
      use_megatron_fsdp: true
      use_torch_fsdp2: true
    ```

    ## Fix
    Keep one FSDP implementation and drop the settings it does not support.
    """

    code = "TL674"
    name = "bridge-fsdp-settings"
    summary = "Megatron-FSDP / torch FSDP2 settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        mfsdp = f.get("dist.use_megatron_fsdp") is True or f.get("ddp.use_megatron_fsdp") is True
        if f.get("dist.use_megatron_fsdp") is True and f.get("dist.use_torch_fsdp2") is True:
            yield Finding("`dist.use_megatron_fsdp` and `dist.use_torch_fsdp2` are both true: Bridge stops with "
                          "\"use_megatron_fsdp and use_torch_fsdp2 are mutually exclusive\"", at=f.at("dist.use_torch_fsdp2"))
        if not mfsdp:
            return
        if f.get("ddp.fsdp_manual_registration") is True and f.get("ddp.nccl_ub") is not True:
            yield Finding("`ddp.fsdp_manual_registration` without `ddp.nccl_ub`: Bridge stops with "
                          "\"DDP.fsdp_manual_registration requires DDP.nccl_ub!\"", at=f.at("ddp.fsdp_manual_registration"))
        if f.get("dist.use_tp_pp_dp_mapping") is True:
            yield Finding("`dist.use_tp_pp_dp_mapping` with Megatron-FSDP: \"use_tp_pp_dp_mapping is not supported with "
                          "Megatron FSDP\"", at=f.at("dist.use_tp_pp_dp_mapping"))
        if f.get("ddp.data_parallel_sharding_strategy") == "optim_grads_params" and \
                f.get("train.check_weight_hash_across_dp_replicas_interval") is not None:
            yield Finding("`train.check_weight_hash_across_dp_replicas_interval` with the `optim_grads_params` sharding "
                          "strategy is refused by Bridge", at=f.at("train.check_weight_hash_across_dp_replicas_interval"))
