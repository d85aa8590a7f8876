"""An ``accelerate launch --config_file FILE`` YAML: the launch settings a run takes from it.

Accelerate's config (accelerate/commands/config/config_args.py) is a flat YAML mapping; what sets
the world size is ``num_processes`` (the total over all machines) and ``num_machines``; with
DeepSpeed, ``deepspeed_config: {deepspeed_config_file: ds.json}`` names the JSON. Options given on the
command line win over the file (accelerate's launch merges them so). Read with the safe loader,
bounded, only inside the project; never executed.

Without a ``deepspeed_config_file``, the DeepSpeed settings are written inline
(``deepspeed_config: {zero_stage: 3, offload_optimizer_device: none, ...}`` with ``distributed_type:
DEEPSPEED``): accelerate's launcher hands them to the training process as environment variables and
its ``DeepSpeedPlugin`` (accelerate/utils/dataclasses.py) builds the DeepSpeed config from them —
:func:`inline_deepspeed` builds the same config, each value located at its YAML key (or at the
``accelerate launch`` option that overrides it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from trainlint.core.positions import Span
from trainlint.core.provenance import Origin, Provenance, Value

MAX_CONFIG_BYTES = 256 * 1024

PLUGIN_PY = "accelerate/utils/dataclasses.py DeepSpeedPlugin"
INLINE_KEYS = ("zero_stage", "offload_optimizer_device", "offload_param_device", "offload_optimizer_nvme_path",
               "offload_param_nvme_path", "gradient_accumulation_steps", "gradient_clipping", "zero3_init_flag",
               "zero3_save_16bit_model")
"""The ``deepspeed_config`` keys (and ``accelerate launch`` options) the DeepSpeedPlugin reads."""
_OFFLOAD_DEVICES = ("none", "cpu", "nvme")
_MIXED = ("no", "fp16", "bf16", "fp8")


@dataclass
class AccelerateConfig:
    path: str
    num_processes: Value | None = None
    num_machines: Value | None = None
    deepspeed_config_file: str | None = None
    distributed_type: str | None = None
    mixed_precision: Value | None = None
    """``mixed_precision`` (no | fp16 | bf16 | fp8), located at its key."""
    deepspeed: dict[str, Value] = field(default_factory=dict)
    """The inline ``deepspeed_config`` scalars the DeepSpeedPlugin reads (INLINE_KEYS), as written (text),
    located at their values."""
    deepspeed_key: Span | None = None
    """Where ``deepspeed_config:`` is written."""

    @property
    def uses_deepspeed(self) -> bool:
        return self.distributed_type == "DEEPSPEED"


def _span(node: yaml.Node) -> Span:
    from trainlint.adapters.text.yaml_tree import node_span

    return node_span(node)


def find_config(written: str, base: str | None = None) -> str | None:
    """The file ``written`` names, relative to the current directory (or ``base``'s folder, a launch
    script's), inside the project; None otherwise."""
    from trainlint.files.containment import contained, roots_for

    anchor = base or os.path.join(os.getcwd(), "x")
    roots = roots_for(anchor)
    if os.path.isabs(written):
        candidates = [written]
    else:
        candidates = [os.path.join(os.getcwd(), written)]
        if base:
            candidates.append(os.path.join(os.path.dirname(os.path.abspath(base)), written))
        candidates += [os.path.join(root, written) for root in roots]
    for candidate in candidates:
        if os.path.isfile(candidate) and contained(candidate, roots):
            return os.path.abspath(candidate)
    return None


def read_accelerate_config(written: str, base: str | None = None) -> AccelerateConfig | None:
    """The settings of the YAML named ``written`` (relative to the current directory, else to
    ``base``'s folder or the project root) when it is in the project and a mapping; None otherwise."""
    from trainlint.adapters.text.yaml_tree import compose_mapping_file

    path = find_config(written, base)
    if path is None:
        return None
    root = compose_mapping_file(path, MAX_CONFIG_BYTES)
    if root is None:
        return None
    found = AccelerateConfig(path)

    def located(key: str, node: yaml.ScalarNode, value: object) -> Value:
        return Value(value, Provenance(Origin.FILE, path=path, span=_span(node), key=key,
                                       note=f"{key} in the accelerate config {written}"))

    for key, value in root.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        if key.value in ("num_processes", "num_machines") and isinstance(value, yaml.ScalarNode) \
                and value.value.isdigit() and int(value.value) > 0:
            setattr(found, key.value, located(key.value, value, int(value.value)))
        elif key.value == "distributed_type" and isinstance(value, yaml.ScalarNode):
            found.distributed_type = value.value.strip().upper()
        elif key.value == "mixed_precision" and isinstance(value, yaml.ScalarNode):
            found.mixed_precision = located("mixed_precision", value, value.value.strip().lower())
        elif key.value == "deepspeed_config" and isinstance(value, yaml.MappingNode):
            found.deepspeed_key = _span(key)
            for inner_key, inner in value.value:
                if not isinstance(inner_key, yaml.ScalarNode) or not isinstance(inner, yaml.ScalarNode):
                    continue
                if inner_key.value == "deepspeed_config_file" and inner.value.strip():
                    found.deepspeed_config_file = inner.value.strip()
                elif inner_key.value in INLINE_KEYS:
                    found.deepspeed[inner_key.value] = located(f"deepspeed_config.{inner_key.value}", inner,
                                                               inner.value.strip())
    return found


# ------------------------------------------------------------------------------ the inline DeepSpeed config


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) < 1e12 else None  # not NaN, bounded


