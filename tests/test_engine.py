"""The rule engine and plugin host: hooks, local and entry-point plugins, broken plugins,
selection, severities, rule options and inline suppressions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pluggy
import pytest

from trainlint.cli import main
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.project.selection import Selection
from trainlint.project.suppressions import parse_suppressions

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_PLUGIN = REPO / "tests" / "plugins" / "trainlint_plugin_example"

FP16_CONFIG = textwrap.dedent("""\
    {
      "train_batch_size": 64,
      "train_micro_batch_size_per_gpu": 8,
      "fp16": {
        "enabled": true
      }
    }
    """)

LOCAL_PLUGIN = textwrap.dedent('''\
    import trainlint
    from trainlint.rules import Finding, Rule
    from trainlint.core.diagnostics import Severity

    class NoFp16(Rule):
        """No fp16 here."""
        code = "LC001"
        name = "no-fp16"
        summary = "fp16 is not allowed in this repository."
        default_severity = Severity.ERROR

        def check(self, spec, ctx):
            if spec.value("precision.fp16_enabled"):
                yield Finding("fp16 is enabled", at="precision.fp16_enabled")

    class Exploding(Rule):
        """Always fails."""
        code = "LC002"
        name = "exploding"
        summary = "A rule with a bug."

        def check(self, spec, ctx):
            raise ZeroDivisionError("oops")
            yield

    @trainlint.hookimpl
    def trainlint_rules():
        return [NoFp16, Exploding]
    ''')


@pytest.fixture(autouse=True)
def _trusted_local_plugins(tmp_path, monkeypatch):
    """These tests are about what plugins do once loaded: the project in tmp_path is the user's
    own and trusted (tests/test_trust.py is about when they load)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAINLINT_ALLOW_PLUGINS", "1")


def _project(tmp_path: Path, toml: str, plugin: str | None = LOCAL_PLUGIN) -> Path:
    (tmp_path / ".trainlint.toml").write_text(textwrap.dedent(toml))
    if plugin is not None:
        (tmp_path / "tools").mkdir(exist_ok=True)
        (tmp_path / "tools" / "lint_rules.py").write_text(plugin)
    (tmp_path / "ds_config.json").write_text(FP16_CONFIG)
    return tmp_path


def _json(capsys, *argv: str) -> tuple[int, list[dict]]:
    code = main(["check", "--format", "json", *argv])
    out = capsys.readouterr().out
    return code, [d for f in json.loads(out)["files"] for d in f["diagnostics"]]


def test_builtin_hook_implementations_all_have_specs():
    host = create_host(entry_points=False)
    host.manager.check_pending()


def test_misspelled_hook_fails_check_pending():
    class Misspelled:
        @pluggy.HookimplMarker("trainlint")
        def trainlint_rule(self):  # missing "s"
            return []

    host = create_host(entry_points=False)
    host.manager.register(Misspelled())
    with pytest.raises(pluggy.PluginValidationError):
        host.manager.check_pending()


def test_local_plugin_rule_fires_at_the_value_and_broken_rule_is_contained(tmp_path, capsys):
    root = _project(tmp_path, 'plugins = ["tools/lint_rules.py"]\n')
    code, diags = _json(capsys, str(root / "ds_config.json"))
    by_code = {d["code"]: d for d in diags}
    assert (by_code["LC001"]["line"], by_code["LC001"]["column"]) == (5, 16)
    assert "rule LC002 (exploding)" in by_code["TL998"]["message"] and "ZeroDivisionError" in by_code["TL998"]["message"]
    assert code == 2  # a failing rule means the check did not complete


def test_plugin_that_cannot_be_imported_is_named_and_others_still_run(tmp_path, capsys):
    root = _project(tmp_path, 'plugins = ["tools/lint_rules.py", "tools/broken.py", "no_such_module_xyz"]\n')
    (root / "tools" / "broken.py").write_text("import does_not_exist\n")
    code, diags = _json(capsys, str(root / "ds_config.json"))
    messages = [d["message"] for d in diags if d["code"] == "TL998"]
    assert any("`tools/broken.py`" in m and "ModuleNotFoundError" in m for m in messages)
    assert any("`no_such_module_xyz`" in m for m in messages)
    assert any(d["code"] == "LC001" for d in diags)
    assert code == 2


