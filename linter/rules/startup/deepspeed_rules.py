"""DeepSpeed's own start-up failures (framework-assertions.md section 1) that a static check of
the DeepSpeed config can decide and that the schema does not already report.

Not here: DS001/DS004-DS008/DS030 (the DeepSpeed adapter and its schema: TL003/TL004/TL006/
TL008), DS010 (TL103), DS020-DS023 batch triple (TL100; DS020 is TL120), DS060 (TL112),
DS072 (TL111), DS100 (TL110). Not decidable from the config: DS070 (MoQ lives in
compression_training), DS071 (the optimizer usually comes from code), DS073 (needs the mpu).
"""

from __future__ import annotations

from typing import Iterator

from trainlint.framework import CAP_DEEPSPEED_CONFIG, CAP_DEEPSPEED_ENGINE
from trainlint.diagnostics import Severity
from trainlint.provenance import Value
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    as_number,
    as_str,
    ds,
    ds_enabled,
    ds_has_auto,
    ds_key,
    ds_present,
    ds_target,
    pipeline_engine,
    zero_stage,
)
from trainlint.spec import TrainingSpec

DS = frozenset({CAP_DEEPSPEED_CONFIG})  # the run's settings are a DeepSpeed config

# deepspeed/runtime/config.py:71-87 @ edaa722 (compared lower-case, config.py:840-842).
DEEPSPEED_OPTIMIZERS = ("adagrad", "adam", "adamw", "lamb", "onebitadam", "onebitlamb", "zerooneadam", "muadam",
                        "muadamw", "musgd", "lion", "muon")
# torch.optim classes DeepSpeed also accepts by exact (case-sensitive) name (engine.py:1660-1661).
TORCH_OPTIMIZERS = ("Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "ASGD", "LBFGS", "Muon", "NAdam",
                    "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam")
# What the names above build, and whether ZeRO has tested it (deepspeed/runtime/zero/utils.py:45-62,
# ZERO_SUPPORTED_OPTIMIZERS: torch Adam/AdamW/Adagrad, FusedAdam, DeepSpeedCPUAdam, DeepSpeedCPUAdagrad,
# FusedLion/DeepSpeedCPULion, MuonWithAuxAdam).
ZERO_TESTED = ("adam", "adamw", "adagrad", "lion", "muon")
ONEBIT = {"onebitadam": "1bit-Adam", "zerooneadam": "0/1 Adam", "onebitlamb": "1bit-Lamb"}


def _also(*pairs: tuple[Value | str | None, str]) -> tuple[tuple[Value | str | None, str], ...]:
    return tuple((t, n) for t, n in pairs if t is not None)


def _optimizer(spec: TrainingSpec) -> tuple[str, Value] | None:
    """The optimizer name as DeepSpeed normalises it, with the value as written."""
    value = ds(spec, "optimizer.type")
    name = as_str(value)
    if value is None or name is None:
        return None
    return (name.lower() if name.lower() in DEEPSPEED_OPTIMIZERS else name), value


def _model_dtype(spec: TrainingSpec) -> tuple[str, Value | None] | None:
    """DeepSpeed's model dtype (engine.get_data_types: fp16 first, then bf16, else fp32)."""
    fp16, bf16 = spec.precision.fp16_enabled, spec.precision.bf16_enabled
    if as_bool(fp16):
        return "fp16", fp16
    if as_bool(bf16):
        return "bf16", bf16
    if as_bool(fp16) is False and as_bool(bf16) is False:
        return "fp32", None
    return None


def _stage(spec: TrainingSpec) -> tuple[int, Value] | None:
    value = zero_stage(spec)
    stage = as_int(value)
    return None if value is None or stage is None else (stage, value)


# =============================================================================== TL120


