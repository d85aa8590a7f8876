"""TL100: global batch != micro batch x gradient accumulation x data-parallel size (DP as each framework computes it)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_DEEPSPEED_CONFIG, CAP_MEGATRON_ARGUMENTS, CAP_STARTUP_CHECKS
from trainlint.core.diagnostics import Severity
from trainlint.core.provenance import Origin, Value
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.startup.derive import (
    as_int,
    data_parallel,
    ds,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also


def _value_fix(value: Value | None, new_text: str) -> dict:
    """An unsafe fix replacing a value as written in a config file (the DeepSpeed config's
    ``train_batch_size`` beside a Megatron-DeepSpeed script -> the one derivable from the other
    two and DP). Unsafe: it changes the batch the run trains with, and picking that key rather
    than the micro batch or accumulation is a choice."""
    from trainlint.core.diagnostics import Applicability, Edit

    prov = value.provenance if value is not None else None
    if prov is None or prov.origin is not Origin.FILE or prov.span is None or prov.path is None or prov.inputs \
            or prov.span.line != prov.span.end_line:
        return {}
    return {"applicability": Applicability.UNSAFE, "edits": (Edit(prov.span, new_text, prov.path),)}


def _global_batch_fix(spec: TrainingSpec, value: Value | None, size: int) -> dict:
    """The run's own global batch set to ``size``, as a layout change its adapter writes
    (``Finding.changes``: under ``--fix`` / ``--diff`` and in the editor, ``Adapter.writer`` with
    the round trip verified; a value from a variable is written where the variable is set), a
    plugin format's too. Unsafe, as :func:`_value_fix`."""
    from trainlint.core.diagnostics import Applicability

    if value is None or value.provenance.origin is not Origin.FILE:
        return {}
    return {"applicability": Applicability.UNSAFE, "changes": {"batch.global_batch": size}}


def _spelled_global_batch(spec: TrainingSpec, size: int, ctx: RuleContext) -> str:
    """``train_batch_size: 64`` as the run's adapter spells it (``Adapter.spell_changes``)."""
    from trainlint.layout.candidate import spell_changes

    return ", ".join(spell_changes(spec, None, {"batch.global_batch": size}, ctx.adapters))


