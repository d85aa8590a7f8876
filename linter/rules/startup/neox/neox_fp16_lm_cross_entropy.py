"""TL189: fp16_lm_cross_entropy with a precision other than fp16"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule


class Fp16LmCrossEntropy(_NeoXRule):
    """## What it does
    Checks that `fp16_lm_cross_entropy` is only used with fp16 precision.

    ## Why is this bad?
    NeoX's `validate_values` raises for bf16 or fp32 runs.

    ## Example
    ```yaml
    precision: bfloat16
    fp16_lm_cross_entropy: true
    ```

    ## Fix
    Remove `fp16_lm_cross_entropy` (or train in fp16).

    ## References
    * `megatron/neox_arguments/arguments.py:1314-1322@ea7aefd`: `if self.fp16_lm_cross_entropy and
      self.precision != "fp16"`, "lm cross entropy in fp16 only support in fp16 mode."
    """

    code = "TL189"
    name = "neox-fp16-lm-cross-entropy"
    summary = "fp16_lm_cross_entropy with a precision other than fp16"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.get("fp16_lm_cross_entropy") is not True:
            return
        dtype = a.spec.get("precision.dtype")
        if dtype is None or dtype.value == "fp16":
            return
        from trainlint.core.provenance import Origin

        if dtype.provenance.origin is Origin.DEFAULT and not a.whole_run():
            return
        name = {"bf16": "bfloat16"}.get(dtype.value, dtype.value)
        yield Finding(f"fp16_lm_cross_entropy with precision {name}: NeoX stops with \"lm cross entropy in fp16 only "
                      "support in fp16 mode.\"", at=a.at("fp16_lm_cross_entropy"), also=((dtype, "precision"),))
