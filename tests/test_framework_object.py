"""The Framework object and the ``trainlint_frameworks`` hook: the built-in frameworks are
registered through the hook as a plugin's are, and a plugin framework gets the same treatment."""

from __future__ import annotations

import pluggy

from trainlint.adapters import builtin_adapters
from trainlint.core.framework import framework_of
from trainlint.adapters.base import NOT_MINE, Adapter, LoadResult
from trainlint.core.framework import NEUTRAL, Framework
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.rules import Rule
from trainlint.core.spec import TrainingSpec

hookimpl = pluggy.HookimplMarker("trainlint")


def test_builtin_frameworks_come_through_the_hook():
    host = create_host(entry_points=False)
    callers = {impl.plugin_name for impl in host.hook.trainlint_frameworks.get_hookimpls()}
    assert "trainlint.builtin" in callers
    registry = build_registry(host)
    assert sorted(f.name for f in registry.frameworks) == ["deepspeed", "megatron", "neox"]
    # every built-in adapter belongs to a framework, and each counts once in the session's adapters
    owned = {type(a) for f in registry.frameworks for a in f.adapters()}
    assert {type(a) for a in builtin_adapters()} == owned
    assert len(registry.adapters) == len({type(a) for a in registry.adapters})


def test_each_builtin_framework_declares_capabilities_and_engine():
    registry = build_registry(create_host(entry_points=False))
    for framework in registry.frameworks:
        spec = TrainingSpec(framework=framework.name, path="run")
        assert framework.capabilities(spec), framework.name
        assert framework_of(spec, registry.frameworks) is framework
        framework.set_engine(spec)  # on an empty spec: the engine's defaults, never a crash
        assert spec.engine is not None


class _ToyAdapter(Adapter):
    name = "toyfmt"

    def sniff(self, path, text):
        return NOT_MINE

    def load(self, source, context):
        return LoadResult(self.name)


class _ToyRule(Rule):
    code = "TY001"
    name = "toy-rule"
    summary = "a toy framework's own rule"

    def check(self, spec, ctx):
        return iter(())


class _Toy(Framework):
    name = "toyfw"
    title = "Toy"

    def adapters(self):
        return [_ToyAdapter()]

    def capabilities(self, spec):
        return frozenset({"toy-engine"})

    def rules(self):
        return [_ToyRule]


class _ToyPlugin:
    @hookimpl
    def trainlint_frameworks(self):
        return [_Toy(), _Toy(), "not a framework"]


def test_plugin_framework_adds_adapters_rules_and_duplicates_are_tl998():
    host = create_host(entry_points=False)
    host.manager.register(_ToyPlugin(), name="toy-plugin")
    registry = build_registry(host)
    assert framework_of("toyfw", registry.frameworks).title == "Toy"
    assert any(isinstance(a, _ToyAdapter) for a in registry.adapters)
    assert registry.rules["TY001"] is _ToyRule and _ToyRule.plugin == "toy-plugin"
    reasons = [f.reason for f in registry.failures if f.plugin == "toy-plugin"]
    assert any("already registered" in r for r in reasons) and any("not a trainlint.core.framework.Framework" in r for r in reasons)


def test_unknown_framework_is_neutral():
    spec = TrainingSpec(framework="nobody-knows-me", path="run")
    assert framework_of(spec) is NEUTRAL
    assert NEUTRAL.capabilities(spec) == frozenset()
    # the neutral batch spelling names every member that changed
    assert NEUTRAL.batch_changes(spec, (1, 2, 16), (2, 1, 16), 8) == {"batch.micro_batch": 2, "batch.grad_accum": 1}


class _ToyLaunch(Framework):
    name = "toyfw"
    launch_kinds = ("toy",)

    def claim_launch(self, launch):
        return "toy" if launch.entry and launch.entry.endswith("toy_train.py") else None

    def read_launch(self, launch, adapters, environment, frameworks):
        from trainlint.core.results import FileResult

        return [FileResult("<command line>", "toyfmt", [], [TrainingSpec(framework="toyfw", path="<command line>")])]