class BatchSizeMismatch(Rule):
    """## What it does
    Checks the batch triple the way each framework checks it at start-up: the global batch must
    equal micro batch x gradient accumulation x data-parallel size, with the data-parallel size
    computed as that framework computes it (Megatron: world / (TP x PP x CP); GPT-NeoX:
    world / pipe_parallel_size / model_parallel_size; DeepSpeed: world / the mpu's model-parallel
    size). When the world size is unknown (a bare DeepSpeed JSON) it reports what no world size
    can fix: a global batch not divisible by micro x accumulation.

    ## Why is this bad?
    The job waits in the queue and then dies at start-up with an assertion.

    ## Example
    ```json
    {"train_batch_size": 500, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8}
    ```
    500 is not a multiple of 4 x 8 = 32: no data-parallel size satisfies the triple.

    ## Fix
    Give two of the three and let the framework derive the third, or make the product exact for
    the world size you launch with.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:937-940` @ edaa722 (`_batch_assertion`):
      `assert train_batch == micro_batch * grad_acc * self.world_size` — "Check batch related
      parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step *
      world_size"; derivation of the missing member in `_set_batch_related_parameters`
      (config.py:944-985); the pipeline engine re-checks with the grid's DP
      (`deepspeed/runtime/pipe/engine.py:109-111`).
    - Megatron-LM `megatron/core/num_microbatches_calculator.py:381-385` @ d98e8a6: "global batch
      size ({}) is not divisible by micro batch size ({}) times data parallel size ({})".
    - GPT-NeoX `megatron/neox_arguments/arguments.py:866-883` @ ea7aefd (`check_batch_parameters`):
      "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size".
    """

    code = "TL100"
    release_dependent = False
    name = "batch-size-mismatch"
    default_severity = Severity.ERROR
    summary = "global batch != micro batch x gradient accumulation x data-parallel size (DP as each framework computes it)"
    requires = frozenset()  # every format: a plugin format's run is checked on its batch fields (see _triple)

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if CAP_MEGATRON_ARGUMENTS in capabilities(spec):
            yield from self._megatron(spec, ctx)
            yield from self._triple(spec, ds(spec, "train_batch_size"), ds(spec, "train_micro_batch_size_per_gpu"),
                                    ds(spec, "gradient_accumulation_steps"), "the DeepSpeed config's ", ctx)
        elif CAP_DEEPSPEED_CONFIG in capabilities(spec):
            # file text: an "auto" written in the JSON is the HF Trainer's to fill at launch
            if any(spec.settings.get(k) is not None and spec.settings[k].value == "auto"
                   for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")):
                return
            yield from self._triple(spec, ds(spec, "train_batch_size"), ds(spec, "train_micro_batch_size_per_gpu"),
                                    ds(spec, "gradient_accumulation_steps"), "", ctx)
        else:
            yield from self._triple(spec, spec.batch.global_batch, spec.batch.micro_batch, spec.batch.grad_accum, "", ctx)

    def _megatron(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        b = spec.batch
        gbs, mbs = b.global_batch, b.micro_batch
        g, m = as_int(gbs), as_int(mbs)
        if gbs is None or g is None or m is None or g < 1 or m < 1 or gbs.provenance.origin is not Origin.FILE:
            return
        if spec.dialect == "legacy" and not (gbs.provenance.key or "").startswith("--"):
            # Megatron before --global-batch-size (v1.x, as DeepSpeedExamples vendor it) has no such
            # assertion: the global batch here is the DeepSpeed JSON's train_batch_size, which
            # DeepSpeed checks (and derives the micro batch from) itself: _triple below.
            return
        if spec.batch.schedule is not None:
            return  # the start batch follows the schedule, not --global-batch-size
        dp = data_parallel(spec)
        if dp is not None:
            per_step = m * dp.size
            if g % per_step:
                yield Finding(
                    f"global batch size {g} is not divisible by micro batch size {m} x data-parallel size {dp.size} = "
                    f"{per_step} (DP = {dp.how}); Megatron stops: \"global batch size ({g}) is not divisible by micro "
                    f"batch size ({m}) times data parallel size ({dp.size})\"",
                    at=gbs, also=_also((mbs, "micro batch size"), (dp.world, "world size"), *dp.divisors),
                    **self._nearest_global_batch(spec, gbs, g, per_step, ctx))
        elif g % m:
            yield Finding(
                f"global batch size {g} is not divisible by micro batch size {m}, so it cannot be micro batch x "
                "data-parallel size x microbatches for any world size; Megatron stops: \"global batch size is not "
                "divisible by micro batch size times data parallel size\"",
                at=gbs, also=_also((mbs, "micro batch size")),
                fix=f"use a global batch size that is a multiple of {m}")

    def _triple(self, spec: TrainingSpec, tbs: Value | None, mbs: Value | None, gas: Value | None,
                whose: str, ctx: RuleContext) -> Iterator[Finding]:
        t, m, a = as_int(tbs), as_int(mbs), as_int(gas)
        if any(x is not None and x < 1 for x in (t, m, a)):
            return  # non-positive values are schema errors (TL006)
        if t is None or (m is None and a is None):
            return  # the framework derives the rest consistently
        dp = data_parallel(spec)
        if CAP_STARTUP_CHECKS not in capabilities(spec):
            yield from self._plugin_triple(spec, tbs, mbs, gas, ctx)
            return
        quote = ("\"Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
                 "gradient_acc_step * world_size\"")
        also = _also((mbs, "micro batch per GPU"), (gas, "gradient accumulation steps"))
        if dp is not None:
            d = dp.size
            also_dp = also + _also((dp.world, "world size"), *dp.divisors)
            if m is not None and a is not None:
                if t != m * a * d:
                    yield Finding(
                        f"{whose}train_batch_size {t} != micro {m} x grad_accum {a} x DP {d} = {m * a * d} "
                        f"(DP = {dp.how}); DeepSpeed stops: {quote}",
                        at=tbs, also=also_dp, **self._set_global_batch(spec, tbs, m * a * d, whose, ctx))
            elif m is not None:
                derived_gas = (t // m) // d
                if derived_gas < 1 or t != m * derived_gas * d:
                    yield Finding(
                        f"{whose}train_batch_size {t} is not micro {m} x DP {d} x any whole number of accumulation "
                        f"steps (DeepSpeed derives gradient_accumulation_steps = {t} // {m} // {d} = {derived_gas}; "
                        f"DP = {dp.how}); DeepSpeed stops: {quote}",
                        at=tbs, also=also_dp, fix=f"use a train_batch_size that is a multiple of {m * d}")
            else:
                assert a is not None  # micro and accumulation both missing returned above
                derived_micro = (t // d) // a
                if derived_micro < 1 or t != derived_micro * a * d:
                    yield Finding(
                        f"{whose}train_batch_size {t} is not grad_accum {a} x DP {d} x any whole micro batch "
                        f"(DeepSpeed derives train_micro_batch_size_per_gpu = {t} // {d} // {a} = {derived_micro}; "
                        f"DP = {dp.how}); DeepSpeed stops: {quote}",
                        at=tbs, also=also_dp, fix=f"use a train_batch_size that is a multiple of {a * d}")
            return
        per_replica = (m or 1) * (a or 1)
        if t % per_replica:
            parts = " x ".join(p for p in (f"micro {m}" if m is not None else "", f"grad_accum {a}" if a is not None else "") if p)
            yield Finding(
                f"{whose}train_batch_size {t} is not divisible by {parts} = {per_replica}: no data-parallel size makes "
                f"train_batch_size = micro x grad_accum x DP; DeepSpeed stops: {quote}",
                at=tbs, also=also, fix=f"use a train_batch_size that is a multiple of {per_replica}")


    @staticmethod
    def _set_global_batch(spec: TrainingSpec, tbs: Value | None, size: int, whose: str, ctx: RuleContext) -> dict:
        """The fix: the run's own global batch spelled and written by its adapter; the DeepSpeed
        config's beside a Megatron-DeepSpeed script (not a field of the run) edited in place."""
        if whose:
            return {"fix": f"set {whose}train_batch_size to {size}, or leave one of the three out",
                    **_value_fix(tbs, str(size))}
        spelled = _spelled_global_batch(spec, size, ctx) or f"the global batch to {size}"
        return {"fix": f"set {spelled}, or leave one of the three out", **_global_batch_fix(spec, tbs, size)}

    @staticmethod
    def _nearest_global_batch(spec: TrainingSpec, gbs: Value, g: int, per_step: int, ctx: RuleContext) -> dict:
        """The fix: the multiple of micro x DP nearest the written global batch (at least one step's
        worth), written by the run's adapter (a Megatron-LM script's ``--global-batch-size``, a Bridge
        ``train.global_batch_size``); unsafe: it changes the batch the run trains with."""
        size = max(per_step, (g + per_step // 2) // per_step * per_step)
        spelled = _spelled_global_batch(spec, size, ctx) or f"the global batch to {size}"
        return {"fix": f"use a global batch size that is a multiple of {per_step}: {spelled}",
                **_global_batch_fix(spec, gbs, size)}

    def _plugin_triple(self, spec: TrainingSpec, tbs: Value | None, mbs: Value | None, gas: Value | None,
                       ctx: RuleContext) -> Iterator[Finding]:
        """A plugin format's run: its batch fields must multiply out (global = micro x accumulation x
        DP, DP from the world size over TP x PP); no framework's own wording or derivation."""
        t, m, a, dp = as_int(tbs), as_int(mbs), as_int(gas), data_parallel(spec)
        if t is None or m is None or a is None or dp is None or t == m * a * dp.size:
            return
        yield Finding(
            f"global batch {t} != micro batch {m} x gradient accumulation {a} x DP {dp.size} = {m * a * dp.size} "
            f"(DP = {dp.how})",
            at=tbs, also=_also((mbs, "micro batch"), (gas, "gradient accumulation"), (dp.world, "world size"), *dp.divisors),
            **self._set_global_batch(spec, tbs, m * a * dp.size, "", ctx))
