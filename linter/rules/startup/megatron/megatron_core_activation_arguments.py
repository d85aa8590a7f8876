"""TL630: the MLP activation function against the fusions Megatron-Core's ``TransformerConfig``
accepts with it (from the launch-check audit).

Megatron-LM does not pass the activation as a flag: ``core_transformer_config_from_args``
(``megatron/training/argument_utils.py`` at d98e8a6, ``arguments.py`` in older releases) makes it
from ``--swiglu`` (SiLU, gated), ``--squared-relu``, ``--quick-geglu`` (quick GELU, gated) or
GELU, and the bias-activation fusion from ``--no-bias-swiglu-fusion`` (SwiGLU) or
``--no-bias-gelu-fusion`` (every other activation), which ``validate_args`` turns off with
``--disable-bias-linear``. This rule derives both the same way and applies the config's checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.releases import Releases

_ACTIVATION_FLAGS = ("swiglu", "squared_relu", "quick_geglu")


@dataclass(frozen=True)
class Activation:
    """The MLP activation a Megatron-LM run builds, as TransformerConfig sees it."""

    function: str
    """``silu``, ``squared_relu``, ``quick_gelu`` or ``gelu``."""
    gated: bool
    bias_fusion: bool
    flag: str
    """The dest of the flag that chose the function (None-like ``""`` for the GELU default)."""


def activation(a: MegatronArgs) -> Activation | None:
    """The run's activation (None: a flag it depends on is not known, or two activation flags
    are given, which ``core_transformer_config_from_args`` refuses on its own)."""
    if not a.known(*_ACTIVATION_FLAGS, "bias_swiglu_fusion", "bias_gelu_fusion", "add_bias_linear"):
        return None
    swiglu, squared, quick = (a.on(d) for d in _ACTIVATION_FLAGS)
    if swiglu + squared + quick > 1:
        return None
    if swiglu:
        return Activation("silu", True, a.on("bias_swiglu_fusion"), "swiglu")
    # validate_args: `if not args.add_bias_linear: args.bias_gelu_fusion = False`
    fusion = a.on("bias_gelu_fusion") and a.on("add_bias_linear")
    if squared:
        return Activation("squared_relu", False, fusion, "squared_relu")
    if quick:
        return Activation("quick_gelu", True, fusion, "quick_geglu")
    return Activation("gelu", False, fusion, "")


def _in(target: object, first: str) -> bool:
    return Releases("megatron", first=first).includes(target)


class ActivationArguments(MegatronRule):
    """## What it does
    Checks the MLP activation (`--swiglu`, `--squared-relu`, `--quick-geglu`, else GELU) against
    the fusions Megatron-Core's `TransformerConfig.__post_init__` accepts: the bias-activation
    fusion (on by default while the linear layers have biases) only with GELU, SwiGLU or quick
    GeGLU and never together with `--use-te-activation-func`; a non-zero `--glu-linear-offset`
    under the fusion only with quick GeGLU; Transformer Engine's activation functions only for
    GELU / SiLU / ReLU families; and, upstream, `--activation-func-clamp-value` for SwiGLU only
    positive and finite, in MoE models, without a GLU offset or TE activation functions.

    ## Why is this bad?
    Megatron-Core raises `ValueError` while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --squared-relu        # biases on, so --no-bias-gelu-fusion is missing
    ```

    ## Fix
    Turn the fusion off (`--no-bias-gelu-fusion`, `--no-bias-swiglu-fusion`) or drop the biases
    (`--disable-bias-linear`); drop `--use-te-activation-func` for activations TE does not have.

    ## References
    * `megatron/core/transformer/transformer_config.py:2421-2424@d98e8a6` (since core_v0.15.0; core_v0.5.0 to
      core_v0.14.0: `megatron/core/transformer/transformer_config.py:1125@23e00ed`): "When
      bias_activation_fusion is True, activation function should be either gelu, swiglu, or quick_geglu"
    * `megatron/core/transformer/transformer_config.py:2441@d98e8a6` (since core_v0.15.0): "When
      bias_activation_fusion is True and glu_linear_offset is non-zero, activation function must be quick_gelu."
    * `megatron/core/transformer/transformer_config.py:2447@d98e8a6` (since core_v0.15.0):
      "bias_activation_fusion and use_te_activation_func cannot be both true."
    * `megatron/core/transformer/transformer_config.py:2461@d98e8a6` (since core_v0.15.0): "TransformerEngine
      only support gelu, geglu, silu, swiglu, relu, reglu."
    * `megatron/core/transformer/transformer_config.py:2480-2493@d98e8a6` (upstream only): "activation_func_clamp_value
      for SwiGLU must be finite and greater than zero.", "... is only supported with MoE.", "glu_linear_offset
      must be zero when activation_func_clamp_value is set for SwiGLU.", "use_te_activation_func must be False
      when activation_func_clamp_value is not None for SwiGLU"
    * `megatron/training/argument_utils.py:277-330@d98e8a6`: how the flags make the activation and the fusion.
    """

    code = "TL630"
    name = "megatron-core-activation-arguments"
    summary = "an MLP activation with a fusion, offset or clamp Megatron-Core's TransformerConfig refuses"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        act = activation(a)
        if act is None:
            return
        target = a.spec.target
        fusion_flag = "--no-bias-swiglu-fusion" if act.function == "silu" else "--no-bias-gelu-fusion"
        head = a.at(act.flag) if act.flag and a.given(act.flag) else None
        if act.bias_fusion and act.function == "squared_relu" and head and _in(target, "core_v0.5.0"):
            yield self._stop(a, head, f"{a.flag('squared_relu')} with the bias-activation fusion on (the default while "
                             f"linear layers have biases)", "When bias_activation_fusion is True, activation function "
                             "should be either gelu, swiglu, or quick_geglu", f"add {fusion_flag} or --disable-bias-linear")
        if not _in(target, "core_v0.15.0"):
            return
        offset = a.get("glu_linear_offset") if a.known("glu_linear_offset") else None
        if act.bias_fusion and a.given("glu_linear_offset") and _number(offset) and offset != 0 \
                and act.function != "quick_gelu":
            yield self._stop(a, a.at("glu_linear_offset"), f"{a.flag('glu_linear_offset')} {offset} with the "
                             f"bias-activation fusion on and {_named(act)}", "When bias_activation_fusion is True and "
                             "glu_linear_offset is non-zero, activation function must be quick_gelu.",
                             f"add {fusion_flag}, or use --quick-geglu")
        te = a.known("use_te_activation_func") and a.given("use_te_activation_func") and a.on("use_te_activation_func")
        if te and act.bias_fusion:
            yield self._stop(a, a.at("use_te_activation_func"), f"{a.flag('use_te_activation_func')} with the "
                             f"bias-activation fusion on", "bias_activation_fusion and use_te_activation_func cannot be "
                             "both true.", f"add {fusion_flag} (or --disable-bias-linear), or drop "
                             f"{a.flag('use_te_activation_func')}")
        elif te and act.function in ("squared_relu", "quick_gelu"):
            yield self._stop(a, a.at("use_te_activation_func"), f"{a.flag('use_te_activation_func')} with {_named(act)}",
                             "TransformerEngine only support gelu, geglu, silu, swiglu, relu, reglu.",
                             f"drop {a.flag('use_te_activation_func')}")
        yield from self._clamp(a, act, target)

    def _clamp(self, a: MegatronArgs, act: Activation, target: object) -> Iterator[Finding]:
        if act.function != "silu" or not a.given("activation_func_clamp_value") \
                or not Releases("megatron", first="main").includes(target):
            return
        clamp = a.get("activation_func_clamp_value")
        if not _number(clamp):
            return
        at, shown = a.at("activation_func_clamp_value"), f"{a.flag('activation_func_clamp_value')} {clamp} with SwiGLU"
        if not math.isfinite(clamp) or clamp <= 0:
            yield self._stop(a, at, shown, "activation_func_clamp_value for SwiGLU must be finite and greater than zero.",
                             "give a positive clamp")
        elif a.known("num_experts") and a.get("num_experts") is None:
            yield self._stop(a, at, shown + " and no --num-experts", "activation_func_clamp_value for SwiGLU is only "
                             "supported with MoE.", "drop the clamp for a dense model")
        elif a.known("glu_linear_offset") and _number(a.get("glu_linear_offset")) and a.get("glu_linear_offset") != 0:
            yield self._stop(a, at, shown + f" and {a.flag('glu_linear_offset')} {a.get('glu_linear_offset')}",
                             "glu_linear_offset must be zero when activation_func_clamp_value is set for SwiGLU.",
                             "drop the offset")
        elif a.known("use_te_activation_func") and a.on("use_te_activation_func"):
            yield self._stop(a, at, shown + f" and {a.flag('use_te_activation_func')}", "use_te_activation_func must "
                             "be False when activation_func_clamp_value is not None for SwiGLU",
                             f"drop {a.flag('use_te_activation_func')}")

    @staticmethod
    def _stop(a: MegatronArgs, at: str, shown: str, says: str, fix: str) -> Finding:
        return Finding(f"{shown}: Megatron-Core stops with \"{says}\"", at=at, fix=fix)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _named(act: Activation) -> str:
    return {"silu": "SwiGLU", "squared_relu": "squared ReLU", "quick_gelu": "quick GeGLU", "gelu": "GELU"}[act.function]
