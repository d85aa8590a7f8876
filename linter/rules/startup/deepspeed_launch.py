"""DeepSpeed start-up checks found by the launch-check audit (docs/launch-checks.md) and not in
:mod:`.deepspeed_rules`: the dynamic loss-scaling ranges of the fp16 config model and the elasticity
config (``ElasticityConfig`` and ``compute_elastic_config``, which run when DeepSpeed reads a config
with ``elasticity.enabled``). Each rule names the releases that make its check.
"""

from __future__ import annotations

from typing import Iterator

from trainlint.framework import CAP_DEEPSPEED_CONFIG
from trainlint.diagnostics import Severity
from trainlint.provenance import Value
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    as_number,
    ds,
    ds_present,
    ds_target,
    pipeline_engine,
    zero_stage,
)
from trainlint.rules.startup.releases import ReleaseBoundRule, Releases
from trainlint.spec import TrainingSpec

DS = frozenset({CAP_DEEPSPEED_CONFIG})  # the run's settings are a DeepSpeed config


def _number(value: Value | None) -> float | None:
    """A number, or a numeric string as pydantic's lax mode reads it (``"3"``)."""
    n = as_number(value)
    if n is not None or value is None or not isinstance(value.value, str):
        return n
    try:
        return float(value.value)
    except ValueError:
        return None


# =============================================================================== TL138


class DynamicLossScaleRange(ReleaseBoundRule):
    """## What it does
    Reports an fp16 config with dynamic loss scaling (`fp16.enabled` and `fp16.loss_scale` 0, the
    default) whose `loss_scale_window` or `min_loss_scale` is not positive.

    ## Why is this bad?
    From DeepSpeed 0.19.3 the fp16 config model refuses it when the config is read: a window of 0
    would divide by zero in the loss scaler, a floor of 0 or less lets the scale collapse. Static
    loss scaling (`loss_scale` > 0) does not read them and is accepted.

    ## Example
    ```json
    {"fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 0}}
    ```

    ## Fix
    Use a positive window (DeepSpeed's default is 1000) and a positive minimum scale (default 1).

    ## References
    - DeepSpeed `deepspeed/runtime/precision_config.py:182-196` @ edaa722 (since v0.19.3, #8050):
      "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0)",
      "fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)".
    """

    code = "TL138"
    name = "ds-dynamic-loss-scale-range"
    default_severity = Severity.ERROR
    summary = "fp16 dynamic loss scaling with loss_scale_window or min_loss_scale not positive"
    requires = DS
    releases = Releases("deepspeed", first="0.19.3")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        enabled = ds(spec, "fp16.enabled")
        if as_bool(enabled) is not True:
            return
        scale = ds(spec, "fp16.loss_scale")
        if scale is not None and _number(scale) != 0:
            return  # static loss scaling (or a value the schema reports)
        for key in ("loss_scale_window", "min_loss_scale"):
            value = ds(spec, "fp16." + key)
            n = _number(value)
            if n is not None and n <= 0:
                yield Finding(f"fp16.{key} is {value.value!r} with dynamic loss scaling (fp16 enabled, loss_scale 0); "  # type: ignore[union-attr]
                              f"DeepSpeed (0.19.3 and later) stops: \"fp16.{key} must be > 0 when dynamic loss scaling "
                              "is enabled (loss_scale=0)\"", at=ds_target(spec, "fp16." + key),
                              also=((enabled, "fp16 enabled"),),
                              fix=f"set fp16.{key} to a positive value (default {1000 if key == 'loss_scale_window' else 1})")


# =============================================================================== TL139

LATEST_ELASTICITY_VERSION = 0.2
"""deepspeed/elasticity/constants.py:31 @ edaa722 (the same in every release since 0.3.x)."""


