"""TL672: bf16 and fp16 both on, or the optimizer's precision not the model's with a precision-aware optimizer"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields


class PrecisionFlags(BridgeRule):
    """## What it does
    Checks the precision switches as `_validate_mixed_precision_consistency` does: not both `bf16` and
    `fp16` on the model, nor on the optimizer; with `optimizer.use_precision_aware_optimizer`, the
    optimizer's `bf16` / `fp16` must match the model's.

    ## Why is this bad?
    An `AssertionError` in `ConfigContainer.validate()`, before the first step.

    ## Example
    ```yaml
    model:
      bf16: true
      fp16: true
    ```

    ## Fix
    Keep one of the two, the same on the model and the optimizer.
    """

    code = "TL672"
    name = "bridge-precision-flags"
    summary = "bf16 and fp16 both on, or the optimizer's precision not the model's with a precision-aware optimizer"

    def findings(self, f: Fields) -> Iterator[Finding]:
        for section in ("model", "optimizer"):
            if f.get(f"{section}.bf16") is True and f.get(f"{section}.fp16") is True:
                yield Finding(f"`{section}.bf16` and `{section}.fp16` are both true: Bridge stops with \"... cannot have "
                              "both bf16=True and fp16=True\"", at=f.at(f"{section}.fp16"),
                              also=((f.at(f"{section}.bf16"), "bf16 here"),))
        if f.get("optimizer.use_precision_aware_optimizer") is not True:
            return
        for flag in ("bf16", "fp16"):
            if f.get(f"model.{flag}") is True and f.get(f"optimizer.{flag}") is False:
                yield Finding(f"`model.{flag}` is true with `optimizer.use_precision_aware_optimizer` but "
                              f"`optimizer.{flag}` is false: Bridge stops with \"optimizer.{flag}=True must be set when "
                              f"model.{flag}=True and use_precision_aware_optimizer=True\"", at=f.at(f"optimizer.{flag}"),
                              also=((f.at(f"model.{flag}"), "model precision"),))
