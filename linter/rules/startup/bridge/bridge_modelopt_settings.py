"""TL686: gradient accumulation fusion with a ModelOpt / quantized model, which Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops


class ModeloptSettings(BridgeRule):
    """## What it does
    Checks `model.restore_modelopt_state` (a ModelOpt / quantized model) with
    `model.gradient_accumulation_fusion`, which `ConfigContainer.validate` refuses.

    ## Why is this bad?
    An `AssertionError` before the first step.

    ## Example
    ```yaml
    model:
      restore_modelopt_state: true
      gradient_accumulation_fusion: true
    ```

    ## Fix
    Set `model.gradient_accumulation_fusion: false`.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1516-1521` @ 067f987.
    """

    code = "TL686"
    name = "bridge-modelopt-settings"
    summary = "gradient accumulation fusion with a ModelOpt / quantized model, which Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        if f.get("model.restore_modelopt_state") is True and f.get("model.gradient_accumulation_fusion") is True:
            yield Finding("`model.gradient_accumulation_fusion` with `model.restore_modelopt_state`: " + stops(
                "Gradient accumulation fusion is not supported with ModelOpt/Quantized models. Please set "
                "model.gradient_accumulation_fusion=False"), at=f.at("model.gradient_accumulation_fusion"),
                also=((f.at("model.restore_modelopt_state"), "a ModelOpt model"),))
