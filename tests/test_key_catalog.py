"""One key catalog per framework (issue 31): ``Framework.key_catalog()`` answers "which keys exist",
and the consumers ask it: the adapters' schema validation and unknown-key findings, the Megatron flag
table, the language server's hovers, the rules' reads of a framework's key properties."""

from __future__ import annotations

import copy

from trainlint.adapters import builtin_frameworks
from trainlint.adapters.deepspeed.framework import DeepSpeedFramework
from trainlint.core.framework import EMPTY_KEYS, Framework, KeyCatalog
from trainlint.frameworks.keys import ShippedKeyCatalog
from trainlint.schemas import load_schema


def test_each_builtin_framework_has_one_catalog_over_its_shipped_data():
    for framework in builtin_frameworks():
        keys = framework.key_catalog()
        assert isinstance(keys, ShippedKeyCatalog) and keys is framework.key_catalog()  # one object
        schema = load_schema(framework.schema_name())
        assert keys.schema() is schema and keys.properties() == schema["properties"]
        some = next(iter(schema["properties"]))
        assert keys.entry(some) == schema["properties"][some] and keys.entry("/" + some) == schema["properties"][some]
        assert keys.entry("no_such_key_anywhere") is None
        labels, masks = keys.release_masks()
        assert labels and masks  # every built-in framework ships release catalogs
        name = next(n for n, mask in masks.items() if mask)
        assert keys.releases_of(name) and keys.defined_by(name).endswith(("defines it", "define it"))


def test_sections_and_did_you_mean_come_from_the_schema():
    keys = DeepSpeedFramework().key_catalog()
    zero = keys.properties("zero_optimization")
    assert "stage" in zero and zero == load_schema("deepspeed")["properties"]["zero_optimization"]["properties"]
    assert keys.suggest("stag", "zero_optimization")[0] == "stage"
    assert keys.entry("zero_optimization.stage") is zero["stage"]
    assert keys.removed("/zero_optimization/cpu_offload_params") is not None


def test_a_framework_without_a_catalog_defines_nothing():
    assert Framework().key_catalog() is EMPTY_KEYS
    assert EMPTY_KEYS.schema() is None and EMPTY_KEYS.entry("x") is None and EMPTY_KEYS.suggest("x") == []


class _Widened(KeyCatalog):
    """The DeepSpeed catalog with one more top-level key and its own hover text."""

    def __init__(self, base: KeyCatalog) -> None:
        self.base = base
        schema = copy.deepcopy(base.schema())
        schema["properties"]["my_extra_key"] = {"type": "integer", "description": "a widened key"}
        self._schema = schema

    def schema(self):
        return self._schema

    def entry(self, key):
        return self._schema["properties"].get(key)

    def removed(self, pointer):
        return self.base.removed(pointer)

    def defined_by(self, name):
        return ""


def test_the_deepspeed_adapter_and_the_hover_ask_the_framework_catalog(tmp_path, monkeypatch):
    from trainlint.adapters.deepspeed.adapter import DeepSpeedAdapter
    from trainlint.files.checker import check_paths
    from trainlint.lsp.hover import schema_entry

    config = tmp_path / "ds_config.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 1, "my_extra_key": 3}\n')

    def unknown() -> list[str]:
        (result,) = check_paths([str(config)], [DeepSpeedAdapter()])
        return [d.message for d in result.diagnostics if d.code == "TL004"]

    assert any("my_extra_key" in m for m in unknown())
    assert schema_entry("deepspeed", "my_extra_key") is None
    shipped = DeepSpeedFramework.key_catalog
    widened = _Widened(shipped(DeepSpeedFramework()))
    monkeypatch.setattr(DeepSpeedFramework, "key_catalog", lambda self, target=None: widened)
    assert not any("my_extra_key" in m for m in unknown())
    assert schema_entry("deepspeed", "my_extra_key") == {"type": "integer", "description": "a widened key"}
