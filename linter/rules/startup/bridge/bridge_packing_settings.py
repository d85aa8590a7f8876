"""TL676: sequence-packing settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.adapters.bridge.names import SETTING_PREFIX
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, positive_int


class PackingSettings(BridgeRule):
    """## What it does
    Checks the sequence-packing settings `ConfigContainer.validate` refuses: offline and in-batch packing
    together; `offline_packing_specs` without `enable_offline_packing` (or the reverse); offline packing
    with a micro batch above 1; in-batch packing with a micro batch of 1.

    ## Why is this bad?
    A `ValueError` before the first step.

    ## Example
    ```yaml
    dataset:
      enable_in_batch_packing: true
    train:
      micro_batch_size: 1
    ```

    ## Fix
    Use one packing mode, with the micro batch it needs.
    """

    code = "TL676"
    name = "bridge-packing-settings"
    summary = "sequence-packing settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        offline = f.get("dataset.enable_offline_packing") is True
        inbatch = f.get("dataset.enable_in_batch_packing") is True
        specs_given = any(k.startswith(SETTING_PREFIX + "dataset.offline_packing_specs.") for k in f.spec.settings)
        micro = f.get("train.micro_batch_size")
        if offline and inbatch:
            yield Finding("`dataset.enable_offline_packing` and `dataset.enable_in_batch_packing` are mutually exclusive",
                          at=f.at("dataset.enable_in_batch_packing"))
        if offline and not specs_given and f.entry("dataset.offline_packing_specs") is not None:
            yield Finding("`dataset.enable_offline_packing` without `dataset.offline_packing_specs`",
                          at=f.at("dataset.enable_offline_packing"))
        if specs_given and not offline:
            yield Finding("`dataset.offline_packing_specs` without `dataset.enable_offline_packing: true`",
                          at=f.at("dataset.enable_offline_packing", "dataset.offline_packing_specs.packed_sequence_size"))
        if offline and positive_int(micro) and micro > 1:
            yield Finding(f"offline sequence packing with `train.micro_batch_size` {micro}: Bridge stops with \"Micro batch "
                          "size should be 1 when training with packed sequence\"", at=f.at("train.micro_batch_size"))
        if inbatch and micro == 1:
            yield Finding("in-batch packing with `train.micro_batch_size` 1: Bridge stops with \"micro_batch_size should "
                          "be greater than 1 when using enable_in_batch_packing=True\"", at=f.at("train.micro_batch_size"))