class BatchSizeMissing(Rule):
    """## What it does
    Reports a DeepSpeed config that gives neither `train_batch_size` nor
    `train_micro_batch_size_per_gpu` (`gradient_accumulation_steps` alone is not enough).
    Configs that leave values to the Hugging Face Trainer / Accelerate (`"auto"`) are skipped:
    the launcher fills the batch in.

    ## Why is this bad?
    DeepSpeed cannot derive the batch and stops at start-up.

    ## Example
    ```json
    {"gradient_accumulation_steps": 4, "zero_optimization": {"stage": 1}}
    ```

    ## Fix
    Give `train_micro_batch_size_per_gpu` (and `gradient_accumulation_steps`), or `train_batch_size`.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:983-985` @ edaa722: "Either train_batch_size or
      train_micro_batch_size_per_gpu needs to be provided".
    """

    code = "TL120"
    release_dependent = False
    name = "ds-batch-size-missing"
    default_severity = Severity.ERROR
    summary = "DeepSpeed config with neither train_batch_size nor train_micro_batch_size_per_gpu"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if ds_has_auto(spec) or ds_present(spec, "train_batch_size") or ds_present(spec, "train_micro_batch_size_per_gpu"):
            return
        if ds_present(spec, "elasticity") and as_bool(ds(spec, "elasticity.enabled")):
            return  # elastic training computes the batch
        gas = ds(spec, "gradient_accumulation_steps")
        if gas is None:
            # No batch setting at all: the file is likely a template the program that loads it fills
            # (the Hugging Face Trainer of 2021 refused batch keys in it and set them from
            # --per_device_train_batch_size; DeepSpeed's autotuner writes them): said, not an error.
            yield Finding("neither train_batch_size nor train_micro_batch_size_per_gpu is given: DeepSpeed stops "
                          "(\"Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided\") unless "
                          "the program that loads this config fills the batch in (the Hugging Face Trainer, the "
                          "autotuner); write \"auto\" to say that it does", severity=Severity.WARNING,
                          fix="add \"train_micro_batch_size_per_gpu\" (a number, or \"auto\" when a launcher fills it)")
            return
        yield Finding("neither train_batch_size nor train_micro_batch_size_per_gpu is given; DeepSpeed stops: \"Either "
                      "train_batch_size or train_micro_batch_size_per_gpu needs to be provided\"",
                      at=gas, fix="add \"train_micro_batch_size_per_gpu\"")


# =============================================================================== TL121


class AllreduceSumUnsupported(Rule):
    """## What it does
    Reports `gradient_allreduce_op: "sum"` with ZeRO stage 3, with ZenFlow
    (`zero_optimization.zenflow`) or with DeepCompile (`compile.deepcompile`).

    ## Why is this bad?
    DeepSpeed refuses the combination when it reads the config.

    ## Example
    ```json
    {"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}}
    ```

    ## Fix
    Use the default `"mean"`.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:1029-1035` @ edaa722: "gradient_allreduce_op='sum' is not
      supported with ZeRO stage 3" / "... with ZenFlow" / "... with DeepCompile".
    """

    code = "TL121"
    release_dependent = False
    name = "ds-allreduce-sum-unsupported"
    default_severity = Severity.ERROR
    summary = "gradient_allreduce_op \"sum\" with ZeRO-3, ZenFlow or DeepCompile"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        op = ds(spec, "gradient_allreduce_op")
        if (as_str(op) or "").lower() != "sum":
            return
        stage = _stage(spec)
        if stage is not None and stage[0] == 3:
            yield Finding("gradient_allreduce_op \"sum\" with ZeRO stage 3; DeepSpeed stops: \"gradient_allreduce_op='sum' "
                          "is not supported with ZeRO stage 3\"", at=op, also=_also((stage[1], "ZeRO stage 3")),
                          fix="use \"mean\"")
        # file text: DeepSpeed's check is on the zenflow section as written, whatever its value
        zenflow = spec.settings.get(ds_key(spec, "zero_optimization.zenflow"))
        if ds_present(spec, "zero_optimization.zenflow") and (zenflow is None or zenflow.value is not None):
            yield Finding("gradient_allreduce_op \"sum\" with ZenFlow; DeepSpeed stops: \"gradient_allreduce_op='sum' is "
                          "not supported with ZenFlow\"", at=op, fix="use \"mean\"")
        if as_bool(ds(spec, "compile.deepcompile")):
            yield Finding("gradient_allreduce_op \"sum\" with DeepCompile; DeepSpeed stops: \"gradient_allreduce_op='sum' "
                          "is not supported with DeepCompile\"", at=op,
                          also=_also((ds(spec, "compile.deepcompile"), "DeepCompile enabled")), fix="use \"mean\"")


# =============================================================================== TL122


