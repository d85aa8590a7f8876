"""trainlint's own contributions come through the public hooks, as a plugin's do (issue 31): the
adapters, GPUs and model presets from the built-in plugin, the rules from one bundle per family."""

from __future__ import annotations

from trainlint.presets.catalog import load_gpus
from trainlint.presets.models import load_model_presets
from trainlint.adapters import builtin_frameworks
from trainlint.project.plugins import BUILTIN_PLUGIN, RULE_BUNDLES, create_host
from trainlint.project.registry import build_registry
from trainlint.rules.codes import FAMILIES
from trainlint.core.spec import TrainingSpec


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
    build_registry(host)
    # the frameworks' own families joined through their Framework objects, as the built-in plugin's
    assert _implementers(host, "trainlint_rules") == set(FAMILIES.values())
    assert {host.owners[b] for b in set(FAMILIES.values()) - set(RULE_BUNDLES)} == {BUILTIN_PLUGIN}


def test_each_framework_owns_its_start_up_families_and_every_family_has_one_registrant():
    owned = [bundle for framework in builtin_frameworks() for bundle in framework.rules()]
    assert all(isinstance(b, str) for b in owned)
    assert len(owned) == len(set(owned)) and not set(owned) & set(RULE_BUNDLES)
    assert set(owned) | set(RULE_BUNDLES) == set(FAMILIES.values())
    # a framework's family holds rules for that framework's runs: each runs on some run of its owner
    registry = build_registry(create_host(entry_points=False))
    for framework in builtin_frameworks():
        caps = framework.capabilities(TrainingSpec(framework=framework.name, path=""))
        for bundle in framework.rules():
            rules = [r for r in registry.rules.values() if r.__module__.startswith(f"{bundle}.")]
            assert rules and all(r.plugin == BUILTIN_PLUGIN for r in rules), bundle
            assert any(r.requires <= caps for r in rules), bundle


def test_a_framework_family_is_registered_only_through_its_framework(monkeypatch):
    # without the framework, its family's rules are gone: nothing else registers them
    import trainlint
    import trainlint.builtin as builtin

    kept = [f for f in builtin_frameworks() if "trainlint.rules.startup.neox" not in f.rules()]
    monkeypatch.setattr(builtin, "trainlint_frameworks", trainlint.hookimpl(lambda: kept))
    registry = build_registry(create_host(entry_points=False))
    assert not [r for r in registry.rules.values() if r.__module__.startswith("trainlint.rules.startup.neox.")]
    assert [r for r in registry.rules.values() if r.__module__.startswith("trainlint.rules.startup.megatron.")]


def test_a_plugin_gpu_replaces_the_shipped_one_of_its_id(tmp_path):
    plugin = tmp_path / "fast_h100.py"
    plugin.write_text("import trainlint\n\n@trainlint.hookimpl\ndef trainlint_gpus():\n"
                      "    return [{'id': 'h100-sxm', 'memory_gb': 96, 'bf16_tflops': 1200}]\n")
    registry = build_registry(create_host([str(plugin)], tmp_path, entry_points=False))
    assert registry.gpus["h100-sxm"].memory_gb == 96
    assert load_gpus()["h100-sxm"].memory_gb != 96
    assert set(registry.gpus) == set(load_gpus())