def test_a_plugin_framework_reads_its_own_launch_command():
    from trainlint.adapters.launch.command_line import parse_launch, read_command

    argv = ["torchrun", "--nproc_per_node", "8", "toy_train.py", "--toy-config", "run.toy"]
    assert parse_launch(argv).kind == "none"  # no shipped framework reads it
    launch = parse_launch(argv, frameworks=[_ToyLaunch()])
    assert launch.kind == "toy"
    results = read_command(launch, [], {}, None, registered=[_ToyLaunch()])
    assert [r.format for r in results] == ["toyfmt"] and results[0].specs[0].framework == "toyfw"
    # the shipped forms are still read by their frameworks, found through the same lookup
    megatron = parse_launch(["torchrun", "pretrain_gpt.py", "--num-layers", "2"], frameworks=[_ToyLaunch()])
    assert megatron.kind == "megatron"
    assert read_command(megatron, [], {}, None, registered=[_ToyLaunch()]) == []  # not registered here: nothing reads it


def test_neox_full_recompute_keeps_its_default_layers_per_checkpoint():
    """NeoX checkpoints 1 layer at a time unless checkpoint_num_layers says otherwise: a layout that
    switches full recompute on keeps that default, and writes no checkpoint_num_layers."""
    from trainlint.adapters.neox.framework import NeoXFramework
    from trainlint.core.provenance import Origin, Provenance, Value

    spec = TrainingSpec(framework="neox", path="run.yml")
    assert NeoXFramework().recompute_layers_written(spec) == 1
    spec.settings["checkpoint_num_layers"] = Value(4, Provenance(Origin.FILE, path="run.yml"))
    assert NeoXFramework().recompute_layers_written(spec) == 4


_TOY_FRAMEWORK = '''\
from trainlint.plugin import Finding, Framework, Rule, hookimpl


class WideTensor(Rule):
    code = "TY101"
    name = "toy-wide-tensor"
    summary = "the toy engine refuses tensor parallel sizes above 4"
    requires = frozenset({"toy-engine"})

    def check(self, spec, ctx):
        tp = spec.value("parallel.tensor")
        if isinstance(tp, int) and tp > 4:
            yield Finding(f"the toy engine refuses tensor parallel {tp}", at=spec.parallel.tensor)


class ToyFramework(Framework):
    name = "toytrain"
    title = "Toy"

    def capabilities(self, spec):
        return frozenset({"toy-engine"})

    def rules(self):
        return [WideTensor]


@hookimpl
def trainlint_frameworks():
    return [ToyFramework()]
'''


def test_a_plugin_frameworks_own_rules_run_on_its_runs(tmp_path, monkeypatch, capsys):
    # the toy format (tests/plugins/toy_format.py) writes framework "toytrain"; a second plugin
    # registers that framework, whose rules() hold one rule: it is registered and it runs
    import json
    import shutil
    from pathlib import Path

    from trainlint.cli import main

    shutil.copy(Path(__file__).resolve().parent / "plugins" / "toy_format.py", tmp_path / "toy_format.py")
    (tmp_path / "toy_framework.py").write_text(_TOY_FRAMEWORK)
    (tmp_path / ".trainlint.toml").write_text('plugins = ["toy_format.py", "toy_framework.py"]\n')
    (tmp_path / "run.toytrain").write_text("model.num_layers = 2\nparallel.tensor = 8\n")
    (tmp_path / "narrow.toytrain").write_text("model.num_layers = 2\nparallel.tensor = 2\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAINLINT_ALLOW_PLUGINS", "1")
    main(["check", "--format", "json", "--select", "TY", "run.toytrain", "narrow.toytrain"])
    files = {Path(f["path"]).name: f["diagnostics"] for f in json.loads(capsys.readouterr().out)["files"]}
    assert [(d["code"], d["line"], d["column"]) for d in files["run.toytrain"] if d["code"].startswith("TY")] == \
        [("TY101", 2, 19)]
    assert not [d for d in files["narrow.toytrain"] if d["code"].startswith("TY")]
    assert not [d for d in files["run.toytrain"] if d["code"] == "TL998"]
