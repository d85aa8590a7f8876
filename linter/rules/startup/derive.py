"""Helpers the launch-time rules share: reading spec values safely and deriving what each
framework derives at start-up (the data-parallel size, whether DeepSpeed's PipelineEngine is
engaged, the DeepSpeed settings of a run whatever adapter read them).

Every helper returns None when something it needs is unknown: the rules never guess.
Other rule modules may import from here (read-only); keep the signatures stable.
"""

from __future__ import annotations

from typing import Any

from trainlint.core.framework import framework_of
from trainlint.core.framework import PipelineEngine
from trainlint.core.provenance import Origin, Value
from trainlint.core.spec import TrainingSpec
from trainlint.core.values import as_bool, as_int, as_number, as_str, uncertain

__all__ = ["PipelineEngine", "as_bool", "as_int", "as_number", "as_str", "uncertain"]

DS_ENGINE = "deepspeed/runtime/engine.py"
DS_CONFIG = "deepspeed/runtime/config.py"
DS_PIPE = "deepspeed/runtime/pipe/engine.py"
DS_COMMIT = "edaa722"
MG_COMMIT = "d98e8a6"
NX_COMMIT = "ea7aefd"


# ------------------------------------------------------------------------------ plain values
# (the value readers are the core model's: trainlint.core.values; imported here for the rule modules)

def field_int(spec: TrainingSpec, dotted: str) -> int | None:
    return as_int(spec.get(dotted))


def is_default(value: Value | None) -> bool:
    return value is not None and value.provenance.origin is Origin.DEFAULT


def written(value: Value | None, fallback: str) -> str:
    """How a value was spelled where it was set (``--pipeline-model-parallel-size``), for messages."""
    if value is not None and value.provenance.key:
        return value.provenance.key
    return fallback


# ------------------------------------------------------------------------- DeepSpeed settings

# How each adapter keys the settings of a DeepSpeed JSON in ``spec.settings`` is the run's
# framework's answer (``Framework.deepspeed_prefix``): the DeepSpeed and NeoX adapters by the dotted
# path itself, the Megatron adapter (``--deepspeed_config``) prefixed.
#
# These helpers read the JSON's keys as written (file text) for DeepSpeed's own start-up checks,
# which are about what the file says; what the estimator and the cross-format rules need of a
# DeepSpeed JSON is in typed fields (``spec.engine``, ``spec.parallel``).


def ds_key(spec: TrainingSpec, dotted: str) -> str:
    """The ``spec.settings`` key of a DeepSpeed config entry (``zero_optimization.stage``)."""
    return framework_of(spec).deepspeed_prefix(spec) + dotted


def ds(spec: TrainingSpec, dotted: str) -> Value | None:
    """A DeepSpeed config entry as written, or None; unresolved ("auto") entries read as None."""
    value = spec.settings.get(ds_key(spec, dotted))
    if value is None or value.value == "auto":
        return None
    return value


def ds_present(spec: TrainingSpec, dotted: str) -> bool:
    """Whether the DeepSpeed config has the entry or anything under it, whatever its value."""
    key = ds_key(spec, dotted)
    return key in spec.settings or any(k.startswith(key + ".") for k in spec.settings)


def ds_target(spec: TrainingSpec, dotted: str) -> str:
    return "settings:" + ds_key(spec, dotted)


def ds_has_auto(spec: TrainingSpec) -> bool:
    """True when the DeepSpeed config leaves values to the Hugging Face Trainer / Accelerate
    ("auto"): they also fill in what the file leaves out, so absences prove nothing."""
    prefix = framework_of(spec).deepspeed_prefix(spec)
    return any(k.startswith(prefix) and v.value == "auto" for k, v in spec.settings.items())


def ds_enabled(spec: TrainingSpec, section: str) -> Value | None:
    """``<section>.enabled`` as written (None when absent or not a bool)."""
    value = ds(spec, f"{section}.enabled")
    return value if as_bool(value) is not None else None


# ------------------------------------------------------------------------------- ZeRO stage


def zero_stage(spec: TrainingSpec) -> Value | None:
    """The ZeRO stage (0..3) the DeepSpeed engine will use, None when unknown."""
    value = spec.parallel.zero_stage
    stage = as_int(value)
    if stage is None or not 0 <= stage <= 3:
        return None
    return value


# --------------------------------------------------------------------------- data parallel
# The data-parallel size is the core model's (trainlint.core.framework: one function for the rules, the
# estimator and the layout search); re-exported here for the rule modules that import it from derive.
from trainlint.core.framework import DataParallel, data_parallel, model_parallel_product  # noqa: E402,F401


# ----------------------------------------------------------------------- pipeline engine


def pipeline_engine(spec: TrainingSpec) -> PipelineEngine | None:
    """Whether the run is wrapped in DeepSpeed's PipelineEngine (the run's framework says,
    ``Framework.pipeline_engine``); None when not, or unknown."""
    return framework_of(spec).pipeline_engine(spec)


# ------------------------------------------------------------------------------- messages


def fmt(number: float | int) -> str:
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return str(number)


def any_value(*values: Any) -> bool:
    return any(v is not None for v in values)


# ------------------------------------------------------------------- incomplete argument sets


def partial_args(spec: TrainingSpec) -> bool:
    """A Megatron spec read from flag variables or a MODEL_ARGS file rather than a launch command:
    whoever uses it may add flags, so the framework defaults it falls back to prove nothing."""
    return framework_of(spec).partial_arguments(spec)


def from_checkpoint(spec: TrainingSpec) -> bool:
    """Megatron ``--use-checkpoint-args``: the model shape and parallel sizes come from the
    checkpoint, not from the flags."""
    return bool(as_bool(spec.run.shape_from_checkpoint))


def defaulted_in_partial(spec: TrainingSpec, *values: Value | None) -> bool:
    """True when one of the values is a framework default in a partial argument set."""
    return partial_args(spec) and any(is_default(v) for v in values)