class MasterWeightsWithoutZero(Rule):
    """## What it does
    Reports `fp16.fp16_master_weights_and_grads`, `bf16.bf16_master_weights_and_grads` or
    `bf16.bf16_optimizer_states` without ZeRO stage 1-3, and `bf16_optimizer_states` without
    `bf16_master_weights_and_grads`.

    ## Why is this bad?
    These options belong to the ZeRO optimizers; DeepSpeed refuses them otherwise.

    ## Example
    ```json
    {"bf16": {"enabled": true, "bf16_master_weights_and_grads": true}}
    ```

    ## Fix
    Enable ZeRO (stage 1 to 3) or drop the option.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:1037-1049` @ edaa722: "Fp16_master_weights_and_grads is
      only supported with ZeRO Stage 1, 2, or 3.", "Bf16_master_weights_and_grads is only supported
      with ZeRO Stage 1, 2, or 3.", "bf16_optimizer_states is only supported with ZeRO Stage 1, 2,
      or 3.", "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled."
    """

    code = "TL122"
    release_dependent = False
    name = "ds-master-weights-without-zero"
    default_severity = Severity.ERROR
    summary = "fp16/bf16 master-weights or bf16 optimizer-state options without ZeRO 1-3"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        stage = _stage(spec)
        if stage is None:
            return
        s, stage_v = stage
        for key, quote in (("fp16.fp16_master_weights_and_grads", "Fp16_master_weights_and_grads"),
                           ("bf16.bf16_master_weights_and_grads", "Bf16_master_weights_and_grads"),
                           ("bf16.bf16_optimizer_states", "bf16_optimizer_states")):
            value = ds(spec, key)
            if as_bool(value) and s == 0:
                yield Finding(f"{key} needs ZeRO stage 1, 2 or 3 (ZeRO stage is 0); DeepSpeed stops: \"{quote} is only "
                              "supported with ZeRO Stage 1, 2, or 3.\"", at=value, also=_also((stage_v, "ZeRO stage")),
                              fix="enable ZeRO stage 1-3 or remove the option")
        states = ds(spec, "bf16.bf16_optimizer_states")
        if as_bool(states) and s > 0 and not as_bool(ds(spec, "bf16.bf16_master_weights_and_grads")):
            yield Finding("bf16.bf16_optimizer_states without bf16.bf16_master_weights_and_grads; DeepSpeed stops: "
                          "\"bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.\"", at=states,
                          fix="add \"bf16_master_weights_and_grads\": true")


# =============================================================================== TL123


class PartialOffloadWithoutZero3(Rule):
    """## What it does
    Reports `zero_optimization.offload_optimizer.ratio` below 1.0 (partial optimizer offload)
    with a ZeRO stage other than 3.

    ## Why is this bad?
    DeepSpeed's ZeRO config validator refuses it.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}}
    ```

    ## Fix
    Use ZeRO stage 3 or offload the whole optimizer (ratio 1.0).

    ## References
    - DeepSpeed `deepspeed/runtime/zero/config.py:389-393` @ edaa722: "Partial offloading only
      supported for ZeRO Stage 3."
    """

    code = "TL123"
    release_dependent = False
    name = "ds-partial-offload-without-zero3"
    default_severity = Severity.ERROR
    summary = "offload_optimizer.ratio < 1.0 with a ZeRO stage other than 3"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        ratio_v = ds(spec, "zero_optimization.offload_optimizer.ratio")
        ratio = as_number(ratio_v)
        stage = _stage(spec)
        if ratio is None or ratio >= 1.0 or stage is None or stage[0] == 3:
            return
        yield Finding(f"offload_optimizer.ratio {ratio:g} (partial offload) with ZeRO stage {stage[0]}; DeepSpeed stops: "
                      "\"Partial offloading only supported for ZeRO Stage 3.\"", at=ratio_v,
                      also=_also((stage[1], "ZeRO stage")), fix="use ZeRO stage 3 or ratio 1.0")


# =============================================================================== TL124


class ParamDtypeConflict(Rule):
    """## What it does
    Reports `data_types.param_dtype` different from the precision mode the `fp16` / `bf16`
    sections enable (fp32 when neither is).

    ## Why is this bad?
    DeepSpeed derives the model dtype from the fp16/bf16 flags and refuses a divergent
    `param_dtype` at engine start-up.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "data_types": {"param_dtype": "fp16"}}
    ```

    ## Fix
    Enable the matching mode, or omit `data_types.param_dtype`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1498-1515` @ edaa722: "data_types.param_dtype='...'
      conflicts with the enabled precision mode (model dtype ...). Set the matching fp16/bf16
      'enabled' flag or omit data_types.param_dtype."
    """

    code = "TL124"
    release_dependent = False
    name = "ds-param-dtype-conflict"
    default_severity = Severity.ERROR
    summary = "data_types.param_dtype differs from the enabled fp16/bf16 mode"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        value = ds(spec, "data_types.param_dtype")
        wanted = (as_str(value) or "").lower()
        model = _model_dtype(spec)
        if not wanted or model is None or wanted == model[0]:
            return
        yield Finding(f"data_types.param_dtype is {wanted} but the enabled precision mode makes the model {model[0]}; "
                      "DeepSpeed stops: \"data_types.param_dtype=... conflicts with the enabled precision mode\"",
                      at=value, also=_also((model[1], f"{model[0]} enabled here")),
                      fix=f"set param_dtype to {model[0]}, enable the matching mode, or omit it")