def test_selection_severity_and_options_from_project_config(tmp_path, capsys):
    root = _project(tmp_path, """\
        plugins = ["tools/lint_rules.py"]
        ignore = ["LC002"]
        [severity]
        no-fp16 = "warning"
        """)
    code, diags = _json(capsys, str(root / "ds_config.json"))
    assert [(d["code"], d["severity"]) for d in diags if d["code"].startswith("LC")] == [("LC001", "warning")]
    assert code == 0
    (root / ".trainlint.toml").write_text('plugins = ["tools/lint_rules.py"]\n')
    code, diags = _json(capsys, "--select", "LC002", "--ignore", "LC", str(root / "ds_config.json"))
    assert [d["code"] for d in diags] == ["TL998"]  # more specific select beats the prefix ignore


def test_per_file_ignores(tmp_path, capsys):
    root = _project(tmp_path, """\
        plugins = ["tools/lint_rules.py"]
        ignore = ["LC002", "TL900"]
        [per-file-ignores]
        "ds_*.json" = ["LC"]
        """)
    code, diags = _json(capsys, str(root / "ds_config.json"))
    assert diags == [] and code == 0


@pytest.mark.parametrize("toml, message", [
    ('plugins = ["tools/lint_rules.py"]\n[rules.LC001]\nheadroom = 1\n', "has no option `headroom`"),
    ('plugins = ["tools/lint_rules.py"]\n[severity]\nLC0001 = "error"\n', "no rule named `LC0001`"),
    ('selct = ["TL"]\n', "unknown setting `selct` (did you mean `select`?)"),
])
def test_bad_project_config_exits_2_with_a_clear_message(tmp_path, capsys, toml, message):
    root = _project(tmp_path, toml)
    assert main(["check", str(root / "ds_config.json")]) == 2
    assert message in capsys.readouterr().err


def test_selection_specificity():
    s = Selection(select=["ALL"], ignore=["TL1"])
    assert not s.enabled("TL110", "zero-pipeline-conflict") and s.enabled("TL201")
    s = Selection(select=["TL110"], ignore=["TL1"])
    assert s.enabled("TL110") and not s.enabled("TL111")
    s = Selection(select=["zero-pipeline-conflict"])
    assert s.enabled("TL110", "zero-pipeline-conflict") and not s.enabled("TL111", "other")
    assert Selection(select=[]).enabled("TL999")  # trainlint's own failures are never hidden


def test_inline_suppressions():
    text = textwrap.dedent("""\
        lr: 6e-4  # trainlint: disable=TL009
        # trainlint: disable-next-line=TL201,oom-risk
        train_micro_batch_size_per_gpu: 64
        # trainlint: disable=TL004
        foo: 1
        bar: 2
        # trainlint: enable=TL004
        baz: 3
        """)
    s = parse_suppressions(text)
    assert s.suppressed("TL009", "yaml-float-as-string", 1) and not s.suppressed("TL009", "x", 2)
    assert s.suppressed("TL201", "oom-risk", 3) and not s.suppressed("TL301", "low-mfu", 3)
    assert s.suppressed("TL004", "unknown-key", 5) and s.suppressed("TL004", "unknown-key", 6)
    assert not s.suppressed("TL004", "unknown-key", 8)
    whole = parse_suppressions("# trainlint: disable-file=TL0\na: 1\n")
    assert whole.suppressed("TL004", "unknown-key", 2) and not whole.suppressed("TL110", "x", 2)
    assert not parse_suppressions("# trainlint: disable-file\n").suppressed("TL999", "internal-error", 1)


@pytest.fixture(scope="module")
def installed_example_plugin(tmp_path_factory) -> Path:
    """pip-installs tests/plugins/trainlint_plugin_example into a private target directory."""
    target = tmp_path_factory.mktemp("site")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(EXAMPLE_PLUGIN)]
    try:
        import setuptools  # noqa: F401

        cmd.insert(4, "--no-build-isolation")
    except ImportError:
        pass
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return target


