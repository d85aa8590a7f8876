"""The Bridge spec builder gets Megatron-LM's argument types through the key catalog it is given (the
Megatron framework's, asked by the adapter for the run's target), not from a schema read of its own."""

from __future__ import annotations

import copy
from pathlib import Path

from trainlint.adapters.bridge.build import build_spec
from trainlint.adapters.bridge.container import Container, Entry
from trainlint.core.framework import KeyCatalog, framework_of
from trainlint.core.positions import Span

ROOT = Path(__file__).resolve().parents[1]


class _Retyped(KeyCatalog):
    """The Megatron catalog with some arguments' types replaced."""

    def __init__(self, base: KeyCatalog, types: dict[str, str]) -> None:
        self.base, self.types = base, types

    def entry(self, key: str) -> dict | None:
        found = self.base.entry(key)
        if key in self.types:
            return dict(copy.deepcopy(found or {}), type=self.types[key])
        return found


def _container(**fields: object) -> Container:
    c = Container()
    for line, (path, value) in enumerate({"model.num_layers": 4, "model.hidden_size": 256,
                                          "model.num_attention_heads": 4, "model.seq_length": 512,
                                          "train.micro_batch_size": 1, "train.global_batch_size": 8,
                                          **{k.replace("__", "."): v for k, v in fields.items()}}.items(), 1):
        c.set(Entry(path, value, Span(line, 1, line, 2)))
    return c


def test_value_types_come_from_the_catalog_given():
    shipped = framework_of("megatron").key_catalog()
    problems: list = []
    spec = build_spec(_container(model__tensor_model_parallel_size="2"), "run.yaml", "ConfigContainer", None, shipped,
                      problems=problems)
    assert [d.code for d in problems] == ["TL005"] and spec.parallel.tensor is None  # the shipped type: an integer
    problems = []
    retyped = _Retyped(shipped, {"tensor_model_parallel_size": "string"})
    build_spec(_container(model__tensor_model_parallel_size="2"), "run.yaml", "ConfigContainer", None, retyped,
               problems=problems)
    assert problems == []  # the catalog given says a string is what the argument takes


def test_list_valued_arguments_come_from_the_catalog_given():
    shipped = framework_of("megatron").key_catalog()
    spec = build_spec(_container(model__recompute_modules="core_attn"), "run.yaml", "ConfigContainer", None, shipped)
    assert spec.settings["recompute_modules"].value == ["core_attn"]  # an array argument: one value is a list
    retyped = _Retyped(shipped, {"recompute_modules": "string"})
    spec = build_spec(_container(model__recompute_modules="core_attn"), "run.yaml", "ConfigContainer", None, retyped)
    assert spec.settings["recompute_modules"].value == "core_attn"


def test_the_bridge_folder_reads_no_schema_of_its_own():
    for path in sorted((ROOT / "adapters" / "bridge").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "load_schema" not in text and "trainlint.schemas" not in text, path.name
