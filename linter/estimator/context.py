"""What the estimate needs besides the config: which GPU, how many, and (often) the model.

Sources, first wins: CLI flags > project config (``[tool.trainlint]``: ``gpu``, ``nodes``,
``gpus-per-node``, ``model``, custom GPUs in ``[tool.trainlint.gpus.<id>]``) > the spec (cluster
fields a launcher gave) > built-in defaults (``h100-sxm``, 8 GPUs per node), always reported as
assumed. Every value carries a :class:`~trainlint.core.provenance.Provenance`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from trainlint.presets.catalog import GPU, CatalogError, find_gpu, gpu_from_dict, load_gpus
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec

if TYPE_CHECKING:
    from trainlint.project.config import ProjectConfig
    from trainlint.presets.models import ModelPreset  # the model half is imported only when a model is named

DEFAULT_GPU = "h100-sxm"
DEFAULT_GPUS_PER_NODE = 8


class ContextError(ValueError):
    """A GPU or model the user named cannot be used (unknown id, unreadable config.json...)."""


@dataclass
class EstimateContext:
    """What an estimate knows besides the spec: GPU, cluster size, model, vocabulary, run values, the GPU table."""

    gpu: Value                                  # Value[GPU]
    gpus_per_node: Value                        # Value[int]
    nodes: Value | None = None                  # Value[int]
    model: Value | None = None                  # Value[ModelPreset]
    vocab: Value | None = None                  # Value[int]: --vocab-size / `vocab-size`
    run_fill: dict[str, Value] = field(default_factory=dict)
    """estimate's --micro-batch-size / --seq-length / --grad-accum: spec field -> Value, for what the spec lacks."""
    gpus: dict[str, GPU] = field(default_factory=dict)
    """The catalog plus the project's custom GPUs."""

    @property
    def gpu_spec(self) -> GPU:
        gpu: GPU = self.gpu.value
        return gpu


def _prov(origin: Origin, note: str, path: str | None = None, key: str | None = None) -> Provenance:
    return Provenance(origin, path=path, key=key, note=note)


def _positive_int(raw: Any, what: str) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ContextError(f"{what} must be a positive integer, got {raw!r}") from None
    if isinstance(raw, bool) or value < 1 or (isinstance(raw, float) and raw != value):
        raise ContextError(f"{what} must be a positive integer, got {raw!r}")
    return value


def custom_gpus(project: ProjectConfig | None, base: Mapping[str, GPU] | None = None) -> dict[str, GPU]:
    """Catalog GPUs (or ``base``: the catalog with plugin GPUs) plus the project's
    ``[tool.trainlint.gpus.<id>]`` tables (same keys as gpus.json)."""
    table = dict(base) if base is not None else load_gpus()
    project_path = project.path if project is not None else None
    extra = project.estimation.gpus if project is not None and project.estimation.gpus is not None else {}
    if not isinstance(extra, dict):
        raise ContextError(f"{project_path or 'project config'}: `gpus` must be a table of GPU tables")
    for gid, entry in extra.items():
        if not isinstance(entry, dict):
            raise ContextError(f"{project_path or 'project config'}: [tool.trainlint.gpus.{gid}] must be a table")
        try:
            table[gid] = gpu_from_dict(gid, {"name": gid, **entry})
        except (KeyError, TypeError, ValueError) as exc:
            raise ContextError(f"{project_path or 'project config'}: custom GPU {gid!r}: missing or invalid {exc} "
                               "(give at least memory_gb and bf16_tflops or fp16_tflops)") from None
        bad = _unusable_figure(table[gid])
        if bad is not None:
            raise ContextError(f"{project_path or 'project config'}: custom GPU {gid!r}: `{bad[0]}` must be a positive "
                               f"number, got {bad[1]!r}")
    return table


_GPU_FIGURES = ("memory_gb", "memory_gib", "bf16_tflops", "fp16_tflops", "fp8_tflops", "tf32_tflops", "fp32_tflops",
                "hbm_bandwidth_tbps", "intra_node_bw_gbps", "inter_node_bw_gbps")


