"""Helpers the launch-time rules share: reading spec values safely and deriving what each
framework derives at start-up (the data-parallel size, whether DeepSpeed's PipelineEngine is
engaged, the DeepSpeed settings of a run whatever adapter read them).

Every helper returns None when something it needs is unknown: the rules never guess.
Other rule modules may import from here (read-only); keep the signatures stable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trainlint.provenance import Origin, Value
from trainlint.spec import TrainingSpec

DS_ENGINE = "deepspeed/runtime/engine.py"
DS_CONFIG = "deepspeed/runtime/config.py"
DS_PIPE = "deepspeed/runtime/pipe/engine.py"
DS_COMMIT = "edaa722"
MG_COMMIT = "d98e8a6"
NX_COMMIT = "ea7aefd"


# ------------------------------------------------------------------------------ plain values


def uncertain(value: Value | None) -> bool:
    """A value the adapter took from one branch of a shell ``if``/``case`` it could not decide:
    the rules treat it as unknown rather than act on a guess."""
    return value is not None and value.provenance.uncertain


def as_int(value: Value | None) -> int | None:
    """The value as an int (an integral float counts), None for bool, strings, unknowns."""
    if value is None or uncertain(value):
        return None
    raw = value.value
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        return int(raw)
    return None


def as_bool(value: Value | None) -> bool | None:
    if value is None or uncertain(value):
        return None
    return value.value if isinstance(value.value, bool) else None


def as_str(value: Value | None) -> str | None:
    if value is None or uncertain(value) or not isinstance(value.value, str):
        return None
    return value.value


def as_number(value: Value | None) -> float | None:
    if value is None or uncertain(value) or isinstance(value.value, bool) or not isinstance(value.value, (int, float)):
        return None
    return float(value.value)


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

DS_PREFIX = {"megatron": "deepspeed:"}
"""How each adapter keys the settings of a DeepSpeed JSON in ``spec.settings``: the DeepSpeed and
NeoX adapters by the dotted path itself, the Megatron adapter (``--deepspeed_config``) prefixed.

These helpers read the JSON's keys as written (file text) for DeepSpeed's own start-up checks,
which are about what the file says; what the estimator and the cross-format rules need of a
DeepSpeed JSON is in typed fields (``spec.engine``, ``spec.parallel``)."""


def ds_key(spec: TrainingSpec, dotted: str) -> str:
    """The ``spec.settings`` key of a DeepSpeed config entry (``zero_optimization.stage``)."""
    return DS_PREFIX.get(spec.framework, "") + dotted


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
    prefix = DS_PREFIX.get(spec.framework, "")
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


@dataclass(frozen=True)
class DataParallel:
    """The data-parallel size of a run and the arithmetic that gave it from the world size."""

    size: int
    how: str
    """The arithmetic, for messages: "world 16 / (TP 2 x PP 2 x CP 1)"."""
    world: Value
    divisors: tuple[tuple[Value | None, str], ...]
    """The model-parallel values divided out, with a note each (for ``also``)."""


def model_parallel_product(spec: TrainingSpec) -> tuple[int, str, tuple[tuple[Value | None, str], ...]] | None:
    """The product each framework divides the world size by to get DP, with its description.

    Megatron: TP x PP x CP (megatron/training/arguments.py); NeoX: pipe_parallel_size x
    model_parallel_size, each clamped to >= 1 (megatron/neox_arguments/arguments.py,
    calculate_derived); DeepSpeed: the mpu's model-parallel size, here AutoTP x pipeline stages
    when the config gives them, else 1 (deepspeed/runtime/config.py)."""
    p = spec.parallel
    if spec.framework == "megatron":
        tp, pp, cp = as_int(p.tensor), as_int(p.pipeline), as_int(p.context)
        if tp is None or pp is None or cp is None or min(tp, pp, cp) < 1:
            return None
        return (tp * pp * cp, f"TP {tp} x PP {pp} x CP {cp}",
                ((p.tensor, f"tensor parallel {tp}"), (p.pipeline, f"pipeline parallel {pp}"),
                 (p.context, f"context parallel {cp}")))
    if spec.framework == "neox":
        mp, pp = as_int(p.tensor), as_int(p.pipeline)
        if mp is None or pp is None:
            return None
        mp, pp = max(mp, 1), max(pp, 1)
        return (mp * pp, f"pipe_parallel_size {pp} x model_parallel_size {mp}",
                ((p.pipeline, f"pipeline stages {pp}"), (p.tensor, f"model_parallel_size {mp}")))
    tp = as_int(p.tensor) or 1
    pp = as_int(p.pipeline) or 1
    return (tp * pp, f"TP {tp} x pipeline stages {pp}",
            ((p.tensor, f"tensor parallel {tp}"), (p.pipeline, f"pipeline stages {pp}")))


def data_parallel(spec: TrainingSpec) -> DataParallel | None:
    """DP as the framework computes it from the world size; None when the world size is unknown
    or not divisible (TL101 reports that)."""
    world = spec.cluster.world_size
    n = as_int(world)
    product = model_parallel_product(spec)
    if world is None or n is None or n < 1 or product is None:
        return None
    size, how, divisors = product
    if size < 1 or n % size:
        return None
    return DataParallel(n // size, f"world size {n} / ({how})", world, divisors)


# ----------------------------------------------------------------------- pipeline engine


@dataclass(frozen=True)
class PipelineEngine:
    """Why DeepSpeed's PipelineEngine is engaged for a run."""

    reason: str
    at: Value | None
    """The value that engages it (``pipe_parallel_size``, ``pipeline.stages``, ``--deepspeed``)."""
    stages: int | None
    only_wrapper: bool
    """True when the engine is engaged without real pipeline parallelism (one stage): the fix is
    then to leave the engine out rather than to change the ZeRO stage."""