# =============================================================================== TL125


class UnsupportedOptimizer(Rule):
    """## What it does
    Reports an `optimizer.type` DeepSpeed does not know: neither one of its own optimizers
    (compared lower-case: adagrad, adam, adamw, lamb, onebitadam, onebitlamb, zerooneadam,
    muadam, muadamw, musgd, lion, muon) nor a `torch.optim` class name (case-sensitive: `SGD`,
    not `sgd`).

    ## Why is this bad?
    DeepSpeed stops when it configures the optimizer.

    ## Example
    ```json
    {"optimizer": {"type": "sgd", "params": {"lr": 0.1}}}
    ```

    ## Fix
    Use one of DeepSpeed's names or the exact torch.optim class name.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1660-1661, 1692-1694` @ edaa722: "{} is not a
      supported DeepSpeed Optimizer"; names in `deepspeed/runtime/config.py:71-87`.
    """

    code = "TL125"
    release_dependent = False
    name = "ds-unsupported-optimizer"
    default_severity = Severity.ERROR
    summary = "optimizer.type is neither a DeepSpeed optimizer nor a torch.optim class name"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        found = _optimizer(spec)
        if found is None:
            return
        name, value = found
        if name in DEEPSPEED_OPTIMIZERS or name in TORCH_OPTIMIZERS:
            return
        close = [t for t in TORCH_OPTIMIZERS if t.lower() == name.lower()]
        hint = f" (torch.optim's is spelled `{close[0]}`)" if close else ""
        yield Finding(f"optimizer type `{name}` is not a DeepSpeed optimizer nor a torch.optim class{hint}; DeepSpeed "
                      f"stops: \"{name} is not a supported DeepSpeed Optimizer\"", at=value,
                      fix=f"use `{close[0]}`" if close else "use a DeepSpeed optimizer name (adam, adamw, lamb, ...)")


# =============================================================================== TL126


class LambStaticLossScale(Rule):
    """## What it does
    Reports the LAMB or 1-bit LAMB optimizer with a static fp16 loss scale (`fp16.loss_scale`
    other than 0).

    ## Why is this bad?
    DeepSpeed's LAMB needs dynamic loss scaling and stops at start-up.

    ## Example
    ```json
    {"optimizer": {"type": "Lamb"}, "fp16": {"enabled": true, "loss_scale": 128}}
    ```

    ## Fix
    Set `fp16.loss_scale` to 0 (dynamic).

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1696-1698` @ edaa722: "DeepSpeed {} optimizer requires
      dynamic loss scaling"; `dynamic_loss_scale()` is `fp16.loss_scale == 0` (engine.py:1467-1468).
    """

    code = "TL126"
    release_dependent = False
    name = "ds-lamb-static-loss-scale"
    default_severity = Severity.ERROR
    summary = "LAMB / 1-bit LAMB with a static fp16.loss_scale"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        found = _optimizer(spec)
        scale_v = ds(spec, "fp16.loss_scale")
        scale = as_number(scale_v)
        if found is None or found[0] not in ("lamb", "onebitlamb") or scale is None or scale == 0:
            return
        yield Finding(f"{found[0]} with static loss scale {scale:g}; DeepSpeed stops: \"DeepSpeed {found[0]} optimizer "
                      "requires dynamic loss scaling\"", at=scale_v, also=_also((found[1], "optimizer")),
                      fix="set fp16.loss_scale to 0 (dynamic)")


# =============================================================================== TL127


