"""TL684: mixed-precision recipes and settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops

RECIPES = frozenset({
    "bf16_mixed", "fp16_mixed", "bf16_with_fp8_delayed_scaling_mixed", "fp16_with_fp8_delayed_scaling_mixed",
    "bf16_with_mxfp8_mixed", "fp16_with_mxfp8_mixed", "bf16_with_fp8_current_scaling_mixed",
    "nemotron_h_bf16_with_fp8_current_scaling_mixed", "nanov2_bf16_with_fp8_current_scaling_mixed",
    "fp16_with_fp8_current_scaling_mixed", "bf16_with_fp8_subchannel_scaling_mixed",
    "fp16_with_fp8_subchannel_scaling_mixed", "bf16_with_nvfp4_mixed", "nemotron_3_super_bf16_with_nvfp4_mixed",
})
"""The ``@register``-ed recipes of ``src/megatron/bridge/training/mixed_precision.py`` @ 067f987 (a name is
looked up with ``-`` read as ``_``)."""


class MixedPrecision(BridgeRule):
    """## What it does
    Checks `mixed_precision`: a recipe name Bridge does not have (`get_mixed_precision_config`), FP4
    and FP8 both set (`MixedPrecisionConfig.finalize`), and, without Megatron-FSDP, MXFP8 parameter
    all-gather (`fp8_param_gather` with `fp8_recipe: mxfp8`) without
    `reuse_grad_buf_for_mxfp8_param_ag` (`ConfigContainer.validate`).

    ## Why is this bad?
    A `ValueError` / `AssertionError` before the first step.

    ## Example
    ```yaml
    mixed_precision: bf16-mixed-fp8
    ```

    ## Fix
    Name a registered recipe (`bf16_with_fp8_current_scaling_mixed` ...); keep one of FP4 / FP8; set
    `reuse_grad_buf_for_mxfp8_param_ag: true` with MXFP8 parameter gather.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/mixed_precision.py:107-108, 441-448` @ 067f987;
      `src/megatron/bridge/training/config.py:1487-1498`.
    """

    code = "TL684"
    name = "bridge-mixed-precision"
    summary = "mixed-precision recipes and settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        recipe = f.get("mixed_precision")
        if isinstance(recipe, str) and recipe.replace("-", "_") not in RECIPES:
            valid = ", ".join(sorted(RECIPES))
            yield Finding(f"`mixed_precision` names no Bridge recipe: "
                          f"{stops(f'Unknown mixed-precision recipe {recipe!r}. Available recipes: {valid}.')}",
                          at=f.at("mixed_precision"))
        if f.get("mixed_precision.fp4") and f.get("mixed_precision.fp8"):
            yield Finding("`mixed_precision.fp4` and `mixed_precision.fp8` are both set: "
                          + stops("fp4 and fp8 cannot be used simultaneously. Please choose one."),
                          at=f.at("mixed_precision.fp4"))
        fsdp = f.get("dist.use_megatron_fsdp") is True or f.get("ddp.use_megatron_fsdp") is True
        known, reuse = f.known("mixed_precision.reuse_grad_buf_for_mxfp8_param_ag", False)
        if not fsdp and f.get("mixed_precision.fp8_param_gather") is True and \
                f.get("mixed_precision.fp8_recipe") == "mxfp8" and known and reuse is not True:
            yield Finding("MXFP8 parameter all-gather (`mixed_precision.fp8_param_gather` with `fp8_recipe: mxfp8`) without "
                          "`mixed_precision.reuse_grad_buf_for_mxfp8_param_ag`: " + stops(
                              "When fp8_param_gather=True and fp8_recipe='mxfp8', reuse_grad_buf_for_mxfp8_param_ag must "
                              "be set to True"), at=f.at("mixed_precision.reuse_grad_buf_for_mxfp8_param_ag",
                                                         "mixed_precision.fp8_param_gather"))
