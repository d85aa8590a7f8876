"""trainlint's own contributions come through the public hooks, as a plugin's do (issue 31): the
adapters, GPUs and model presets from the built-in plugin, the rules from one bundle per family."""

from __future__ import annotations

from trainlint.catalog import load_gpus
from trainlint.models import load_model_presets
from trainlint.plugins import BUILTIN_PLUGIN, RULE_BUNDLES, create_host
from trainlint.registry import build_registry


def _implementers(host, hook: str) -> set[str]:
    return {impl.plugin_name for impl in getattr(host.hook, hook).get_hookimpls()}


def test_shipped_gpus_and_presets_are_the_builtin_plugins_hook_results():
    host = create_host(entry_points=False)
    assert _implementers(host, "trainlint_gpus") == {BUILTIN_PLUGIN}
    assert _implementers(host, "trainlint_model_presets") == {BUILTIN_PLUGIN}
    registry = build_registry(host)
    assert registry.gpus == load_gpus() and registry.gpus
    assert registry.model_presets == load_model_presets() and registry.model_presets


def test_rules_come_only_from_the_family_bundles():
    host = create_host(entry_points=False)
    assert _implementers(host, "trainlint_rules") == set(RULE_BUNDLES)
    assert _implementers(host, "trainlint_adapters") == {BUILTIN_PLUGIN}


def test_a_plugin_gpu_replaces_the_shipped_one_of_its_id(tmp_path):
    plugin = tmp_path / "fast_h100.py"
    plugin.write_text("import trainlint\n\n@trainlint.hookimpl\ndef trainlint_gpus():\n"
                      "    return [{'id': 'h100-sxm', 'memory_gb': 96, 'bf16_tflops': 1200}]\n")
    registry = build_registry(create_host([str(plugin)], tmp_path, entry_points=False))
    assert registry.gpus["h100-sxm"].memory_gb == 96
    assert load_gpus()["h100-sxm"].memory_gb != 96
    assert set(registry.gpus) == set(load_gpus())
