"""TL641: DeepSpeed engine features the engine refuses together while it starts (from the
launch-check audit): MoQ weight quantization in the optimizer step without fp16, eigenvalue-based
MoQ, AutoTP with ZeRO-3 (0.17.0 to 0.19.0), Muon with ZeRO-3 (0.18.0)."""

from __future__ import annotations

from typing import Any, Iterator

from trainlint.core.diagnostics import Severity
from trainlint.core.framework import CAP_DEEPSPEED_CONFIG
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import as_bool, as_int, ds, ds_has_auto, ds_target, zero_stage
from trainlint.rules.startup.releases import Releases, release_key
from trainlint.core.spec import TrainingSpec

AUTOTP = Releases("deepspeed", first="0.17.0", last="0.19.0")
MUON = Releases("deepspeed", first="0.18.0", last="0.18.0")
_SHARED = "compression_training.weight_quantization.shared_parameters"


def _stated_in(releases: Releases, target: Any) -> bool:
    """A check that later releases dropped is judged only against a stated or located release."""
    known = target is not None and bool(getattr(target, "known", False)) \
        and release_key(getattr(target, "version", None)) is not None
    return known and releases.includes(target)


class EngineFeatureCombinations(Rule):
    """## What it does
    Checks DeepSpeed features the engine refuses together when it is built:
    MoQ weight quantization applied in the optimizer step
    (`compression_training.weight_quantization.shared_parameters.enabled` without
    `quantize_weight_in_forward`) needs `fp16.enabled` (a warning: the config model accepts it and the
    engine refuses it when it configures an optimizer, which the training script decides);
    eigenvalue-based MoQ
    (`quantize_training.eigenvalue.enabled` while MoQ is on) is disabled; AutoTP
    (`tensor_parallel.autotp_size` > 1) with ZeRO stage 3 (0.17.0 to 0.19.0); the Muon optimizer with
    ZeRO stage 3 (0.18.0; a warning: DeepSpeed builds the config's optimizer only when the training
    script passes none).

    The release-bound checks run only when the run states or locates such a release.

    ## Why is this bad?
    `deepspeed.initialize` stops with an assertion before the first step.

    ## Example
    ```json
    {"bf16": {"enabled": true},
     "compression_training": {"weight_quantization": {"shared_parameters": {"enabled": true}}}}
    ```

    ## Fix
    Use fp16 with optimizer-step MoQ (or quantize in the forward pass); turn eigenvalue MoQ off; use
    ZeRO stage 2 or lower with AutoTP or Muon in those releases.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2259-2261` @ edaa722 (every release since 0.9.0): "MoQ (quantize
      in optimization step) weight quantization is only supported for FP16"
    - DeepSpeed `deepspeed/runtime/config.py:550` @ edaa722 (0.9.0 to 0.19.0: `deepspeed/runtime/config.py:513`
      @ 98a2fbd): "Eigenvalue based MoQ is temporarily disabled"; MoQ on is
      `compression_training.shared_parameters.enabled` (`deepspeed/compression/config.py:56-62` @ edaa722)
    - DeepSpeed `deepspeed/runtime/engine.py:515-516` @ 98a2fbd (0.17.0 to 0.19.0): "Currently, the compatibility
      between 'autotp' and 'zero_stage = 3' has not been validated"
    - DeepSpeed `deepspeed/runtime/engine.py:1592` @ 79caae1 (0.18.0): "Muon optimizer is not yet compatible
      with ZeRO Stage 3"
    """

    code = "TL641"
    name = "ds-engine-feature-combinations"
    default_severity = Severity.ERROR
    summary = "DeepSpeed engine features the engine refuses together (MoQ without fp16, AutoTP or Muon with ZeRO-3)"
    requires = frozenset({CAP_DEEPSPEED_CONFIG})  # the run's settings are a DeepSpeed config
    release_dependent = False
    """The MoQ checks hold in every supported release; the AutoTP and Muon ones run only against a
    stated or located release that makes them."""

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        yield from self._moq(spec)
        stage_v = zero_stage(spec)
        stage = as_int(stage_v)
        if stage != 3:
            return
        tp = ds(spec, "tensor_parallel.autotp_size")
        if as_int(tp) is not None and as_int(tp) > 1 and _stated_in(AUTOTP, spec.target):  # type: ignore[operator]
            yield Finding(f"tensor_parallel.autotp_size {as_int(tp)} with ZeRO stage 3: DeepSpeed stops with \"Currently, "
                          "the compatibility between 'autotp' and 'zero_stage = 3' has not been validated\"",
                          at=ds_target(spec, "tensor_parallel.autotp_size"), also=((stage_v, "ZeRO stage 3"),),
                          fix="use ZeRO stage 2 or lower with AutoTP")
        kind = ds(spec, "optimizer.type")
        if kind is not None and isinstance(kind.value, str) and kind.value.lower() == "muon" and _stated_in(MUON, spec.target):
            yield Finding("optimizer Muon with ZeRO stage 3: DeepSpeed 0.18.0 stops with \"Muon optimizer is not yet "
                          "compatible with ZeRO Stage 3\" when it builds the config's optimizer (the training script "
                          "may pass its own)", at=ds_target(spec, "optimizer.type"), also=((stage_v, "ZeRO stage 3"),),
                          severity=Severity.WARNING, fix="use ZeRO stage 2 or lower with Muon")

    @staticmethod
    def _moq(spec: TrainingSpec) -> Iterator[Finding]:
        enabled = ds(spec, _SHARED + ".enabled")
        if as_bool(enabled) is True and as_bool(ds(spec, _SHARED + ".quantize_weight_in_forward")) is not True:
            fp16 = ds(spec, "fp16.enabled")
            # "auto" (the Hugging Face Trainer fills it in) proves nothing
            if (fp16 is None and not ds_has_auto(spec)) or as_bool(fp16) is False:
                # a warning: DeepSpeedConfig accepts the config (upstream's own unit test builds one); the
                # engine asserts when it configures an optimizer, which the training script decides (TL113)
                yield Finding("MoQ weight quantization in the optimizer step (compression_training.weight_quantization."
                              "shared_parameters.enabled without quantize_weight_in_forward) without fp16: "
                              "deepspeed.initialize stops with \"MoQ (quantize in optimization step) weight quantization "
                              "is only supported for FP16\" when it configures an optimizer",
                              at=ds_target(spec, _SHARED + ".enabled"), severity=Severity.WARNING,
                              fix="enable fp16, or set quantize_weight_in_forward")
        moq = ds(spec, "compression_training.shared_parameters.enabled")
        eigen = ds(spec, "quantize_training.eigenvalue.enabled")
        if as_bool(moq) is True and as_bool(eigen) is True:
            yield Finding("eigenvalue-based MoQ (quantize_training.eigenvalue.enabled) while MoQ is on: DeepSpeed stops "
                          "with \"Eigenvalue based MoQ is temporarily disabled\"",
                          at=ds_target(spec, "quantize_training.eigenvalue.enabled"), fix="turn the eigenvalue off")


