"""TL642: FP8 / FP4 options against the features Megatron-Core's ``TransformerConfig`` refuses
them with (from the launch-check audit): single grouped MoE weights with a recipe other than
MXFP8 / NVFP4, FP4 grouped weights without FP4 parameter gathering, and the releases' own refusals
(grouped GEMM MoE in FP8, MXFP8 with FP8 parameters, FP8 with flash decoding)."""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references

_SINGLE: Cond = ("moe_single_grouped_weight", "on")
_RECIPES = ("moe_single_grouped_weight is currently supported with high-precision primary weights, "
            "fp8_recipe='mxfp8', or fp4_recipe='nvfp4'.")
_ONLY_MXFP8 = "moe_single_grouped_weight is currently supported only with fp8 mode and fp8_recipe='mxfp8'."


class LowPrecisionArguments(CheckTable):
    """## What it does
    Checks FP8 and FP4 options against what Megatron-Core builds with them: single grouped MoE
    weights (`--moe-single-grouped-weight`) only in high precision, with the MXFP8 recipe or with
    NVFP4 (core_v0.18.0: only with MXFP8), and with FP4 only together with `--fp4-param-gather`
    (upstream); and in older releases MoE grouped GEMM without FP8 (core_v0.9.0), MXFP8 without
    `--fp8-param-gather` (core_v0.12.0), FP8 without flash decoding (core_v0.10.0, core_v0.11.0).

    ## Why is this bad?
    `TransformerConfig.__post_init__` raises while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 64 --moe-grouped-gemm --moe-single-grouped-weight \\
        --fp8-format hybrid --fp8-recipe delayed
    ```

    ## Fix
    Use the recipe the message names (`--fp8-recipe mxfp8`), or drop the grouped weight.
    """

    code = "TL642"
    name = "megatron-core-low-precision-arguments"
    summary = "an FP8 or FP4 recipe with a feature Megatron-Core's TransformerConfig refuses with it"
    checks = (
        _C(TCFG, 1726, "core_v0.19.0", _SINGLE, ("fp8", "set"), ("fp8_recipe", "!=", "mxfp8"), says=_RECIPES),
        _C(TCFG, 1726, "core_v0.19.0", _SINGLE, ("fp4", "set"), ("fp4_recipe", "!=", "nvfp4"), says=_RECIPES),
        _C(TCFG, 1731, "main", _SINGLE, ("fp4", "set"), ("fp4_param_gather", "off"),
           says="moe_single_grouped_weight with FP4 compute requires fp4_param=True (--fp4-param-gather)."),
        _C(TCFG, 1433, "core_v0.18.0", _SINGLE, ("fp4", "set"), says=_ONLY_MXFP8, last="core_v0.18.0"),
        _C(TCFG, 1433, "core_v0.18.0", _SINGLE, ("fp8", "unset"), says=_ONLY_MXFP8, last="core_v0.18.0"),
        _C(TCFG, 1433, "core_v0.18.0", _SINGLE, ("fp8_recipe", "!=", "mxfp8"), says=_ONLY_MXFP8, last="core_v0.18.0"),
        _C(TCFG, 488, "core_v0.9.0", ("moe_grouped_gemm", "on"), ("num_experts", ">", 0), ("fp8", "set"),
           says="Grouped GEMM of MoE not support fp8 for now.", last="core_v0.9.0"),
        _C(TCFG, 612, "core_v0.12.0", ("fp8_param_gather", "on"), ("fp8", "set"), ("fp8_recipe", "==", "mxfp8"),
           says="MXFP8 currently does not support fp8_param.", last="core_v0.12.0"),
        _C(TCFG, 820, "core_v0.10.0", ("flash_decode", "on"), ("fp8", "set"),
           says="FP8 inference is currently not support with flash decoding.", last="core_v0.11.0"),
    )


LowPrecisionArguments.__doc__ = (LowPrecisionArguments.__doc__ or "").rstrip() + "\n" + \
    references(LowPrecisionArguments.checks)
