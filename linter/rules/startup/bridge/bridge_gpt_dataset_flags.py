"""TL690: a GPT dataset's reset / mask flags set to null, which Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops

FLAGS = ("reset_position_ids", "reset_attention_mask", "eod_mask_loss")
"""Megatron-Core ``GPTDatasetConfig`` fields (``Optional[bool] = None``) that Bridge's
``GPTDatasetConfig.finalize`` asserts are defined; only GPT dataset configs (and their FIM and mock
subclasses) have them."""


class GptDatasetFlags(BridgeRule):
    """## What it does
    Checks that `dataset.reset_position_ids`, `dataset.reset_attention_mask` and `dataset.eod_mask_loss`
    are not written as `null`: `GPTDatasetConfig.finalize` asserts each is defined.

    ## Why is this bad?
    An `AssertionError` when the ConfigContainer is finalized, before the first step. The three flags are
    `None` by default in Megatron-Core's `GPTDatasetConfig`; Bridge's recipes set them, and an override or
    an edited dump that writes `null` undoes that.

    ## Example
    ```yaml
    dataset:
      seq_length: 4096
      reset_position_ids: null
    ```

    ## Fix
    Write `true` or `false` (the recipes write `false` for all three).

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:323-325` @ 067f987 (`GPTDatasetConfig.finalize`).
    """

    code = "TL690"
    name = "bridge-gpt-dataset-flags"
    summary = "a GPT dataset's reset / mask flags set to null, which Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        for flag in FLAGS:
            entry = f.entry(f"dataset.{flag}")
            if entry is not None and entry.value is None:  # written null (an unwritten one: the recipe's)
                yield Finding(f"`dataset.{flag}` is null: " + stops(f"{flag} must be defined."), at=entry)
