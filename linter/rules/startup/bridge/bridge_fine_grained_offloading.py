"""TL688: fine-grained activation offloading without Transformer Engine, which Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops


class FineGrainedOffloading(BridgeRule):
    """## What it does
    Checks `model.fine_grained_activation_offloading` with a `model.transformer_impl` other than
    `transformer_engine` (`_validate_fine_grained_activation_offloading`). Its other check
    (`NVTE_CPU_OFFLOAD_V1=1` with Transformer Engine >= 2.10) depends on the installed Transformer Engine.

    ## Why is this bad?
    A `ValueError` before the first step.

    ## Example
    ```yaml
    model:
      fine_grained_activation_offloading: true
      transformer_impl: local
    ```

    ## Fix
    Use `transformer_impl: transformer_engine`, or turn the offloading off.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:2198-2207` @ 067f987.
    """

    code = "TL688"
    name = "bridge-fine-grained-offloading"
    summary = "fine-grained activation offloading without Transformer Engine, which Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        impl = f.get("model.transformer_impl")
        if f.get("model.fine_grained_activation_offloading") is True and isinstance(impl, str) and impl != "transformer_engine":
            yield Finding(f"`model.fine_grained_activation_offloading` with `model.transformer_impl` {impl}: " + stops(
                "Fine-grained activation offloading is only supported with transformer_engine implementation. Current "
                f"transformer_impl: {impl}"), at=f.at("model.transformer_impl"),
                also=((f.at("model.fine_grained_activation_offloading"), "offloading on"),))