def _bool(text: str) -> bool | None:
    lowered = text.lower()
    return True if lowered in ("true", "1", "yes") else False if lowered in ("false", "0", "no") else None


@dataclass
class InlineDeepSpeed:
    """The DeepSpeed config the DeepSpeedPlugin builds, and where each of its values comes from."""

    data: dict[str, Any]
    located: dict[str, Value]
    """JSON pointer -> the value with its provenance (the YAML key, a launch option, or a default)."""
    problems: list[tuple[str, Value]]
    """(message, value) for values accelerate would refuse or ignore."""


def inline_deepspeed(config: AccelerateConfig, options: dict[str, Value] | None = None) -> InlineDeepSpeed:
    """The DeepSpeed config ``DeepSpeedPlugin.__post_init__`` builds when no DeepSpeed JSON is named:
    ``train_batch_size`` and ``train_micro_batch_size_per_gpu`` "auto" (the Trainer fills them),
    ``gradient_accumulation_steps`` as given else "auto", ``zero_optimization.stage`` (default 2,
    ACCELERATE_DEEPSPEED_ZERO_STAGE), ``offload_optimizer.device`` / ``offload_param.device`` (default
    none), ``stage3_gather_16bit_weights_on_model_save`` (zero3_save_16bit_model), ``gradient_clipping``
    when given; ``bf16``/``fp16`` "auto" here (``set_mixed_precision`` fills them from the launch's
    mixed precision, which TrainingArguments' --bf16/--fp16 override). ``options``: the ``accelerate
    launch`` options of the same names, which win over the file."""
    written = dict(config.deepspeed)
    written.update(options or {})
    located: dict[str, Value] = {}
    problems: list[tuple[str, Value]] = []

    def default(value: object, note: str) -> Value:
        return Value(value, Provenance(Origin.DEFAULT, note=f"{note} ({PLUGIN_PY})"))

    def as_(value: Value, converted: object) -> Value:
        return Value(converted, value.provenance)

    stage = written.get("zero_stage")
    stage_v = _int(stage.value) if stage is not None else None
    if stage is not None and (stage_v is None or stage_v > 3):
        problems.append((f"zero_stage `{stage.value}` is not one of 0, 1, 2, 3", stage))
    located["/zero_optimization/stage"] = as_(stage, stage_v) if stage is not None and stage_v is not None \
        and stage_v <= 3 else default(2, "accelerate's default ZeRO stage 2")
    for key, ptr in (("offload_optimizer_device", "/zero_optimization/offload_optimizer/device"),
                     ("offload_param_device", "/zero_optimization/offload_param/device")):
        device = written.get(key)
        if device is not None and device.value.lower() in _OFFLOAD_DEVICES:
            located[ptr] = as_(device, device.value.lower())
        else:
            if device is not None:
                problems.append((f"{key} `{device.value}` is not one of none, cpu, nvme", device))
            located[ptr] = default("none", f"accelerate's default {key} none")
    gas = written.get("gradient_accumulation_steps")
    gas_v = _int(gas.value) if gas is not None else None
    if gas is not None and gas_v is not None and gas_v > 0:
        located["/gradient_accumulation_steps"] = as_(gas, gas_v)
    elif gas is not None and gas.value != "auto":
        problems.append((f"gradient_accumulation_steps `{gas.value}` is not a positive integer", gas))
    clip = written.get("gradient_clipping")
    clip_v = _float(clip.value) if clip is not None and clip.value.lower() != "none" else None
    if clip is not None and clip_v:
        located["/gradient_clipping"] = as_(clip, clip_v)
    save16 = written.get("zero3_save_16bit_model")
    save16_v = _bool(save16.value) if save16 is not None else None
    located["/zero_optimization/stage3_gather_16bit_weights_on_model_save"] = \
        as_(save16, save16_v) if save16 is not None and save16_v is not None else default(False, "zero3_save_16bit_model")
    # with an nvme device the plugin writes its nvme_path (ACCELERATE_DEEPSPEED_OFFLOAD_*_NVME_PATH, default "none")
    for key, section in (("offload_optimizer_nvme_path", "offload_optimizer"), ("offload_param_nvme_path", "offload_param")):
        if located[f"/zero_optimization/{section}/device"].value == "nvme":
            path = written.get(key)
            located[f"/zero_optimization/{section}/nvme_path"] = path if path is not None else \
                default("none", f"accelerate's default {key} none")
    zero: dict[str, Any] = {
        "stage": located["/zero_optimization/stage"].value,
        "offload_optimizer": {"device": located["/zero_optimization/offload_optimizer/device"].value},
        "offload_param": {"device": located["/zero_optimization/offload_param/device"].value},
        "stage3_gather_16bit_weights_on_model_save":
            located["/zero_optimization/stage3_gather_16bit_weights_on_model_save"].value,
    }
    for section in ("offload_optimizer", "offload_param"):
        nvme = located.get(f"/zero_optimization/{section}/nvme_path")
        if nvme is not None:
            zero[section]["nvme_path"] = nvme.value
    data: dict[str, Any] = {
        "train_batch_size": "auto",
        "train_micro_batch_size_per_gpu": "auto",
        "gradient_accumulation_steps": located["/gradient_accumulation_steps"].value
        if "/gradient_accumulation_steps" in located else "auto",
        "zero_optimization": zero,
        "bf16": {"enabled": "auto"},
        "fp16": {"enabled": "auto"},
    }
    if "/gradient_clipping" in located:
        data["gradient_clipping"] = located["/gradient_clipping"].value
    return InlineDeepSpeed(data, located, problems)