class UnmanagedGradAccumConflict(Rule):
    """## What it does
    Reports `managed_gradient_accumulation: false` together with something DeepSpeed refuses
    with it: ZeRO `overlap_comm` below stage 2, the pipeline engine, DeepCompile, or Apex AMP.

    ## Why is this bad?
    DeepSpeed stops when it configures the optimizer.

    ## Example
    ```json
    {"managed_gradient_accumulation": false, "amp": {"enabled": true}}
    ```

    ## Fix
    Keep the default `managed_gradient_accumulation: true`, or drop the other option.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1705-1713` @ edaa722: "managed_gradient_accumulation=False
      supports ZeRO overlap_comm only with ZeRO stage 2", "... is not supported with pipeline
      parallelism", "... with DeepCompile", "... with Apex AMP".
    """

    code = "TL127"
    release_dependent = False
    name = "ds-unmanaged-grad-accum-conflict"
    default_severity = Severity.ERROR
    summary = "managed_gradient_accumulation false with overlap_comm below ZeRO-2, pipeline, DeepCompile or AMP"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        managed = ds(spec, "managed_gradient_accumulation")
        if as_bool(managed) is not False:
            return
        stage = _stage(spec)
        overlap = ds(spec, "zero_optimization.overlap_comm")
        quote = "DeepSpeed stops: \"managed_gradient_accumulation=False"
        if stage is not None and stage[0] < 2 and as_bool(overlap):
            yield Finding(f"managed_gradient_accumulation false with overlap_comm at ZeRO stage {stage[0]}; {quote} "
                          "supports ZeRO overlap_comm only with ZeRO stage 2\"", at=managed,
                          also=_also((overlap, "overlap_comm"), (stage[1], "ZeRO stage")))
        engine = pipeline_engine(spec)
        if engine is not None:
            yield Finding(f"managed_gradient_accumulation false with the pipeline engine ({engine.reason}); {quote} is not "
                          "supported with pipeline parallelism\"", at=managed, also=_also((engine.at, "pipeline")))
        compiled = ds(spec, "compile.deepcompile")
        if as_bool(compiled):
            yield Finding(f"managed_gradient_accumulation false with DeepCompile; {quote} is not supported with "
                          "DeepCompile\"", at=managed, also=_also((compiled, "DeepCompile")))
        amp = ds_enabled(spec, "amp")
        if as_bool(amp):
            yield Finding(f"managed_gradient_accumulation false with Apex AMP; {quote} is not supported with Apex AMP\"",
                          at=managed, also=_also((amp, "AMP enabled")))


# =============================================================================== TL128


class AmpConflict(Rule):
    """## What it does
    Reports Apex AMP (`amp.enabled`) together with ZeRO, or together with DeepSpeed's own fp16
    / bf16 modes.

    ## Why is this bad?
    DeepSpeed refuses both combinations when it configures the optimizer.

    ## Example
    ```json
    {"amp": {"enabled": true}, "zero_optimization": {"stage": 1}}
    ```

    ## Fix
    Use DeepSpeed's `fp16` (or `bf16`) mode instead of AMP.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1983-1985` @ edaa722: "Amp and ZeRO are not currently
      compatible, please use (legacy) fp16 mode which performs similar to amp opt_mode=O2";
      `engine.py:2002-2003`: "Cannot enable both amp with (legacy) fp16 or bfloat16 mode".
    """

    code = "TL128"
    release_dependent = False
    name = "ds-amp-conflict"
    default_severity = Severity.ERROR
    summary = "Apex AMP with ZeRO, or with DeepSpeed's fp16/bf16 mode"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        amp = ds_enabled(spec, "amp")
        if not as_bool(amp):
            return
        stage = _stage(spec)
        if stage is not None and stage[0] > 0:
            yield Finding(f"Apex AMP with ZeRO stage {stage[0]}; DeepSpeed stops: \"Amp and ZeRO are not currently "
                          "compatible, please use (legacy) fp16 mode\"", at=amp, also=_also((stage[1], "ZeRO stage")),
                          fix="use \"fp16\": {\"enabled\": true} instead of amp")
            return
        model = _model_dtype(spec)
        if model is not None and model[0] != "fp32":
            yield Finding(f"Apex AMP with DeepSpeed's {model[0]} mode; DeepSpeed stops: \"Cannot enable both amp with "
                          "(legacy) fp16 or bfloat16 mode\"", at=amp, also=_also((model[1], f"{model[0]} enabled")),
                          fix="enable either amp or DeepSpeed's fp16/bf16 mode")


# =============================================================================== TL129


class ZeroUntestedOptimizer(Rule):
    """## What it does
    Reports ZeRO (stage >= 1) with a config optimizer ZeRO has not been tested with (LAMB,
    MuAdam/MuAdamW/MuSGD, torch.optim classes other than Adam/AdamW/Adagrad) unless
    `zero_allow_untested_optimizer: true`.

    ## Why is this bad?
    DeepSpeed stops when it wraps the optimizer.

    ## Example
    ```json
    {"optimizer": {"type": "SGD"}, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Use Adam/AdamW/Adagrad/Lion, or add `"zero_allow_untested_optimizer": true`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1986-1990` @ edaa722: "You are using an untested ZeRO
      Optimizer. Please add <\\"zero_allow_untested_optimizer\\": true> in the configuration file to
      use it."; tested classes in `deepspeed/runtime/zero/utils.py:45-62`.
    """

    code = "TL129"
    release_dependent = False
    name = "ds-zero-untested-optimizer"
    default_severity = Severity.ERROR
    summary = "ZeRO with an optimizer it has not been tested with, without zero_allow_untested_optimizer"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        found, stage = _optimizer(spec), _stage(spec)
        if found is None or stage is None or stage[0] == 0:
            return
        name, value = found
        if name in ZERO_TESTED or name in ONEBIT or as_bool(ds(spec, "zero_allow_untested_optimizer")):
            return
        if name not in DEEPSPEED_OPTIMIZERS and name not in TORCH_OPTIMIZERS:
            return  # TL125
        yield Finding(f"ZeRO stage {stage[0]} with optimizer `{name}`, which ZeRO has not been tested with; DeepSpeed "
                      "stops: \"You are using an untested ZeRO Optimizer. Please add <\\\"zero_allow_untested_optimizer\\\": "
                      "true> in the configuration file to use it.\"", at=value, also=_also((stage[1], "ZeRO stage")),
                      fix="add \"zero_allow_untested_optimizer\": true, or use adam/adamw")