class ElasticityConfig(ReleaseBoundRule):
    """## What it does
    Checks the `elasticity` section when it is enabled, as DeepSpeed does when it reads the config:
    `max_train_batch_size` and `micro_batch_sizes` must be given; `max_gpus` not below `min_gpus`;
    every micro batch at most `max_train_batch_size`; `version` at most 0.2 (the newest DeepSpeed
    runs) and one it implements (0.1 or 0.2); model parallelism (`model_parallel_size` > 1) only
    with version 0.2, whose `num_gpus_per_node` must be a multiple of `model_parallel_size`.

    ## Why is this bad?
    `DeepSpeedConfig` computes the elastic batch while it reads the config and raises
    `ElasticityConfigError` (or `ElasticityError`) before the engine exists.

    ## Example
    ```json
    {"elasticity": {"enabled": true}}
    ```

    ## Fix
    Give `max_train_batch_size` and `micro_batch_sizes`; use elasticity version 0.2 with model
    parallelism; keep the other values in range.

    ## References
    - DeepSpeed `deepspeed/elasticity/config.py:50-85` @ edaa722: "Elasticity config missing
      max_train_batch_size", "Elasticity config missing micro_batch_sizes", "Elasticity min_gpus cannot
      be greater than max_gpus".
    - DeepSpeed `deepspeed/elasticity/elasticity.py:113-115`, `145-149`, `296-304`, `347-348` @ edaa722:
      "All micro batches must be less than or equal to max_acceptable_batch_size", "In Elasticity v0.2,
      number of GPUs per node ... should be divisible by model parallel size", "Elasticity V0.1 does not
      support model-parallel training", "Attempting to run elasticity version ... but runtime only
      supports up to 0.2", "Unable to find elastic logic for version".
    """

    code = "TL139"
    name = "ds-elasticity-config"
    default_severity = Severity.ERROR
    summary = "elasticity enabled without its batch keys, with an unsupported version, or with out-of-range values"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        enabled = ds(spec, "elasticity.enabled")
        if as_bool(enabled) is not True:
            return
        for key in ("max_train_batch_size", "micro_batch_sizes"):
            if not ds_present(spec, "elasticity." + key):
                yield Finding(f"elasticity is enabled without elasticity.{key}; DeepSpeed stops: \"Elasticity config "
                              f"missing {key}\"", at=enabled, fix=f"add elasticity.{key}")
                return  # DeepSpeed stops at the first missing key
        yield from self._gpus(spec)
        yield from self._micro_batches(spec)
        yield from self._version(spec)

    @staticmethod
    def _gpus(spec: TrainingSpec) -> Iterator[Finding]:
        low_v, high_v = ds(spec, "elasticity.min_gpus"), ds(spec, "elasticity.max_gpus")
        low, high = as_int(low_v), as_int(high_v)
        if low_v is None and high_v is None:
            return
        low, high = (1 if low_v is None else low), (10000 if high_v is None else high)
        if low is not None and high is not None and 1 <= high < low:
            yield Finding(f"elasticity.max_gpus {high} is below min_gpus {low}; DeepSpeed stops: \"Elasticity min_gpus "
                          "cannot be greater than max_gpus\"", at=high_v or low_v,
                          also=((low_v, "min_gpus"),) if low_v is not None and high_v is not None else ())

    @staticmethod
    def _micro_batches(spec: TrainingSpec) -> Iterator[Finding]:
        micro_v, top_v = ds(spec, "elasticity.micro_batch_sizes"), ds(spec, "elasticity.max_train_batch_size")
        top = as_int(top_v)
        if micro_v is None or top is None or not isinstance(micro_v.value, list):
            return
        sizes = [m for m in micro_v.value if isinstance(m, int) and not isinstance(m, bool)]
        over = [m for m in sizes if m > top]
        if over and len(sizes) == len(micro_v.value):
            yield Finding(f"elasticity.micro_batch_sizes {sizes} has {over[0]} above max_train_batch_size {top}; "
                          "DeepSpeed stops: \"All micro batches must be less than or equal to max_acceptable_batch_size\"",
                          at=micro_v, also=((top_v, "max_train_batch_size"),))

    @staticmethod
    def _version(spec: TrainingSpec) -> Iterator[Finding]:
        version_v = ds(spec, "elasticity.version")
        version = _number(version_v) if version_v is not None else LATEST_ELASTICITY_VERSION
        mp_v = ds(spec, "elasticity.model_parallel_size")
        mp = as_int(mp_v) if mp_v is not None else 1
        if version is None or mp is None:
            return
        where = version_v if version_v is not None else ds_target(spec, "elasticity.enabled")
        if mp > 1 and version != 0.2:
            yield Finding(f"elasticity version {_shown(version)} with model_parallel_size {mp}; DeepSpeed stops: "
                          f"\"Elasticity V{_shown(version)} does not support model-parallel training\"", at=where,
                          also=_also(mp_v, "model_parallel_size"), fix="use elasticity version 0.2")
            return
        if version > LATEST_ELASTICITY_VERSION:
            yield Finding(f"elasticity version {_shown(version)}; DeepSpeed stops: \"Attempting to run elasticity version "
                          f"{_shown(version)} but runtime only supports up to {LATEST_ELASTICITY_VERSION}\"", at=where,
                          fix="use elasticity version 0.2")
            return
        if version not in (0.1, 0.2):
            yield Finding(f"elasticity version {_shown(version)} is neither 0.1 nor 0.2; DeepSpeed stops: \"Unable to "
                          f"find elastic logic for version: {_shown(version)}\"", at=where, fix="use elasticity version 0.2")
            return
        gpn_v = ds(spec, "elasticity.num_gpus_per_node")
        gpn = as_int(gpn_v) if gpn_v is not None else 1
        if version == 0.2 and gpn and mp and mp >= 1 and gpn % mp and pipeline_engine(spec) is None:
            # with the pipeline engine, TL133 reports the same divisibility
            yield Finding(f"elasticity.num_gpus_per_node {gpn} is not a multiple of model_parallel_size {mp}; DeepSpeed "
                          f"stops: \"In Elasticity v0.2, number of GPUs per node:{gpn} should be divisible by model "
                          f"parallel size {mp}\"", at=gpn_v or where, also=_also(mp_v, "model_parallel_size"))


