"""TL103: fp16 and bf16 both enabled, or a precision setting disagreeing with the fp16/bf16 blocks"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS, CAP_NEOX_ARGUMENTS, CAP_STARTUP_CHECKS
from trainlint.core.diagnostics import Severity
from trainlint.core.provenance import Value
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.startup.derive import (
    as_bool,
    as_str,
    ds,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also


def _later(a: Value, b: Value) -> tuple[Value, Value]:
    """(the one written later, the other): the later one is usually the edit that broke it."""
    sa, sb = a.span, b.span
    if sa is not None and sb is not None and a.provenance.path == b.provenance.path and sa > sb:
        return a, b
    return (b, a) if sb is not None else (a, b)


def _both_on(fp16: Value, bf16: Value, fp16_name: str, bf16_name: str, quote: str) -> Finding:
    at, other = _later(fp16, bf16)
    return Finding(f"{fp16_name} and {bf16_name} are both on; {quote}", at=at,
                   also=((other, "the other half-precision mode enabled here"),),
                   fix="enable only one of fp16 and bf16")


class PrecisionConflict(Rule):
    """## What it does
    Reports fp16 and bf16 enabled together, and (GPT-NeoX) a `precision` key that disagrees with
    the `fp16` / `bf16` DeepSpeed blocks. In a Megatron-DeepSpeed launch it also warns when the
    `--fp16` / `--bf16` flag and the DeepSpeed config enable different half-precision modes.

    ## Why is this bad?
    Every framework refuses the combination at start-up; in Megatron-DeepSpeed a flag that
    disagrees with the DeepSpeed config makes Megatron build the model in one dtype and
    DeepSpeed's engine run it in the other.

    ## Example
    ```yaml
    precision: bfloat16
    fp16: {enabled: true}
    ```

    ## Fix
    Enable exactly one of them, and make NeoX's `precision` match it (or leave `precision` out).

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:827-828` @ edaa722: "bfloat16 and fp16 modes cannot be
      simultaneously enabled".
    - Megatron-LM `megatron/training/arguments.py:1195-1206` (`assert not args.bf16`) and
      `megatron/core/transformer/transformer_config.py:1432-1435` @ d98e8a6: "Only one of self.fp16:
      ... and self.bf16 ... should be True."
    - GPT-NeoX `megatron/neox_arguments/arguments.py:966-979` @ ea7aefd: "DeepSpeed fp16 field was
      set but precision conflicts" / "DeepSpeed bf16 field was set but precision conflicts".
    """

    code = "TL103"
    release_dependent = False
    name = "precision-conflict"
    default_severity = Severity.ERROR
    summary = "fp16 and bf16 both enabled, or a precision setting disagreeing with the fp16/bf16 blocks"
    requires = frozenset({CAP_STARTUP_CHECKS})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if CAP_MEGATRON_ARGUMENTS in capabilities(spec):
            yield from self._megatron(spec)
        elif CAP_NEOX_ARGUMENTS in capabilities(spec):
            yield from self._neox(spec)
        else:
            fp16, bf16 = spec.precision.fp16_enabled, spec.precision.bf16_enabled
            if fp16 is not None and bf16 is not None and as_bool(fp16) and as_bool(bf16):
                yield _both_on(fp16, bf16, "fp16.enabled", "bf16.enabled",
                               "DeepSpeed stops: \"bfloat16 and fp16 modes cannot be simultaneously enabled\"")

    def _megatron(self, spec: TrainingSpec) -> Iterator[Finding]:
        # file text: Megatron's own check is on --fp16 / --bf16 as written, apart from the merged JSON's blocks
        fp16_flag, bf16_flag = spec.settings.get("fp16"), spec.settings.get("bf16")
        if fp16_flag is not None and bf16_flag is not None and as_bool(fp16_flag) and as_bool(bf16_flag):
            yield _both_on(fp16_flag, bf16_flag, "--fp16", "--bf16",
                           "Megatron stops: \"Only one of self.fp16 ... and self.bf16 ... should be True.\"")
            return
        ds_fp16, ds_bf16 = ds(spec, "fp16.enabled"), ds(spec, "bf16.enabled") or ds(spec, "bfloat16.enabled")
        if ds_fp16 is not None and ds_bf16 is not None and as_bool(ds_fp16) and as_bool(ds_bf16):
            yield _both_on(ds_fp16, ds_bf16, "fp16.enabled", "bf16.enabled",
                           "DeepSpeed stops: \"bfloat16 and fp16 modes cannot be simultaneously enabled\"")
            return
        for flag, name, other, other_name in ((fp16_flag, "--fp16", ds_bf16, "bf16.enabled"),
                                              (bf16_flag, "--bf16", ds_fp16, "fp16.enabled")):
            if as_bool(flag) and as_bool(other):
                yield Finding(
                    f"{name} is given but the DeepSpeed config sets {other_name}: true; Megatron builds the model in "
                    f"one half precision and DeepSpeed's engine runs it in the other",
                    at=other, also=_also((flag, f"{name} here")), severity=Severity.WARNING,
                    fix=f"make the DeepSpeed config enable the same mode as {name}")

    def _neox(self, spec: TrainingSpec) -> Iterator[Finding]:
        # file text: NeoX's own check compares the keys as written (precision against the fp16 / bf16 blocks)
        fp16 = spec.settings.get("fp16.enabled")
        bf16 = spec.settings.get("bf16.enabled")
        precision = spec.settings.get("precision")
        prec = as_str(precision)
        fp16_on, bf16_on = as_bool(fp16) is True, as_bool(bf16) is True
        if fp16 is not None and bf16 is not None and fp16_on and bf16_on and prec is None:
            yield _both_on(fp16, bf16, "fp16.enabled", "bf16.enabled",
                           "NeoX sets precision fp16 from the first, then stops: \"DeepSpeed bf16 field was set but "
                           "precision conflicts\"")
            return
        if prec is None:
            return
        fp16_type = as_str(spec.settings.get("fp16.type"))
        if fp16_on and prec.lower() != "fp16":
            hint = (" (`fp16.type: bfloat16` is the old DeeperSpeed way of asking for bf16; current NeoX "
                    "wants `bf16: {enabled: true}`)" if fp16_type and fp16_type.lower() in ("bfloat16", "bf16") else "")
            yield Finding(
                f"precision is {prec} but fp16.enabled is true{hint}; NeoX stops: \"DeepSpeed fp16 field was set but "
                "precision conflicts\"", at=fp16, also=_also((precision, "precision here")),
                fix="remove the fp16 block or set `precision: fp16`")
        if bf16_on and prec.lower() != "bfloat16":
            yield Finding(
                f"precision is {prec} but bf16.enabled is true; NeoX stops: \"DeepSpeed bf16 field was set but precision "
                "conflicts\"", at=bf16, also=_also((precision, "precision here")),
                fix="remove the bf16 block or set `precision: bfloat16`")
