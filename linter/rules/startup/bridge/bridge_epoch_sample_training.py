"""TL678: batch ramp-up, global batch and data loader settings Megatron-Bridge refuses with epoch- or sample-based training"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, number, stops


class EpochSampleTraining(BridgeRule):
    """## What it does
    Checks what `TrainingConfig.finalize` and `ConfigContainer.validate` refuse when the run length is
    given in epochs (`train.num_epochs`) or samples (`train.train_samples`): a number of epochs not above
    0, a batch-size ramp-up (`train.rampup_batch_size`), a global batch left unset
    (`train.global_batch_size: null`), epochs with a `dataset.dataloader_type` other than `batch`, and
    `scheduler.max_steps` (iteration-based only) with samples.

    ## Why is this bad?
    An `AssertionError` / `ValueError` before the first step.

    ## Example
    ```yaml
    train:
      train_samples: 1000000
      rampup_batch_size: [32, 32, 100000]
    ```

    ## Fix
    Give the length in iterations to ramp the batch up, or drop the ramp-up; set the global batch; use
    `dataset.dataloader_type: batch` with epochs.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:483-491` @ 067f987 (`TrainingConfig.finalize`),
      `config.py:1266-1267` (`ConfigContainer.validate`), `config.py:1705` (`_validate_training_scheduler_compatibility`).
    """

    code = "TL678"
    name = "bridge-epoch-sample-training"
    summary = "batch ramp-up, global batch and data loader settings Bridge refuses with epoch- or sample-based training"

    def findings(self, f: Fields) -> Iterator[Finding]:
        epochs = f.get("train.num_epochs")
        if number(epochs) and epochs <= 0:
            yield Finding(f"`train.num_epochs` is {epochs}: {stops('num_epochs must be a positive number')}",
                          at=f.at("train.num_epochs"))
        if f.get("train.train_samples") is not None and f.get("scheduler.max_steps") is not None:
            yield Finding("`scheduler.max_steps` with sample-based training (`train.train_samples`): " + stops(
                "scheduler.max_steps is only supported for iteration-based training; use sample-based scheduler fields "
                "with train_samples"), at=f.at("scheduler.max_steps"), also=((f.at("train.train_samples"), "sample-based"),))
        for length, kind, says in (("train.num_epochs", "epoch-based", "Batch size rampup not supported with epoch-based training"),
                                   ("train.train_samples", "sample-based",
                                    "Batch size rampup not supported with sample-based training yet")):
            if f.get(length) is None:
                continue
            if f.get("train.rampup_batch_size") is not None:
                yield Finding(f"`train.rampup_batch_size` with {kind} training (`{length}`): {stops(says)}",
                              at=f.at("train.rampup_batch_size"), also=((f.at(length), "the run length"),))
            if f.entry("train.global_batch_size") is not None and f.get("train.global_batch_size") is None:
                what = "num_epochs" if kind == "epoch-based" else "train_samples"
                yield Finding(f"`train.global_batch_size` is null with `{length}`: "
                              f"{stops(f'global_batch_size must be set when using {what}')}",
                              at=f.at("train.global_batch_size"))
            break  # one length (TL670 reports several)
        loader = f.get("dataset.dataloader_type")
        if f.get("train.num_epochs") is not None and isinstance(loader, str) and loader != "batch":
            yield Finding(f"`train.num_epochs` with `dataset.dataloader_type` {loader}: "
                          f"{stops('num_epochs is currently supported only with dataloader_type=' + chr(34) + 'batch' + chr(34))}",
                          at=f.at("dataset.dataloader_type"))