def _also(value: Value | None, note: str) -> tuple[tuple[Value, str], ...]:
    return () if value is None else ((value, note),)


def _shown(version: float) -> str:
    return f"{version:g}"


# =============================================================================== TL113


class OptimizerMaxGradNorm(ReleaseBoundRule):
    """## What it does
    Reports `max_grad_norm` among the params of the config's `optimizer`.

    ## Why is this bad?
    When DeepSpeed builds the optimizer the config names (no optimizer passed in code), it refuses the
    parameter with a ValueError, in every supported release; gradient clipping is the top-level
    `gradient_clipping` key. Whether it builds that optimizer is the training script's choice: Megatron
    front ends (Megatron-DeepSpeed, GPT-NeoX) and many scripts pass their own optimizer to
    `deepspeed.initialize`, and the config's section is then never built. A config does not say which,
    so this is a warning. (Outside fp16 the config reader first logs that it sets the value to 0,
    TL135, but the key is still there when the optimizer is built.)

    ## Example
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "max_grad_norm": 1.0}}}
    ```

    ## Fix
    Remove it and set `"gradient_clipping": 1.0`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2090-2093` @ edaa722: "'max_grad_norm' is not supported as an
      optimizer parameter, please switch to using the deepspeed parameter 'gradient_clipping'".
    """

    code = "TL113"
    name = "ds-optimizer-max-grad-norm"
    default_severity = Severity.WARNING
    summary = "optimizer.params.max_grad_norm, which DeepSpeed refuses when it builds the optimizer"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        value = ds(spec, "optimizer.params.max_grad_norm")
        if value is None or not ds_present(spec, "optimizer.type"):
            return
        shown = f"{value.value:g}" if isinstance(value.value, (int, float)) and not isinstance(value.value, bool) \
            else repr(value.value)
        yield Finding("optimizer.params.max_grad_norm: if DeepSpeed builds this optimizer (no optimizer passed to "
                      "deepspeed.initialize in code), it stops: \"'max_grad_norm' "
                      "is not supported as an optimizer parameter, please switch to using the deepspeed parameter "
                      "'gradient_clipping'\"", at=value, severity=Severity.WARNING, fix=f"remove it and set \"gradient_clipping\": {shown}")


# =============================================================================== TL114

