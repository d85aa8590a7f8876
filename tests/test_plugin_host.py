"""The plugin host reads trainlint's own hook implementations without pluggy's manager until another
plugin is registered (issue 33: pluggy needs ``inspect`` to register anything, ~9% of a cold check), and
``inspect`` is loaded on first use (``trainlint.core.deferred_stdlib``). Both give what pluggy gives."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from trainlint import hookimpl
from trainlint.core.hookspecs import trainlint_rules as rules_spec
from trainlint.project import plugins
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry

REPO = Path(__file__).resolve().parents[1]
DS_JSON = REPO / "examples" / "deepspeed_zero3_offload.json"
HOOKS = sorted(name for name in vars(sys.modules[rules_spec.__module__]) if name.startswith("trainlint_"))


def _impls(host) -> dict[str, list[tuple[str, object]]]:
    return {hook: [(impl.plugin_name, impl.function) for impl in getattr(host.hook, hook).get_hookimpls()]
            for hook in HOOKS}


def _summary(registry) -> dict:
    return {"rules": {code: (type(e).__name__, e.name, e.plugin) for code, e in registry.rules.entries.items()},
            "adapters": [type(a) for a in registry.adapters], "frameworks": [f.name for f in registry.frameworks],
            "gpus": registry.gpus, "presets": dict(registry.model_presets),
            "failures": [(f.plugin, f.reason, f.code) for f in registry.failures]}


def test_the_own_modules_hooks_are_pluggys_in_pluggys_order():
    light = create_host(entry_points=False)
    assert light._manager is None
    registry = build_registry(light)  # registers the frameworks' rule families too
    assert light._manager is None
    pluggy_host = create_host(entry_points=False)
    pluggy_host.manager  # noqa: B018 - made now, with the own modules registered in the same order
    assert pluggy_host._manager is not None
    assert _summary(build_registry(pluggy_host)) == _summary(registry)
    assert _impls(pluggy_host) == _impls(light) and all(_impls(light).values())
    # pluggy accepts every own module (its own validation of the implementations against the specs)
    light.manager.check_pending()
    assert _impls(light) == _impls(pluggy_host)


def test_registering_another_plugin_makes_the_manager_with_the_own_modules_first():
    host = create_host(entry_points=False)

    class Plugin:
        @hookimpl
        def trainlint_gpus(self):
            return []

    host.manager.register(Plugin(), name="zz-gpus")
    names = [name for name, _ in _impls(host)["trainlint_gpus"]]
    assert names == [plugins.BUILTIN_PLUGIN, "zz-gpus"]


def _own_module(monkeypatch, name: str, **opts) -> types.ModuleType:
    module = types.ModuleType(name)

    def trainlint_rulez():
        return []

    def trainlint_gpus():
        return []

    module.trainlint_rulez = hookimpl(trainlint_rulez)
    module.trainlint_gpus = hookimpl(**opts)(trainlint_gpus) if opts else hookimpl(trainlint_gpus)
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(plugins, "_OWN_MODULES", plugins._OWN_MODULES | {name})
    return module


def test_an_unknown_hook_of_an_own_module_is_reported_as_pluggy_reports_it(monkeypatch):
    found = []
    for make_manager in (False, True):
        host = create_host(entry_points=False)
        if make_manager:
            host.manager  # noqa: B018
        plugins._register(host, _own_module(monkeypatch, "zz_own_rules"), "zz_own_rules")
        assert (host._manager is None) is (not make_manager)
        found.append(host.unknown_hooks())
    assert found[0] == found[1] == {"zz_own_rules": ["trainlint_rulez"]}


@pytest.mark.parametrize("opts", [{"tryfirst": True}, {"trylast": True}, {"specname": "trainlint_gpus"}])
def test_an_own_module_that_changes_pluggys_order_is_registered_with_pluggy(monkeypatch, opts):
    host = create_host(entry_points=False)
    plugins._register(host, _own_module(monkeypatch, "zz_own_order", **opts), "zz_own_order")
    assert host._manager is not None and host.has_plugin("zz_own_order")


def _run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_check_with_trainlints_own_plugins_loads_neither_inspect_nor_pluggy():
    found = _run("import io, json, sys, contextlib\nfrom trainlint.cli import main\n"
                 "from trainlint.core.deferred_stdlib import is_loaded\n"
                 "with contextlib.redirect_stdout(io.StringIO()):\n"
                 f"    status = main(['check', '--isolated', '--exit-zero', {str(DS_JSON)!r}])\n"
                 "print(json.dumps({'status': status, 'inspect': is_loaded('inspect'), "
                 "'imported': 'inspect' in sys.modules, 'pluggy': 'pluggy' in sys.modules}))")
    assert found == {"status": 0, "inspect": False, "imported": True, "pluggy": False}


def test_the_deferred_inspect_is_inspect_once_used():
    found = _run("import json, sys, trainlint\nfrom trainlint.core.deferred_stdlib import is_loaded\n"
                 "import inspect\nbefore = is_loaded('inspect')\nfrom inspect import signature\n"
                 "import dataclasses\n@dataclasses.dataclass\nclass NoDoc:\n    a: int\n"
                 "print(json.dumps({'before': before, 'after': is_loaded('inspect'), 'same': sys.modules['inspect'] is inspect,"
                 " 'sig': str(signature(lambda a, b=2: 0)), 'doc': NoDoc.__doc__, 'file': inspect.__file__,"
                 " 'source': inspect.getsource(is_loaded).splitlines()[0], 'type': type(inspect).__name__}))")
    assert found["before"] is False and found["after"] is True and found["same"] is True
    assert found["sig"] == "(a, b=2)" and found["doc"] == "NoDoc(a: int)"
    assert found["file"].endswith("inspect.py") and found["source"].startswith("def is_loaded")
    assert found["type"] == "module"