# =============================================================================== TL130


class GradAccumDtypeMix(Rule):
    """## What it does
    Without ZeRO and without AMP, reports a `data_types.grad_accum_dtype` different from the
    model dtype (fp16 / bf16 / fp32 from the precision sections).

    ## Why is this bad?
    Only ZeRO's optimizers support accumulating gradients in another dtype; DeepSpeed stops.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"}}
    ```

    ## Fix
    Enable ZeRO (stage 1 keeps fp32 accumulation for bf16), or drop `grad_accum_dtype`.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2006-2021` @ edaa722: "unsupported mix of
      model_dtype=... and grad_accum_dtype=..."; dtypes from `get_data_types` (engine.py:1485-1496).
    """

    code = "TL130"
    release_dependent = False
    name = "ds-grad-accum-dtype-mix"
    default_severity = Severity.ERROR
    summary = "grad_accum_dtype differs from the model dtype without ZeRO or AMP"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        accum_v = ds(spec, "data_types.grad_accum_dtype")
        accum = (as_str(accum_v) or "").lower()
        model, stage = _model_dtype(spec), _stage(spec)
        if not accum or model is None or stage is None or stage[0] > 0 or as_bool(ds_enabled(spec, "amp")):
            return
        if accum != model[0]:
            yield Finding(f"model dtype {model[0]} with grad_accum_dtype {accum} and no ZeRO; DeepSpeed stops: "
                          f"\"unsupported mix of model_dtype and grad_accum_dtype\"", at=accum_v,
                          also=_also((model[1], f"{model[0]} enabled"), (stage[1], "ZeRO stage 0")),
                          fix="enable ZeRO stage 1 or drop data_types.grad_accum_dtype")


# =============================================================================== TL131


class OneBitOptimizerWithZero(Rule):
    """## What it does
    Reports the 1-bit optimizers (OneBitAdam, ZeroOneAdam, OneBitLamb) with ZeRO.

    ## Why is this bad?
    They compress the gradient all-reduce themselves; DeepSpeed refuses them with ZeRO.

    ## Example
    ```json
    {"optimizer": {"type": "OneBitAdam"}, "zero_optimization": {"stage": 1}}
    ```

    ## Fix
    Use ZeRO stage 0 with 1-bit optimizers, or a plain Adam with ZeRO.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2152, 2159, 2166` @ edaa722: "1bit-Adam is not
      compatible with ZeRO", "0/1 Adam is not compatible with ZeRO", "1bit-Lamb is not compatible
      with ZeRO".
    """

    code = "TL131"
    release_dependent = False
    name = "ds-onebit-optimizer-with-zero"
    default_severity = Severity.ERROR
    summary = "1-bit Adam / 0/1 Adam / 1-bit LAMB with ZeRO"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        found, stage = _optimizer(spec), _stage(spec)
        if found is None or stage is None or stage[0] == 0 or found[0] not in ONEBIT:
            return
        label = ONEBIT[found[0]]
        yield Finding(f"{found[0]} with ZeRO stage {stage[0]}; DeepSpeed stops: \"{label} is not compatible with ZeRO\"",
                      at=found[1], also=_also((stage[1], "ZeRO stage")), fix="use ZeRO stage 0 or another optimizer")


# =============================================================================== TL132