_DTYPES = {"fp16": "fp16", "float16": "fp16", "half": "fp16", "torch.float16": "fp16", "bf16": "bf16",
           "bfloat16": "bf16", "torch.bfloat16": "bf16", "fp32": "fp32", "float32": "fp32", "float": "fp32",
           "torch.float32": "fp32"}
"""DeepSpeed's DtypeEnum spellings of the dtypes a gradient can accumulate in (deepspeed/runtime/config_utils)."""


class AmpGradAccumDtype(ReleaseBoundRule):
    """## What it does
    Reports Apex AMP (`amp.enabled`) without ZeRO with `data_types.grad_accum_dtype` other than fp32,
    the model dtype under AMP (DeepSpeed's own fp16/bf16 modes are off with AMP, TL128).

    ## Why is this bad?
    DeepSpeed raises NotImplementedError when it picks the optimizer wrapper: "Model data type and
    gradient accumulation data type must be equal to use Amp".

    ## Example
    ```json
    {"amp": {"enabled": true}, "data_types": {"grad_accum_dtype": "bf16"}}
    ```

    ## Fix
    Remove `data_types.grad_accum_dtype` (or set it to fp32).

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1998-2001` @ edaa722: "Model data type and gradient accumulation
      data type must be equal to use Amp".
    """

    code = "TL114"
    name = "ds-amp-grad-accum-dtype"
    default_severity = Severity.ERROR
    summary = "Apex AMP without ZeRO with a gradient-accumulation dtype other than the model's fp32"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        amp = ds(spec, "amp.enabled")
        dtype_v = ds(spec, "data_types.grad_accum_dtype")
        if as_bool(amp) is not True or dtype_v is None or not isinstance(dtype_v.value, str):
            return
        stage = zero_stage(spec)
        if stage is not None and as_int(stage) != 0:
            return  # ZeRO: TL128 (AMP and ZeRO are refused together)
        if as_bool(spec.precision.fp16_enabled) or as_bool(spec.precision.bf16_enabled):
            return  # TL128: AMP with DeepSpeed's fp16/bf16 mode
        accum = _DTYPES.get(dtype_v.value.lower())
        if accum is not None and accum != "fp32":
            yield Finding(f"data_types.grad_accum_dtype {dtype_v.value} with Apex AMP (model dtype fp32, no ZeRO): DeepSpeed "
                          "stops with \"Model data type and gradient accumulation data type must be equal to use Amp\"",
                          at=dtype_v, also=((amp, "AMP enabled"),), fix="remove data_types.grad_accum_dtype")


# =============================================================================== TL115


class LegacyStage1(ReleaseBoundRule):
    """## What it does
    Reports `zero_optimization.legacy_stage1: true` with ZeRO enabled.

    ## Why is this bad?
    The legacy ZeRO stage 1 was removed in DeepSpeed 0.5.9; building the ZeRO optimizer raises
    "The deprecated version of ZeRO Stage 1 is not supported in deepspeed >= 0.5.9".

    ## Example
    ```json
    {"zero_optimization": {"stage": 1, "legacy_stage1": true}}
    ```

    ## Fix
    Remove `legacy_stage1`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2377-2380` @ edaa722: "The deprecated version of ZeRO Stage 1 is not
      supported in deepspeed >= 0.5.9".
    """

    code = "TL115"
    name = "ds-legacy-stage1"
    default_severity = Severity.ERROR
    summary = "zero_optimization.legacy_stage1 with ZeRO, removed in DeepSpeed 0.5.9"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        legacy = ds(spec, "zero_optimization.legacy_stage1")
        stage = as_int(zero_stage(spec))
        if as_bool(legacy) is True and stage is not None and stage > 0:
            yield Finding("zero_optimization.legacy_stage1 with ZeRO stage "
                          f"{stage}: DeepSpeed stops with \"The deprecated version of ZeRO Stage 1 is not supported in "
                          "deepspeed >= 0.5.9\"", at=legacy, fix="remove legacy_stage1")


RULES: list[type] = [OptimizerMaxGradNorm, AmpGradAccumDtype, LegacyStage1, DynamicLossScaleRange, ElasticityConfig]