def mixed_precision(config: AccelerateConfig | None, option: Value | None = None) -> Value | None:
    """The launch's mixed precision: ``accelerate launch --mixed_precision`` else the config's
    ``mixed_precision``; None when neither says (or says something accelerate does not take)."""
    chosen = option if option is not None else config.mixed_precision if config is not None else None
    if chosen is None or str(chosen.value).lower() not in _MIXED:
        return None
    return Value(str(chosen.value).lower(), chosen.provenance)


def load_inline(config: AccelerateConfig | None, options: dict[str, Value], path: str):
    """The inline DeepSpeed settings as a DeepSpeed run (a LoadResult of format "deepspeed"): the config
    :func:`inline_deepspeed` builds, read by the DeepSpeed adapter's own spec builder, every value
    located where accelerate takes it from. ``path``: where a run without a config file is written
    (``accelerate launch --use_deepspeed --zero_stage 3 ...``: the command line or launch script).
    TL006 for a value accelerate would not take (an unknown offload device, a ZeRO stage above 3)."""
    from trainlint.adapters.base import LoadResult
    from trainlint.adapters.deepspeed.adapter import FORMAT, build_spec, set_engine
    from trainlint.core.document import Document
    from trainlint.core.input_codes import input_diagnostic

    inline = inline_deepspeed(config or AccelerateConfig(path), options)
    doc_path = config.path if config is not None else path
    doc = Document(doc_path, FORMAT, "", inline.data)
    for ptr, value in inline.located.items():
        prov = value.provenance
        if prov.origin is Origin.FILE and prov.path == doc_path and prov.span is not None:
            doc.value_spans[ptr] = prov.span
            doc.key_spans[ptr] = prov.span
    for ptr in ("/train_batch_size", "/train_micro_batch_size_per_gpu", "/gradient_accumulation_steps",
                "/bf16/enabled", "/fp16/enabled"):
        if doc.get(ptr) == "auto":
            doc.unresolved[ptr] = "\"auto\": filled by the Hugging Face Trainer from TrainingArguments"
            doc.key_spans.setdefault(ptr, config.deepspeed_key if config and config.deepspeed_key else _nowhere())
    spec = build_spec(doc)
    # Each value with where accelerate takes it from (the YAML key, a launch option, or the plugin's default).
    located = inline.located
    spec.parallel.zero_stage = located["/zero_optimization/stage"]
    spec.parallel.offload_optimizer = located["/zero_optimization/offload_optimizer/device"]
    spec.parallel.offload_params = located["/zero_optimization/offload_param/device"]
    if "/gradient_accumulation_steps" in located:
        spec.batch.grad_accum = located["/gradient_accumulation_steps"]
    for ptr, value in located.items():
        spec.settings[ptr.strip("/").replace("/", ".")] = value
    set_engine(spec)  # the engine follows the located values (same settings, their provenance)
    spec.label = f"the DeepSpeed settings of {os.path.basename(doc_path)}"
    result = LoadResult(FORMAT, documents=[doc], specs=[spec])
    for message, value in inline.problems:
        prov = value.provenance
        result.diagnostics.append(input_diagnostic(
            "TL006", f"{message}; accelerate's DeepSpeedPlugin would not take it ({PLUGIN_PY})",
            prov.span or _nowhere(), path=prov.path or path))
    return result


def _nowhere() -> Span:
    from trainlint.core.positions import FILE_START

    return FILE_START
