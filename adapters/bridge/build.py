"""From a ConfigContainer (as written) to a TrainingSpec: Bridge's fields under Megatron-LM's argument
names, built by the Megatron-LM adapter's :class:`SpecBuilder`, so both formats of one run give the same
typed fields (batch triple, layout, precision, engine) from the same code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainlint.core.framework import KeyCatalog
from trainlint.core.positions import Span
from trainlint.core.provenance import Origin, Provenance, Value, derived
from trainlint.core.spec import TrainingSpec

from trainlint.adapters.bridge.container import Container, Entry
from trainlint.adapters.bridge.keys import EITHER_TRUE, KEYS, as_list
from trainlint.adapters.megatron.flags import CURRENT
from trainlint.adapters.megatron.spec_build import UNEVEN_PIPELINE, BuildContext, SpecBuilder, set_engine

from trainlint.adapters.bridge.names import FORMAT, SETTING_PREFIX

ENTRY = "megatron.bridge.training.pretrain"
"""What runs a ConfigContainer (``pretrain(config, forward_step)``); named so the estimation rules see a
training entry point (a whole run, not an argument fragment)."""


@dataclass
class BridgeSetting:
    """A Megatron-LM argument as a Bridge field gives it (duck-typed to the Megatron reader's Setting
    where :class:`SpecBuilder` reads one: ``value``)."""

    value: Any
    entry: Entry
    flag_text: str


@dataclass
class _Parsed:
    settings: dict[str, BridgeSetting]
    other_release: tuple[str, ...] = ()


def provenance(entry: Entry, path: str) -> Provenance:
    if entry.origin in ("recipe", "computed"):
        return Provenance(Origin.DEFAULT, key=entry.path, note=entry.note or "the recipe's value")
    return Provenance(Origin.FILE, path, entry.span, entry.path, entry.note)


class BridgeSpecBuilder(SpecBuilder):
    def __init__(self, container: Container, path: str, label: str, anchor: Span | None,
                 world: tuple[Value | None, Value | None], keys: KeyCatalog) -> None:
        """``keys``: the Megatron framework's key catalog for the run's target (Megatron-LM's arguments
        with their types), given by the adapter."""
        settings: dict[str, BridgeSetting] = {}
        self.problems: list[tuple[Entry, str]] = []
        """Fields whose value is not of the type Megatron-Core takes, with what it takes (left out of the run)."""
        for key in KEYS:
            entry = container.get(key.path)
            if entry is None:
                continue
            value = key.convert(entry.value)
            if key.listed_by_type and _is_list(keys, key.dest):
                value = as_list(value)
            if value is None and entry.origin != "computed":
                # a written null is Megatron-Core's None (recompute_granularity: null is no recompute): the
                # field left to its default, as an unwritten one; a value the key cannot convert, too
                continue
            if entry.origin == "computed":
                value = None  # a recipe computes it: written, not known statically
            elif value is not None and (expected := expected_type(keys, key.dest, value)) is not None:
                self.problems.append((entry, expected))
                value = None  # written, not usable: no default is taken for it either
            kept = settings.get(key.dest)
            if kept is not None and not (key.dest in EITHER_TRUE and value is True and kept.value is not True):
                continue
            settings[key.dest] = BridgeSetting(value, entry, key.path)
        _precision(container, settings)
        mla = settings.get("multi_latent_attention")
        if "num_query_groups" in settings and settings["num_query_groups"].value is not None and \
                not (mla is not None and mla.value is True):
            q = settings["num_query_groups"]
            settings["group_query_attention"] = BridgeSetting(True, q.entry, q.flag_text)
        ctx = BuildContext(path=path, label=label, dialect=CURRENT, entry=ENTRY, span_of=lambda loc: (None, None),
                           anchor=anchor)
        super().__init__(_Parsed(settings), ctx)  # type: ignore[arg-type]
        self.spec.format = FORMAT
        self.spec.core_configs_only = True  # Bridge never calls Megatron-LM's validate_args
        self.note = "Megatron-Core default (as Megatron-LM's arguments.py)"
        self._world = world
        self._container = container

    def _memory(self) -> None:
        super()._memory()
        # Megatron-LM turns cpu_offloading on from --cpu-offloading-num-layers > 0 (arguments.py); a ConfigContainer
        # sets TransformerConfig.cpu_offloading itself, and without it Megatron-Core offloads nothing
        # (transformer_block.py: get_cpu_offload_context(self.config.cpu_offloading, ...))
        layers = self.spec.memory.cpu_offload_layers
        if layers is None or not layers.value:
            return
        switch = self._container.get("model.cpu_offloading")
        acts = self._container.get("model.cpu_offloading_activations")
        if switch is None or switch.value is not True:
            self.spec.memory.cpu_offload_layers = derived(0, "model.cpu_offloading is not true: no activation "
                                                             "offloading", layers)
        elif acts is not None and acts.value is False:
            self.spec.memory.cpu_offload_layers = derived(0, "model.cpu_offloading_activations false: only weights "
                                                             "are offloaded", layers)

    def value_of(self, setting: Any, value: Any = None, use: Any = ...) -> Value | None:
        v = setting.value if use is ... else use
        if v is None:
            return None
        return Value(v, provenance(setting.entry, self.ctx.path))

    def _settings(self) -> None:
        for dest, setting in self.parsed.settings.items():
            made = self._made[dest] = self.value_of(setting)
            if made is not None:
                self.spec.settings[dest] = made
            elif isinstance(setting, BridgeSetting) and setting.entry.origin == "computed":
                self.spec.unresolved[dest] = Provenance(Origin.DEFAULT, key=setting.entry.path, note=setting.entry.note)
            elif isinstance(setting, BridgeSetting) and setting.entry.value is not None:
                self.spec.unresolved[dest] = provenance(setting.entry, self.ctx.path)

    def _cluster(self) -> None:
        gpn, nodes = self._world
        c = self.spec.cluster
        c.gpus_per_node, c.nodes = gpn, nodes
        if gpn is not None and nodes is not None:
            c.world_size = derived(gpn.value * nodes.value, "torchrun --nproc_per_node x --nnodes", gpn, nodes)


_NUMERIC = {"integer": (int,), "number": (int, float), "boolean": (bool,)}


def _kinds(keys: KeyCatalog, dest: str) -> list[str]:
    """The JSON types of Megatron-LM's argument ``dest`` in the Megatron framework's key catalog."""
    prop = keys.entry(dest)
    kinds = prop.get("type") if isinstance(prop, dict) else None
    return [kinds] if isinstance(kinds, str) else list(kinds or [])


def _is_list(keys: KeyCatalog, dest: str) -> bool:
    return "array" in _kinds(keys, dest)


def expected_type(keys: KeyCatalog, dest: str, value: Any) -> str | None:
    """What Megatron-LM's argument ``dest`` takes when ``value`` is not of it (``a whole number``), for the
    integer, number and boolean arguments the spec's arithmetic reads; None: the value is of a type it takes
    (other types are taken as written). The types are the Megatron framework's key catalog's (``keys``)."""
    kinds = _kinds(keys, dest)
    strict = [k for k in kinds if k != "null"]
    if not strict or not all(k in _NUMERIC for k in strict):
        return None
    if isinstance(value, bool):
        ok = "boolean" in strict
    else:
        ok = any(isinstance(value, t) for k in strict for t in _NUMERIC[k] if t is not bool)
    names = {"integer": "a whole number", "number": "a number", "boolean": "true or false"}
    return None if ok else " or ".join(names[k] for k in strict)


def _precision(container: Container, settings: dict[str, BridgeSetting]) -> None:
    """``mixed_precision`` (a recipe name such as ``bf16_mixed``, or a MixedPrecisionConfig section) sets
    the model's bf16/fp16 (Bridge ``training/mixed_precision.py``: ``bf16_mixed`` = bf16 params, fp32 grad
    reduce); fields written under ``model`` win."""
    mp = container.get("mixed_precision")
    if mp is not None and mp.origin == "computed":
        for flag in ("bf16", "fp16"):
            settings.setdefault(flag, BridgeSetting(None, mp, "mixed_precision"))
        return
    name = mp.value if mp is not None and isinstance(mp.value, str) else None
    for flag in ("bf16", "fp16"):
        section = container.get(f"mixed_precision.{flag}")
        if flag in settings:
            continue
        if section is not None and isinstance(section.value, bool):
            settings[flag] = BridgeSetting(section.value, section, section.path)
        elif name is not None and mp is not None:
            settings[flag] = BridgeSetting(name.startswith(flag), mp, "mixed_precision")
    fp8 = container.get("mixed_precision.fp8")
    if "fp8" not in settings and fp8 is not None and fp8.value:
        settings["fp8"] = BridgeSetting(fp8.value, fp8, fp8.path)
    if "fp8" not in settings and name is not None and mp is not None and "fp8" in name:
        settings["fp8"] = BridgeSetting("hybrid", mp, "mixed_precision")
    reduce32 = container.get("mixed_precision.grad_reduce_in_fp32")
    if "grad_reduce_in_bf16" not in settings and reduce32 is not None and isinstance(reduce32.value, bool):
        settings["grad_reduce_in_bf16"] = BridgeSetting(not reduce32.value, reduce32, reduce32.path)


def architecture(target: str) -> str | None:
    """The model family of a provider class (``...Llama3ModelProvider70B`` -> gpt), named as the Megatron-LM
    adapter names an entry point's: T5, hybrid Mamba (Bridge's MambaModelProvider, NemotronH), vision/multimodal
    providers as other, every other GPT-style provider gpt. None: no ``_target_``."""
    name = target.rsplit(".", 1)[-1]
    if not name:
        return None
    if "T5" in name:
        return "t5"
    if any(k in name for k in ("Mamba", "Hybrid", "NemotronH")):
        return "hybrid"
    if any(k in name for k in ("VL", "Vision", "Omni", "MIMO", "Mimo", "Llava")):
        return "other"
    return "gpt"


def build_spec(container: Container, path: str, label: str, anchor: Span | None, keys: KeyCatalog,
               world: tuple[Value | None, Value | None] = (None, None), problems: list | None = None) -> TrainingSpec:
    """The run's spec; fields of the wrong type are left out and reported in ``problems`` (TL005).
    ``keys``: the Megatron framework's key catalog for the run's target (the adapter asks it)."""
    if problems is None:
        problems = []
    builder = BridgeSpecBuilder(container, path, label, anchor, world, keys)
    spec = builder.build()
    for entry, expected in builder.problems:
        from trainlint.core.input_codes import input_diagnostic
        from trainlint.core.positions import FILE_START

        problems.append(input_diagnostic(
            "TL005", f"`{entry.path}` is {entry.value!r}: Megatron-Core takes {expected} here; the value is not used",
            entry.span or anchor or FILE_START, path=path))
    for entry in container.entries.values():
        # the fields as written, for Bridge's own start-up checks (linter/rules/startup/bridge.py)
        if entry.origin == "computed":
            spec.unresolved[SETTING_PREFIX + entry.path] = provenance(entry, path)
        else:
            spec.settings[SETTING_PREFIX + entry.path] = Value(entry.value, provenance(entry, path))
    spec.entry_point = ENTRY
    kind = architecture(container.targets.get("model", ""))
    if kind is not None:
        spec.model.architecture = Value(kind, Provenance(Origin.FILE, path, None, "model._target_",
                                                         f"the model provider {container.targets['model']}"))
    if spec.model.seq_length is None:
        data_seq = container.get("dataset.seq_length")
        if data_seq is not None and isinstance(data_seq.value, int):
            # run_recipe.py's sync_model_dataset_sequence_length: the dataset owns the sequence length
            spec.model.seq_length = Value(data_seq.value, provenance(data_seq, path))
    if spec.parallel.uneven_pipeline is None:
        # a recipe that sets the pipeline layout with code (DeepSeek-V3's set_..._pipeline_model_parallel_layout):
        # the split is the recipe's, not an even one
        computed = next((d for d in UNEVEN_PIPELINE if d in spec.unresolved), None)
        if computed is not None:
            prov = spec.unresolved[computed]
            spec.parallel.uneven_pipeline = Value(prov.key or computed, prov)
    set_engine(spec)
    return spec