class ElasticBatchParams(Rule):
    """## What it does
    Reports elastic training (`elasticity.enabled`) with batch keys (`train_batch_size`,
    `train_micro_batch_size_per_gpu`, `gradient_accumulation_steps`) in the config, unless
    `elasticity.ignore_non_elastic_batch_info: true`.

    ## Why is this bad?
    Elasticity computes the batch itself; DeepSpeed refuses the config rather than silently
    ignore the keys.

    ## Example
    ```json
    {"train_batch_size": 256, "elasticity": {"enabled": true, "max_train_batch_size": 2048}}
    ```

    ## Fix
    Remove the batch keys, or set `elasticity.ignore_non_elastic_batch_info: true`.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:754-769` @ edaa722: "One or more batch related
      parameters were found in your ds_config ... These parameters *will not be used* since elastic
      training is enabled".
    """

    code = "TL132"
    release_dependent = False
    name = "ds-elastic-batch-params"
    default_severity = Severity.ERROR
    summary = "elasticity enabled with batch keys in the config (without ignore_non_elastic_batch_info)"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        enabled = ds(spec, "elasticity.enabled")
        if not as_bool(enabled) or as_bool(ds(spec, "elasticity.ignore_non_elastic_batch_info")):
            return
        keys = [k for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
                if ds_present(spec, k)]
        if not keys:
            return
        yield Finding(f"elastic training is enabled and the config sets {', '.join(keys)}; DeepSpeed stops: \"These "
                      "parameters *will not be used* since elastic training is enabled\"", at=ds_target(spec, keys[0]),
                      also=_also((enabled, "elasticity enabled")),
                      fix="remove the batch keys or set elasticity.ignore_non_elastic_batch_info: true")


# =============================================================================== TL133


class ElasticPipeline(Rule):
    """## What it does
    Reports elastic training with DeepSpeed's pipeline engine when
    `elasticity.num_gpus_per_node` is not a multiple of `elasticity.model_parallel_size`.

    ## Why is this bad?
    The pipeline engine then refuses elasticity at start-up.

    ## Example
    ```json
    {"pipeline": {"stages": 4}, "elasticity": {"enabled": true, "num_gpus_per_node": 8, "model_parallel_size": 3}}
    ```

    ## Fix
    Make `num_gpus_per_node` a multiple of `model_parallel_size`, or disable elasticity.

    ## References
    - DeepSpeed `deepspeed/runtime/pipe/engine.py:90-93` @ edaa722: "Elasticity is not currently
      supported with pipeline parallelism."; `is_elastic_model_parallel_supported`
      (`deepspeed/runtime/engine.py:1004-1010`).
    """

    code = "TL133"
    release_dependent = False
    name = "ds-elastic-pipeline"
    default_severity = Severity.ERROR
    summary = "elasticity with the pipeline engine when GPUs per node is not a multiple of the model-parallel size"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        enabled = ds(spec, "elasticity.enabled")
        engine = pipeline_engine(spec)
        if not as_bool(enabled) or engine is None:
            return
        gpn = as_int(ds(spec, "elasticity.num_gpus_per_node")) or 1
        mp_v = ds(spec, "elasticity.model_parallel_size")
        mp = as_int(mp_v) or 1
        if mp >= 1 and gpn % mp:
            yield Finding(f"elastic training with the pipeline engine ({engine.reason}) and num_gpus_per_node {gpn} not a "
                          f"multiple of model_parallel_size {mp}; DeepSpeed stops: \"Elasticity is not currently supported "
                          "with pipeline parallelism.\"", at=enabled, also=_also((mp_v, "model_parallel_size"),
                                                                                 (engine.at, "pipeline")))


# =============================================================================== TL134


class Bf16GradAccumPipeline(Rule):
    """## What it does
    Warns when a bf16 run on DeepSpeed's pipeline engine, without ZeRO, accumulates gradients
    of several micro-batches (gradient_accumulation_steps > 1) in bf16 (no
    `data_types.grad_accum_dtype: "fp32"`).

    ## Why is this bad?
    bf16 has 8 bits of mantissa: summing many micro-batch gradients in bf16 loses precision.
    DeepSpeed only prints a warning and trains on.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "pipeline": {"stages": 4}, "gradient_accumulation_steps": 32}
    ```

    ## Fix
    Add `"data_types": {"grad_accum_dtype": "fp32"}` (with ZeRO stage 1) — or keep few
    accumulation steps.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:2011-2017` @ edaa722: warning "BF16 gradient
      accumulation is not safe numerically with large number of accumulation steps, proceed with
      caution".
    """

    code = "TL134"
    release_dependent = False
    name = "ds-bf16-grad-accum-pipeline"
    default_severity = Severity.WARNING
    summary = "bf16 gradient accumulation on the pipeline engine without ZeRO (numerically unsafe)"
    requires = frozenset({CAP_DEEPSPEED_ENGINE})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        engine, stage = pipeline_engine(spec), _stage(spec)
        if engine is None or stage is None or stage[0] > 0 or as_str(spec.precision.dtype) != "bf16":
            return
        if as_bool(spec.precision.fp16_enabled):
            return  # DeeperSpeed's fp16 {type: bfloat16}: upstream DeepSpeed would run fp16 (TL103 territory)
        gas_v = spec.batch.grad_accum
        gas = as_int(gas_v)
        if gas is None or gas <= 1:
            return  # one micro-batch per step: nothing is accumulated
        accum_v = spec.precision.grad_accum_dtype
        accum = (as_str(accum_v) or "bf16").lower()
        if accum != "bf16" or (CAP_DEEPSPEED_CONFIG in capabilities(spec) and as_bool(ds_enabled(spec, "amp"))):
            return
        at = spec.precision.bf16_enabled if as_bool(spec.precision.bf16_enabled) else spec.precision.dtype
        yield Finding(f"bf16 on the pipeline engine ({engine.reason}) without ZeRO accumulates {gas} micro-batch gradients in bf16; "
                      "DeepSpeed only warns: \"BF16 gradient accumulation is not safe numerically with large number of "
                      "accumulation steps\"", at=at, also=_also((engine.at, "pipeline engine"), (gas_v, f"{gas} accumulation steps")),
                      fix="add data_types: {grad_accum_dtype: fp32} with ZeRO stage 1")


