"""The Megatron-Bridge adapter: ConfigContainer YAML (``to_yaml`` dumps, checkpoints' ``run_config.yaml``)
and shell scripts that launch ``scripts/training/run_recipe.py --recipe NAME KEY=VALUE ...``."""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from trainlint.core.document import Document
from trainlint.core.framework import KeyCatalog, framework_of
from trainlint.core.positions import FILE_START, Span
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.files.sources import SourceText

from trainlint.adapters.base import BY_CONTENT, CERTAIN, NOT_MINE, Adapter, LoadContext, LoadResult, looks_like_shell
from trainlint.adapters.bridge.names import ENGINE, FORMAT

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.bridge.container import Container

@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The sniff's patterns of a ConfigContainer YAML (sections, a core field, a Bridge ``_target_``),
    compiled on first use (functools.cache): only a YAML is searched, and a check of JSON files and
    scripts should not pay ~0.7 ms at every start for compiling them (issue 33).

    A ConfigContainer YAML: top-level sections named as ConfigContainer's fields (model and train among
    them), indented Megatron-Core field names."""
    sections = re.compile(r"^(model|train|optimizer|ddp|scheduler|checkpoint|dataset|tokenizer|dist|logger|env_vars|"
                          r"validation|rng|mixed_precision|comm_overlap|peft|profiling|rerun_state_machine):", re.M)
    core_field = re.compile(r"^[ \t]+(tensor_model_parallel_size|num_layers|hidden_size|num_attention_heads|"
                            r"micro_batch_size):", re.M)
    bridge_target = re.compile(r"_target_:\s*['\"]?megatron\.bridge\.")
    return sections, core_field, bridge_target


DEVICE_MAX_CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"


class BridgeAdapter(Adapter):
    name = FORMAT
    extensions = (".yaml", ".yml", ".sh", ".bash", ".slurm", ".sbatch")

    def sniff(self, path: str, text: str) -> int:
        try:
            head = text[:262144]
            if path.lower().endswith((".yaml", ".yml")) and not looks_like_shell(head):
                section, core_field, bridge_target = _patterns()
                if bridge_target.search(head):
                    return CERTAIN
                sections = set(section.findall(head))
                mine = {"model", "train"} <= sections and len(sections) >= 3 and core_field.search(head)
                return BY_CONTENT + 30 if mine else NOT_MINE
            if "run_recipe.py" in head:
                from trainlint.adapters.bridge.launch import names_a_recipe

                if names_a_recipe(head):
                    return BY_CONTENT + 35
            return NOT_MINE
        except Exception:  # noqa: BLE001 - sniff must never raise on garbage
            return NOT_MINE

    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        if source.path.lower().endswith((".yaml", ".yml")) and not looks_like_shell(source.text):
            return _load_yaml(source, context)
        return _load_launch(source, context)

    def expressible(self, spec: Any) -> frozenset[str] | None:
        return frozenset({"tp", "pp", "vpp", "cp", "micro", "recompute", "dist-opt", "sp", "global-batch"})

    def setting_name(self, dest: str) -> str | None:
        from trainlint.adapters.bridge.keys import field_of

        return field_of(dest)

    def spell_changes(self, spec: Any, changes: dict[str, Any], base: Any) -> list[str] | None:
        from trainlint.adapters.bridge.spelling import spell_changes

        return spell_changes(changes)

    def writer(self, texts: Any, result: Any, spec: Any, changes: dict[str, Any], index: int) -> Any:
        from trainlint.adapters.bridge.writer import BridgeWriter

        return BridgeWriter(texts, result, spec, changes, index)


def _target(source: SourceText, context: LoadContext, result: LoadResult, anchor: Span | None):
    from trainlint.frameworks.locate import read_note, resolve

    target = resolve(ENGINE, source.path, context.frameworks)
    note = read_note(target, anchor or FILE_START, source.path)
    if note is not None:
        result.diagnostics.append(note)
    return target


def _megatron_keys(target: Any) -> KeyCatalog:
    """The Megatron framework's one key catalog for the run's target: Megatron-LM's arguments and their
    types, which the spec builder is given (the framework is found by name through the core, so this
    folder never imports the Megatron framework object that lists this adapter)."""
    return framework_of(ENGINE).key_catalog(target)


def _load_yaml(source: SourceText, context: LoadContext) -> LoadResult:
    from trainlint.adapters.text.yaml_tree import parse_yaml

    result = LoadResult(FORMAT)
    tree = parse_yaml(source.text, source.path)
    result.diagnostics.extend(tree.diagnostics)
    if not tree.ok or not isinstance(tree.data, dict):
        return result
    result.documents.append(Document(source.path, FORMAT, source.text, tree.data, dict(tree.key_spans),
                                     dict(tree.value_spans)))
    from trainlint.adapters.bridge.container import from_tree  # read only for a Bridge file, not on every sniff

    container = from_tree(tree.data, tree.key_spans, tree.value_spans)
    target = _target(source, context, result, None)
    from trainlint.adapters.bridge.build import build_spec  # the spec builder (and Megatron-LM's flags): only to load

    spec = build_spec(container, source.path, "ConfigContainer", None, _megatron_keys(target),
                      problems=result.diagnostics)
    spec.target = target
    spec.named = context.named
    _environment(spec, container, {}, source.path)
    result.specs.append(spec)
    return result


def _load_launch(source: SourceText, context: LoadContext) -> LoadResult:
    from trainlint.core.input_codes import input_diagnostic

    from trainlint.adapters.bridge.container import Container, Entry
    from trainlint.adapters.bridge.launch import find_launches
    from trainlint.adapters.bridge.model_shape import preset_entries
    from trainlint.adapters.bridge.recipes import find_recipe

    result = LoadResult(FORMAT)
    result.documents.append(Document(source.path, FORMAT, source.text, {}))
    for launch in find_launches(source.text):
        container = Container()
        name = launch.recipe.text if launch.recipe is not None else None
        recipe = find_recipe(name) if name else None
        label = f"run_recipe.py --recipe {name}" if name else "run_recipe.py"
        if recipe is not None:
            why = f"recipe {recipe.name} ({recipe.file}:{recipe.line} at Megatron-Bridge {recipe.commit[:12]})"
            for path, value in recipe.values.items():
                container.set(Entry(path, value, None, origin="recipe", note=why))
            for path, where in recipe.computed.items():
                container.set(Entry(path, None, None, origin="computed", note=f"recipe {recipe.name}: {where}"))
        elif name and launch.recipe is not None:
            line, col = _position(source.text, launch.recipe.start)
            result.diagnostics.append(input_diagnostic(
                "TL004", f"recipe `{name}` is not in trainlint's catalog of Megatron-Bridge recipes: only the launch "
                         "line's overrides are known; the recipe's base values are not",
                Span(line, col, line, col + len(launch.recipe.raw)), path=source.path))
        for o in launch.overrides:
            if o.op == "~":
                container.entries.pop(o.path, None)
                continue
            container.set(Entry(o.path, o.value, o.span, o.key_span, origin="override",
                                note=f"override {o.spelled}" if o.spelled.startswith("-") else ""))
        if recipe is not None and recipe.hf_model:
            preset_entries(recipe.hf_model, container, f"recipe {recipe.name}")
        gpn = _launch_value(launch.nproc_per_node, source.path, "--nproc_per_node")
        nodes = _launch_value(launch.nnodes, source.path, "--nnodes")
        if gpn is not None and nodes is None:
            from trainlint.core.provenance import default

            nodes = default(1, "torchrun default (--nnodes 1)")
        target = _target(source, context, result, launch.anchor)
        from trainlint.adapters.bridge.build import build_spec

        spec = build_spec(container, source.path, label, launch.anchor, _megatron_keys(target), (gpn, nodes),
                          problems=result.diagnostics)
        spec.target = target
        spec.named = context.named
        for word in launch.unknown:
            line, col = _position(source.text, word.start)
            spec.unresolved[f"override {word.raw}"] = Provenance(Origin.FILE, source.path, Span(line, col, line, col + len(word.raw)),
                                                               word.raw, "a launch word only known at launch")
        _environment(spec, container, launch.env, source.path)
        result.specs.append(spec)
    return result


def _position(text: str, offset: int) -> tuple[int, int]:
    from trainlint.core.positions import LineIndex

    return LineIndex(text).position(offset)


def _launch_value(found: tuple[int, Span] | None, path: str, flag: str) -> Value | None:
    if found is None:
        return None
    n, span = found
    return Value(n, Provenance(Origin.FILE, path, span, flag)) if n >= 1 else None


def _environment(spec: Any, container: Container, exported: dict[str, tuple[str, Span]], path: str) -> None:
    """CUDA_DEVICE_MAX_CONNECTIONS as the process sees it: an ``export`` before the launch wins over the
    ConfigContainer's ``env_vars`` default (Bridge's apply_environment_variables uses ``os.environ.setdefault``)."""
    if DEVICE_MAX_CONNECTIONS in exported:
        value, span = exported[DEVICE_MAX_CONNECTIONS]
        spec.engine.device_max_connections = Value(value, Provenance(Origin.FILE, path, span, DEVICE_MAX_CONNECTIONS,
                                                                     "exported before the launch"))
        return
    entry = container.get(f"env_vars.{DEVICE_MAX_CONNECTIONS}")
    if entry is not None and entry.value is not None:
        text = str(entry.value).lower() if isinstance(entry.value, bool) else str(entry.value)
        from trainlint.adapters.bridge.build import provenance

        spec.engine.device_max_connections = Value(text, provenance(entry, path))
