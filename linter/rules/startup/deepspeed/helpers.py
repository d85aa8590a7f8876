"""What the DeepSpeed start-up rules share: the config's optimizer, model dtype and ZeRO stage as written,
and the optimizer names DeepSpeed knows."""

from __future__ import annotations


from trainlint.core.framework import CAP_DEEPSPEED_CONFIG
from trainlint.core.provenance import Value
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    as_str,
    ds,
    zero_stage,
)
from trainlint.core.spec import TrainingSpec


DS = frozenset({CAP_DEEPSPEED_CONFIG})  # the run's settings are a DeepSpeed config


# deepspeed/runtime/config.py:71-87 @ edaa722 (compared lower-case, config.py:840-842).
DEEPSPEED_OPTIMIZERS = ("adagrad", "adam", "adamw", "lamb", "onebitadam", "onebitlamb", "zerooneadam", "muadam",
                        "muadamw", "musgd", "lion", "muon")


# torch.optim classes DeepSpeed also accepts by exact (case-sensitive) name (engine.py:1660-1661).
TORCH_OPTIMIZERS = ("Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "ASGD", "LBFGS", "Muon", "NAdam",
                    "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam")


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
