"""Local plugins named by a project config run only when trusted (issue 20, trainlint.files.trust).

Each plugin here writes a marker file when imported: the marker shows whether code from the
checkout ran, independently of what trainlint reports."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainlint.cli import main

PLUGIN = 'import pathlib\npathlib.Path(__file__).with_name("IMPORTED").write_text("ran")\n'


def make_project(root: Path, name: str = ".trainlint.toml") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "tools").mkdir(exist_ok=True)
    (root / "tools" / "evil.py").write_text(PLUGIN)
    (root / name).write_text('plugins = ["tools/evil.py"]\n')
    (root / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 4}\n')
    return root


def check(capsys, root: Path, *extra: str) -> tuple[int, list[dict]]:
    code = main(["check", "--format", "json", "--select", "TL015,TL998", *extra, str(root / "ds_config.json")])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, [d for f in json.loads(out)["files"] for d in f["diagnostics"]]


@pytest.fixture(autouse=True)
def clean_trust(monkeypatch, tmp_path):
    monkeypatch.delenv("TRAINLINT_ALLOW_PLUGINS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_untrusted_plugins_are_not_imported_and_one_finding_says_how(tmp_path, capsys, monkeypatch):
    root = make_project(tmp_path / "repo")
    monkeypatch.chdir(root)
    code, diags = check(capsys, root)
    assert not (root / "tools" / "IMPORTED").exists()
    (tl015,) = diags
    assert tl015["code"] == "TL015" and tl015["severity"] == "warning"
    assert "--allow-plugins" in tl015["message"] and "TRAINLINT_ALLOW_PLUGINS=1" in tl015["message"]
    assert "trusted-projects" in tl015["message"] and code == 0


@pytest.mark.parametrize("how", ["flag", "env", "trust-list", "trust-list-parent"])
def test_explicit_trust_loads_them(tmp_path, capsys, monkeypatch, how):
    root = make_project(tmp_path / "repo" / "sub")
    monkeypatch.chdir(tmp_path / "repo")
    extra: tuple[str, ...] = ()
    if how == "flag":
        extra = ("--allow-plugins",)
    elif how == "env":
        monkeypatch.setenv("TRAINLINT_ALLOW_PLUGINS", "1")
    else:
        listed = root if how == "trust-list" else tmp_path / "repo"
        (tmp_path / "xdg" / "trainlint").mkdir(parents=True)
        (tmp_path / "xdg" / "trainlint" / "trusted-projects").write_text(f"# mine\n{listed}\n")
    code, diags = check(capsys, root, *extra)
    assert (root / "tools" / "IMPORTED").exists() and diags == [] and code == 0


def test_a_config_above_the_current_directory_is_never_trusted(tmp_path, capsys, monkeypatch):
    """A .trainlint.toml planted in a parent (/tmp) is found by walking up, but its code never runs."""
    root = make_project(tmp_path / "shared")
    inner = root / "checkout"
    inner.mkdir()
    (inner / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 4}\n')
    monkeypatch.chdir(inner)
    monkeypatch.setenv("TRAINLINT_ALLOW_PLUGINS", "1")
    _code, diags = check(capsys, inner, "--allow-plugins")
    assert not (root / "tools" / "IMPORTED").exists()
    assert [d["code"] for d in diags] == ["TL015"] and "not at or below" in diags[0]["message"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a file away")
def test_a_config_of_another_user_is_never_trusted(tmp_path, capsys, monkeypatch):
    root = make_project(tmp_path / "repo")
    os.chown(root / ".trainlint.toml", 4242, 4242)
    monkeypatch.chdir(root)
    _code, diags = check(capsys, root, "--allow-plugins")
    assert not (root / "tools" / "IMPORTED").exists()
    assert [d["code"] for d in diags] == ["TL015"] and "another user" in diags[0]["message"]


def test_pyproject_plugins_and_module_names_follow_the_same_rule(tmp_path, capsys, monkeypatch):
    root = tmp_path / "repo"
    make_project(root, name="unused.toml")
    (root / "pyproject.toml").write_text('[tool.trainlint]\nplugins = ["tools/evil.py", "json"]\n')
    monkeypatch.chdir(root)
    _code, diags = check(capsys, root)
    assert not (root / "tools" / "IMPORTED").exists()
    assert [d["code"] for d in diags] == ["TL015"] and "`json`" in diags[0]["message"]


def test_rules_and_explain_do_not_import_untrusted_plugins(tmp_path, capsys, monkeypatch):
    root = make_project(tmp_path / "repo")
    monkeypatch.chdir(root)
    assert main(["rules"]) == 0
    assert "not loaded" in capsys.readouterr().err
    main(["explain", "TL001"])
    capsys.readouterr()
    assert not (root / "tools" / "IMPORTED").exists()
    assert main(["rules", "--allow-plugins"]) == 0
    capsys.readouterr()
    assert (root / "tools" / "IMPORTED").exists()


def test_installed_entry_point_plugins_still_load(tmp_path, monkeypatch):
    from trainlint.project import plugins
    from trainlint.project.config import ProjectConfig

    calls = []
    monkeypatch.setattr(plugins, "_load_entry_points", lambda host: calls.append(host))
    root = make_project(tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    project = ProjectConfig(path=str(root / ".trainlint.toml"), plugins=["tools/evil.py"])
    host = plugins.project_host(project)
    assert calls and [f.code for f in host.failures] == ["TL015"]


def test_language_server_follows_the_rule_and_the_editors_workspace_trust(tmp_path, monkeypatch):
    from trainlint.lsp.workspace import Linter

    root = make_project(tmp_path / "repo")
    monkeypatch.chdir(tmp_path)  # the server's own directory does not matter: the workspace folder does
    path, text = str(root / "ds_config.json"), (root / "ds_config.json").read_text()

    Linter({}).lint(path, text, folder=str(root))
    assert not (root / "tools" / "IMPORTED").exists()
    Linter({"allowPlugins": True, "workspaceTrusted": False}).lint(path, text, folder=str(root))
    assert not (root / "tools" / "IMPORTED").exists()
    Linter({"allowPlugins": True}).lint(path, text, folder=str(tmp_path / "elsewhere"))
    assert not (root / "tools" / "IMPORTED").exists()
    Linter({"allowPlugins": True, "workspaceTrusted": True}).lint(path, text, folder=str(root))
    assert (root / "tools" / "IMPORTED").exists()