def _unusable_figure(gpu: GPU) -> tuple[str, Any] | None:
    """The first figure of a project's GPU that no estimate can divide by (0, negative, NaN, infinite)."""
    import math

    for name in _GPU_FIGURES:
        value = getattr(gpu, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            return name, value
    per_node = gpu.gpus_per_node
    if per_node is not None and (isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1):
        return "gpus_per_node", per_node
    return None


def resolve_model(name: str, origin: Origin, where: str | None = None,
                  presets: Mapping[str, ModelPreset] | None = None) -> Value:
    """A preset id (of ``presets``, default the shipped ones) or a local HF config.json (file or
    directory), as a Value[ModelPreset]."""
    from trainlint.presets.models import read_hf_config

    path = Path(name)
    try:
        if path.suffix == ".json" or path.is_dir() or path.is_file():
            preset = read_hf_config(path)
            note = f"Hugging Face config {name}"
        else:
            preset, note = _preset_or_cached(name, presets)
    except CatalogError as exc:
        raise ContextError(str(exc)) from None
    return Value(preset, _prov(origin, note, path=where, key="model" if origin is Origin.PROJECT_CONFIG else "--model"))


def _preset_or_cached(name: str, presets: Mapping[str, ModelPreset] | None) -> tuple[ModelPreset, str]:
    """A preset, else the config.json the local Hugging Face cache holds for the Hub id ``name``."""
    from trainlint.presets.models import preset_or_cached

    preset, cached = preset_or_cached(name, presets)
    if cached is None:
        return preset, f"model preset {preset.id}"
    return preset, f"Hugging Face config of {name} in the local cache ({cached})"


def build_context(spec: TrainingSpec | None = None, *, gpu: str | None = None, nodes: int | None = None,
                  gpus_per_node: int | None = None, model: str | None = None, vocab_size: int | None = None,
                  micro_batch: int | None = None, seq_length: int | None = None, grad_accum: int | None = None,
                  project: ProjectConfig | None = None, gpus: Mapping[str, GPU] | None = None,
                  presets: Mapping[str, ModelPreset] | None = None) -> EstimateContext:
    """Combine CLI flags, the project config (its typed ``estimation`` settings), the spec and defaults
    (in that order). ``gpus``: the GPU table in force (a session's: catalog, plugins and the project's ``gpus``),
    else the catalog with the project's ``gpus``; ``presets``: the model presets, else the shipped ones."""
    from trainlint.core.project_settings import EstimationSettings

    declared = project.estimation if project is not None else EstimationSettings()
    project_path = project.path if project is not None else None
    table = dict(gpus) if gpus is not None else custom_gpus(project)

    def pick_gpu() -> Value:
        if gpu is not None:
            return Value(_find_gpu(gpu, table), _prov(Origin.CLI, f"--gpu {gpu}", key="--gpu"))
        if declared.gpu is not None:
            return Value(_find_gpu(str(declared.gpu), table),
                         _prov(Origin.PROJECT_CONFIG, f"gpu = {declared.gpu!r}", project_path, "gpu"))
        if spec is not None and spec.cluster.gpu is not None:
            return Value(_find_gpu(str(spec.cluster.gpu.value), table), spec.cluster.gpu.provenance)
        return Value(table[DEFAULT_GPU], _prov(Origin.ASSUMED, f"no GPU given: {DEFAULT_GPU} assumed (--gpu ID to change)"))

    def pick_int(cli: int | None, key: str, spec_value: Value | None, flag: str) -> Value | None:
        if cli is not None:
            return Value(_positive_int(cli, flag), _prov(Origin.CLI, f"{flag} {cli}", key=flag))
        written = declared.by_key(key)
        if written is not None:
            return Value(_positive_int(written, f"[tool.trainlint] {key}"),
                         _prov(Origin.PROJECT_CONFIG, f"{key} = {written!r}", project_path, key))
        if spec_value is not None:
            return Value(_positive_int(spec_value.value, key), spec_value.provenance)
        return None

    gpu_value = pick_gpu()
    gpn = pick_int(gpus_per_node, "gpus-per-node", spec.cluster.gpus_per_node if spec else None, "--gpus-per-node")
    if gpn is None:
        gpn = Value(DEFAULT_GPUS_PER_NODE,
                    _prov(Origin.ASSUMED, f"{DEFAULT_GPUS_PER_NODE} GPUs per node assumed (--gpus-per-node N to change)"))
    node_value = pick_int(nodes, "nodes", spec.cluster.nodes if spec else None, "--nodes")

    model_value = None
    if model is not None:
        model_value = resolve_model(model, Origin.CLI, presets=presets)
    elif declared.model is not None:
        base = Path(project_path).parent if project_path else Path(".")
        name = str(declared.model)
        candidate = base / name
        model_value = resolve_model(str(candidate) if candidate.exists() else name, Origin.PROJECT_CONFIG, project_path,
                                    presets)
    vocab_value = pick_int(vocab_size, "vocab-size", None, "--vocab-size")
    run_fill = {name: Value(_positive_int(v, flag), _prov(Origin.CLI, f"{flag} {v}", key=flag))
                for name, v, flag in (("batch.micro_batch", micro_batch, "--micro-batch-size"),
                                      ("model.seq_length", seq_length, "--seq-length"),
                                      ("batch.grad_accum", grad_accum, "--grad-accum")) if v is not None}
    return EstimateContext(gpu=gpu_value, gpus_per_node=gpn, nodes=node_value, model=model_value, vocab=vocab_value,
                           run_fill=run_fill, gpus=table)


def find_gpu_in(name: str, table: Mapping[str, GPU]) -> GPU:
    """A GPU of ``table`` by id or alias; ContextError (a usage error) when there is none."""
    return _find_gpu(name, table)


def _find_gpu(name: str, table: Mapping[str, GPU]) -> GPU:
    try:
        return find_gpu(name, table)
    except CatalogError as exc:
        raise ContextError(str(exc)) from None


# --------------------------------------------------------------------------- model fill

_VOCAB_KEYS = ("--vocab-size", "vocab_size", "vocab-size", "padded_vocab_size", "padded-vocab-size", "--pad-vocab-size-to")


def _stated(prov: Provenance) -> bool:
    """The config itself states the vocabulary (the value, or a size it was padded from)."""
    if prov.origin is Origin.FILE:
        return True
    return any(p.origin is Origin.FILE and p.key in _VOCAB_KEYS for p in prov.inputs)


def _unresolved(value: Value | None) -> bool:
    return value is None or value.value is None or isinstance(value.value, str)


def fill_run(spec: TrainingSpec, values: Mapping[str, Value]) -> TrainingSpec:
    """A copy of ``spec`` whose missing batch / sequence fields come from estimate's flags (a bare
    DeepSpeed JSON of the Hugging Face Trainer keeps them on the command line). What the config
    states wins; an unresolved value (``"auto"``, ``$MBS``) counts as missing."""
    todo = {name: v for name, v in values.items() if _unresolved(spec.get(name))}
    if not todo:
        return spec
    out = copy.copy(spec)
    out.model, out.batch = copy.copy(spec.model), copy.copy(spec.batch)
    for name, value in todo.items():
        out.set(name, value)
    return out


def fill_vocab(spec: TrainingSpec, vocab: Value | None) -> TrainingSpec:
    """A copy of ``spec`` with the vocabulary --vocab-size (or the project's `vocab-size`) gives: it
    replaces a vocabulary derived from the tokenizer options or taken from --model, never one the
    config states itself."""
    if vocab is None:
        return spec
    current = spec.model.vocab_size
    if current is not None and _stated(current.provenance):
        return spec
    out = copy.copy(spec)
    out.model = copy.copy(spec.model)
    out.model.vocab_size = vocab
    return out