def _with_plugin(target: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(target), env.get("PYTHONPATH", "")])
    return env


def test_entry_point_plugin_rule_is_listed_and_fires(installed_example_plugin, tmp_path):
    env = _with_plugin(installed_example_plugin)
    listed = subprocess.run([sys.executable, "-m", "trainlint", "rules", "--isolated"], capture_output=True,
                            text=True, env=env, cwd=tmp_path)
    assert "EX001  require-bf16" in listed.stdout and "[example]" in listed.stdout
    (tmp_path / "ds_config.json").write_text(FP16_CONFIG)
    checked = subprocess.run([sys.executable, "-m", "trainlint", "check", "--isolated", "ds_config.json"],
                             capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "ds_config.json:5:16: warning EX001 compute dtype is fp16" in checked.stdout
    explained = subprocess.run([sys.executable, "-m", "trainlint", "explain", "require-bf16", "--isolated"],
                               capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "# require-bf16 (EX001)" in explained.stdout and "## Why is this bad?" in explained.stdout


def test_docs_rules_md_is_current():
    from trainlint.rules.docs import render_markdown

    registry = build_registry(create_host(entry_points=False))
    current = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == render_markdown(registry.rules.values()), "docs/rules.md is stale: run `trainlint rules --format markdown --isolated > docs/rules.md`"


def test_inline_suppressions_end_to_end_in_yaml_and_shell(tmp_path, capsys):
    neox = tmp_path / "run.yml"
    neox.write_text("num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\n"
                    "optimizer: {type: Adam, params: {lr: 6e-4}}  # trainlint: disable=TL009\n"
                    "min_lr: 1e-5\n")
    _code, diags = _json(capsys, "--isolated", str(neox))
    assert [(d["code"], d["line"]) for d in diags if d["code"] == "TL009"] == [("TL009", 5)]
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\n# trainlint: disable-next-line=unknown-key\n"
                      "python pretrain_gpt.py --num-layers 2 --hiden-size 8 \\\n    --micro-batch-size 1 --bogus-flag\n")
    _code, diags = _json(capsys, "--isolated", str(script))
    assert [(d["code"], d["line"]) for d in diags if d["code"] == "TL004"] == [("TL004", 4)]


def test_oom_risk_is_a_warning_above_the_headroom_and_the_headroom_is_an_option(tmp_path, capsys):
    import yaml

    config = tmp_path / "run.yml"
    cases = yaml.safe_load((Path(__file__).parent / "rules" / "cases" / "TL201.yaml").read_text())["cases"]
    text = next(c for c in cases if c["name"] == "neox-above-headroom-is-a-warning")["files"]["run.yml"]
    config.write_text(text)
    args = ["--model", "llama2-7b", "--nodes", "16", "--select", "TL201"]
    _code, diags = _json(capsys, "--isolated", *args, str(config))
    assert [(d["code"], d["severity"]) for d in diags] == [("TL201", "warning")]
    (tmp_path / ".trainlint.toml").write_text("[rules.oom-risk]\nheadroom = 0.99\n")
    _code, diags = _json(capsys, *args, str(config))
    assert diags == []


def test_entry_point_scan_finds_a_declared_group(tmp_path, monkeypatch):
    """The cheap look at entry_points.txt must say True whenever importlib.metadata could
    find a plugin, and False only when no distribution declares the group."""
    from trainlint.project import plugins

    dist = tmp_path / "some_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n\n[other]\na = b\n", encoding="utf-8")
    monkeypatch.setattr("sys.path", [str(tmp_path)])
    assert plugins._may_declare_entry_points("trainlint") is False
    (dist / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n[trainlint]\nmine = my_rules\n", encoding="utf-8")
    assert plugins._may_declare_entry_points("trainlint") is True
    monkeypatch.setattr("sys.path", [str(tmp_path / "rules.zip")])
    (tmp_path / "rules.zip").write_bytes(b"PK")
    assert plugins._may_declare_entry_points("trainlint") is True  # a zip: let importlib.metadata decide