_PIPE_MODEL_ENTRIES = ("gpt", )
"""Megatron-DeepSpeed entry points that build a PipelineModule (GPTModelPipe) whenever
``--deepspeed`` is given without ``--no-pipeline-parallel`` (pretrain_gpt.py, pretrain_llama...)."""


def pipeline_engine(spec: TrainingSpec) -> PipelineEngine | None:
    """Whether the run is wrapped in DeepSpeed's PipelineEngine; None when not, or unknown."""
    p = spec.parallel
    stages = as_int(p.pipeline)
    if spec.framework == "neox":
        engaged = as_bool(p.pipeline_engine)
        if not engaged:
            return None
        # engaged: pipe_parallel_size >= 1, which the adapter takes as parallel.pipeline as written
        pp_value = as_int(p.pipeline)
        return PipelineEngine(
            f"pipe_parallel_size {pp_value} >= 1 wraps the model in DeepSpeed's PipelineEngine "
            "(is_pipe_parallel = pipe_parallel_size >= 1, megatron/neox_arguments/arguments.py)",
            p.pipeline, pp_value, pp_value == 1)
    if spec.framework == "megatron":
        engaged = as_bool(p.pipeline_engine)
        deepspeed_flag = spec.engine.deepspeed_flag
        if not engaged or not as_bool(deepspeed_flag):
            return None
        if stages is not None and stages > 1:
            return PipelineEngine(
                f"--deepspeed with pipeline parallel size {stages} runs DeepSpeed's PipelineEngine "
                "(Megatron-DeepSpeed builds GPTModelPipe unless --no-pipeline-parallel)",
                p.pipeline, stages, False)
        arch = as_str(spec.model.architecture)
        if stages == 1 and arch in _PIPE_MODEL_ENTRIES:
            return PipelineEngine(
                "--deepspeed without --no-pipeline-parallel: Megatron-DeepSpeed's pretrain_gpt.py builds "
                "GPTModelPipe, a PipelineModule, even with pipeline parallel size 1, so DeepSpeed runs its "
                "PipelineEngine", deepspeed_flag, stages, True)
        return None
    # A DeepSpeed JSON: the engine is chosen by the model class in code (PipelineModule); the
    # config says so when it gives pipeline stages > 1, or when the spec says it explicitly.
    explicit = as_bool(p.pipeline_engine)
    if explicit:
        return PipelineEngine("the run uses DeepSpeed's PipelineEngine", p.pipeline_engine, stages, False)
    if explicit is None and stages is not None and stages > 1:
        return PipelineEngine(f"pipeline.stages {stages}: the model is a PipelineModule run by DeepSpeed's "
                              "PipelineEngine", p.pipeline, stages, False)
    return None


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
    return spec.framework == "megatron" and " at line " not in spec.label and " in " not in spec.label


def from_checkpoint(spec: TrainingSpec) -> bool:
    """Megatron ``--use-checkpoint-args``: the model shape and parallel sizes come from the
    checkpoint, not from the flags."""
    return bool(as_bool(spec.run.shape_from_checkpoint))


def defaulted_in_partial(spec: TrainingSpec, *values: Value | None) -> bool:
    """True when one of the values is a framework default in a partial argument set."""
    return partial_args(spec) and any(is_default(v) for v in values)