# =============================================================================== TL135


class MaxGradNormIgnored(Rule):
    """## What it does
    Warns when `optimizer.params.max_grad_norm` is set (> 0) without fp16.

    ## Why is this bad?
    Outside fp16 mode DeepSpeed silently sets it to 0: no clipping happens.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}}}
    ```

    ## Fix
    Use the top-level `gradient_clipping` instead.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:1060-1071` @ edaa722: "DeepSpeedConfig: In FP32 mode,
      DeepSpeed does not permit MAX_GRAD_NORM ({}) > 0, setting to zero".
    """

    code = "TL135"
    release_dependent = False
    name = "ds-max-grad-norm-ignored"
    default_severity = Severity.WARNING
    summary = "optimizer.params.max_grad_norm without fp16 is silently set to 0 (use gradient_clipping)"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        value = ds(spec, "optimizer.params.max_grad_norm")
        norm = as_number(value)
        if norm is None or norm <= 0 or as_bool(spec.precision.fp16_enabled) is not False:
            return
        yield Finding(f"optimizer.params.max_grad_norm {norm:g} without fp16: DeepSpeed sets it to 0 (\"DeepSpeed does "
                      "not permit MAX_GRAD_NORM > 0, setting to zero\"), so gradients are not clipped", at=value,
                      fix=f"remove it and set \"gradient_clipping\": {norm:g}")


# =============================================================================== TL136


class NvmePathMissing(Rule):
    """## What it does
    With ZeRO stage 3, reports NVMe offload (`offload_param.device` or
    `offload_optimizer.device` `"nvme"`) without an `nvme_path`.

    ## Why is this bad?
    DeepSpeed cannot place the swap files and stops when ZeRO-3 initialises.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}
    ```

    ## Fix
    Add `"nvme_path": "/local_nvme"` to the offload section.

    ## References
    - DeepSpeed `deepspeed/runtime/zero/partition_parameters.py:1211-1216` @ edaa722: "\\"nvme_path\\"
      in DeepSpeed Config cannot be None if remote device is nvme".
    """

    code = "TL136"
    release_dependent = False
    name = "ds-nvme-path-missing"
    default_severity = Severity.ERROR
    summary = "ZeRO-3 NVMe offload without nvme_path"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        stage = _stage(spec)
        if stage is None or stage[0] != 3:
            return
        for section in ("offload_param", "offload_optimizer"):
            device = ds(spec, f"zero_optimization.{section}.device")
            if (as_str(device) or "").lower() != "nvme":
                continue
            # file text: DeepSpeed's check is on nvme_path as written (null or absent)
            path = spec.settings.get(ds_key(spec, f"zero_optimization.{section}.nvme_path"))
            if path is None or path.value is None:
                yield Finding(f"zero_optimization.{section}.device is nvme but no nvme_path is given; DeepSpeed stops: "
                              "\"\\\"nvme_path\\\" in DeepSpeed Config cannot be None if remote device is nvme\"",
                              at=device, fix="add \"nvme_path\" with a local NVMe directory")


RULES: list[type] = [
    BatchSizeMissing,
    AllreduceSumUnsupported,
    MasterWeightsWithoutZero,
    PartialOffloadWithoutZero3,
    ParamDtypeConflict,
    UnsupportedOptimizer,
    LambStaticLossScale,
    UnmanagedGradAccumConflict,
    AmpConflict,
    ZeroUntestedOptimizer,
    GradAccumDtypeMix,
    OneBitOptimizerWithZero,
    ElasticBatchParams,
    ElasticPipeline,
    Bf16GradAccumPipeline,
    MaxGradNormIgnored,
    NvmePathMissing,
]
