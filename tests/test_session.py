"""trainlint.project.session: the one way every face opens a project.

Structure: every face (check, run, estimate, suggest, plan, rules, the language server) calls
:func:`trainlint.project.session.open_session`, and no face or rule builds its own plugin host, registry,
project config or estimator context. Behaviour: what a plugin contributes (an adapter, a GPU, a
model preset) is seen by check, estimate, suggest and plan alike.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from conftest import estimate_run
from trainlint.cli import main

REPO = Path(__file__).resolve().parents[1]
LINTER = REPO / "linter"
EXAMPLES = REPO / "examples"

FACES = {
    "check": LINTER / "commands" / "check.py",
    "run": LINTER / "commands" / "run.py",
    "estimate": LINTER / "commands" / "estimate.py",
    "suggest": LINTER / "commands" / "suggest.py",
    "plan": LINTER / "commands" / "plan.py",
    "rules": LINTER / "commands" / "rules.py",
    "lsp": LINTER / "lsp" / "workspace.py",
}

# What only the session may do: find the project config, build a plugin host or a registry, take
# the shipped adapters or GPU table, build an estimator context.
OPENING = {"discover", "project_host", "create_host", "build_registry", "builtin_adapters", "build_context",
           "custom_gpus", "check_paths", "load_gpus", "load_model_presets"}


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _called(tree: ast.AST, methods: bool = True) -> set[str]:
    """Names of the functions called (``f(...)``; with ``methods`` also ``x.f(...)``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                names.add(f.id)
            elif isinstance(f, ast.Attribute) and methods:
                names.add(f.attr)
    return names


def _imported(tree: ast.AST) -> set[str]:
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


def _face_modules() -> list[Path]:
    return sorted([*(LINTER / "commands").glob("*.py"), *(LINTER / "lsp").glob("*.py")])


@pytest.mark.parametrize("face", sorted(FACES))
def test_every_face_opens_its_project_with_open_session(face):
    assert "open_session" in _called(_tree(FACES[face])), f"{face} does not call trainlint.project.session.open_session"


@pytest.mark.parametrize("path", _face_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_face_builds_its_own_host_registry_config_or_context(path):
    tree = _tree(path)
    found = (_called(tree, methods=False) | _imported(tree)) & OPENING
    assert not found, f"{path.relative_to(REPO)} uses {sorted(found)}: that is the session's job"


def test_no_rule_builds_a_private_plugin_host():
    for path in sorted((LINTER / "rules").rglob("*.py")):
        tree = _tree(path)
        found = (_called(tree) | _imported(tree)) & {"create_host", "project_host", "build_registry"}
        assert not found, f"{path.relative_to(REPO)} builds its own plugin host ({sorted(found)})"


def test_the_language_server_passes_typed_options_not_a_namespace():
    for path in sorted((LINTER / "lsp").glob("*.py")):
        assert "Namespace(" not in path.read_text(encoding="utf-8"), path


def test_the_open_function_lives_in_one_place():
    defined = [p for p in LINTER.rglob("*.py")
               if any(isinstance(n, ast.FunctionDef) and n.name == "open_session" for n in ast.walk(_tree(p)))]
    assert defined == [LINTER / "project" / "session.py"]


# ------------------------------------------------------------------ what plugins contribute, seen by every face

TOY_ADAPTER = '''\
import json

import trainlint
from trainlint.adapters.base import Adapter, CERTAIN, NOT_MINE
from trainlint.adapters.deepspeed.adapter import load_deepspeed_config
from trainlint.files.sources import SourceText


class AcmeJson(Adapter):
    """A team's wrapper format: a DeepSpeed config under the top-level key "acme"."""
    name = "acme"
    extensions = (".acme",)

    def sniff(self, path, text):
        return CERTAIN if path.endswith(".acme") and '"acme"' in text else NOT_MINE

    def load(self, source, context):
        inner = json.dumps(json.loads(source.text)["acme"], indent=2)
        loaded = load_deepspeed_config(SourceText(source.path, inner))
        loaded.format = "acme"
        return loaded


@trainlint.hookimpl
def trainlint_adapters():
    return [AcmeJson()]
'''

GPU_PLUGIN = '''\
import trainlint


@trainlint.hookimpl
def trainlint_gpus():
    # an accelerator with 200 GB and no bf16 (fp16 only)
    return [{"id": "acme-x1", "name": "Acme X1", "memory_gb": 200, "fp16_tflops": 500.0,
             "supports_bf16": False, "hbm_bandwidth_tbps": 4.0, "intra_node_bw_gbps": 300.0,
             "inter_node_bw_gbps": 50.0, "gpus_per_node": 8}]
'''

PRESET_PLUGIN = '''\
import trainlint


@trainlint.hookimpl
def trainlint_model_presets():
    return [{"id": "acme-3b", "num_layers": 24, "hidden_size": 3072, "num_attention_heads": 24,
             "ffn_hidden_size": 8192, "vocab_size": 50304, "seq_length": 2048}]
'''

DS_CONFIG = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8,
             "bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose config names three local plugins (trusted: this is the user's own tree)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAINLINT_ALLOW_PLUGINS", "1")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "acme_adapter.py").write_text(TOY_ADAPTER)
    (tools / "acme_gpu.py").write_text(GPU_PLUGIN)
    (tools / "acme_preset.py").write_text(PRESET_PLUGIN)
    (tmp_path / ".trainlint.toml").write_text(
        'plugins = ["tools/acme_adapter.py", "tools/acme_gpu.py", "tools/acme_preset.py"]\n')
    (tmp_path / "run.acme").write_text(json.dumps({"acme": DS_CONFIG}, indent=2))
    (tmp_path / "ds_config.json").write_text(json.dumps(DS_CONFIG, indent=2))
    return tmp_path


def _out(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_estimate_reads_a_file_only_a_plugin_adapter_claims(project, capsys):
    code, out, err = _out(capsys, "estimate", "run.acme", "--model", "llama2-7b", "--nodes", "1", "--format", "json")
    assert code == 0, err
    data = estimate_run(out)
    assert data["path"].endswith("run.acme") and data["num_params"] > 6e9
    # without the plugin (an isolated run ignores the project config) nothing claims the file
    code, out, err = _out(capsys, "estimate", "run.acme", "--isolated", "--model", "llama2-7b", "--nodes", "1")
    assert code == 2 and "not a DeepSpeed" in err


def test_suggest_reads_a_file_only_a_plugin_adapter_claims(project, capsys):
    code, out, err = _out(capsys, "suggest", "run.acme", "--model", "llama2-7b", "--nodes", "1", "--format", "json")
    assert code in (0, 1), err
    assert json.loads(out)["path"].endswith("run.acme")
    code, out, err = _out(capsys, "suggest", "run.acme", "--isolated", "--model", "llama2-7b", "--nodes", "1")
    assert code == 2 and "not a DeepSpeed" in err


def test_a_plugin_gpu_is_used_by_estimate_check_suggest_and_plan(project, capsys):
    code, out, err = _out(capsys, "estimate", "ds_config.json", "--model", "llama2-7b", "--nodes", "1",
                          "--gpu", "acme-x1", "--format", "json")
    assert code == 0, err
    assert estimate_run(out)["gpu"] == "acme-x1"
    # the start-up rule that reads the target GPU resolves it in the same table: no bf16 on it
    code, out, err = _out(capsys, "check", "ds_config.json", "--gpu", "acme-x1", "--select", "TL112",
                          "--format", "json")
    diags = [d for f in json.loads(out)["files"] for d in f["diagnostics"]]
    assert code == 1 and [d["code"] for d in diags] == ["TL112"] and "Acme X1" in diags[0]["message"]
    code, out, err = _out(capsys, "suggest", "ds_config.json", "--model", "llama2-7b", "--nodes", "1",
                          "--gpu", "acme-x1", "--format", "json")
    assert code in (0, 1), err
    assert json.loads(out)["gpu"] == "acme-x1"
    code, out, err = _out(capsys, "plan", "--params", "7B", "--gpu", "acme-x1", "--dtype", "fp16", "--days", "30",
                          "--mfu", "0.4", "--format", "json")
    assert code in (0, 1), err
    assert json.loads(out)["gpu"] == "acme-x1"
    code, out, err = _out(capsys, "estimate", "ds_config.json", "--isolated", "--model", "llama2-7b",
                          "--gpu", "acme-x1")
    assert code == 2 and "acme-x1" in err  # unknown without the plugin


def test_a_plugin_gpu_is_among_the_compared_gpus(project, capsys):
    code, out, err = _out(capsys, "estimate", "ds_config.json", "--model", "llama2-7b", "--nodes", "1",
                          "--compare-gpus", "--tokens", "1T", "--format", "json")
    assert code == 0, err
    assert "acme-x1" in {row["gpu"] for row in estimate_run(out)["compare_gpus"]}


def test_a_plugin_model_preset_is_used_by_estimate_suggest_check_and_plan(project, capsys):
    code, out, err = _out(capsys, "estimate", "ds_config.json", "--model", "acme-3b", "--nodes", "1",
                          "--format", "json")
    assert code == 0, err
    # 24 layers of 12 x 3072^2 (plus embeddings): a ~3 B model, not a shipped preset
    assert 2.5e9 < estimate_run(out)["num_params"] < 3.5e9
    code, out, err = _out(capsys, "suggest", "ds_config.json", "--model", "acme-3b", "--nodes", "1", "--format", "json")
    assert code in (0, 1), err
    code, out, err = _out(capsys, "check", "ds_config.json", "--model", "acme-3b", "--nodes", "1", "--format", "json")
    assert code in (0, 1), err
    code, out, err = _out(capsys, "plan", "--model", "acme-3b", "--days", "30", "--mfu", "0.4", "--format", "json")
    assert code in (0, 1), err
    assert json.loads(out)["model"] == "acme-3b"
    code, out, err = _out(capsys, "estimate", "ds_config.json", "--isolated", "--model", "acme-3b")
    assert code == 2 and "acme-3b" in err


def test_a_malformed_plugin_entry_is_one_tl998_naming_the_plugin(project, capsys):
    (project / "tools" / "acme_gpu.py").write_text(textwrap.dedent('''\
        import trainlint

        @trainlint.hookimpl
        def trainlint_gpus():
            return [{"id": "broken"}, "not a dict"]
        '''))
    code, out, _err = _out(capsys, "check", "ds_config.json", "--format", "json")
    messages = [d["message"] for f in json.loads(out)["files"] for d in f["diagnostics"] if d["code"] == "TL998"]
    assert code == 2 and len(messages) == 2 and all("acme_gpu.py" in m for m in messages)
    assert any("'broken'" in m and "memory_gb" in m for m in messages)


def test_a_misspelled_hook_is_one_tl998_naming_the_plugin_and_the_hook(project, capsys):
    """pluggy keeps an implementation of a hook with no spec and never calls it: the rules of
    ``trainlint_rulez`` would be silently missing. It is a TL998 (pluggy's check_pending), the
    plugin's other hooks still count, and an ``optionalhook`` implementation is not reported."""
    (project / "tools" / "acme_gpu.py").write_text(GPU_PLUGIN + textwrap.dedent('''

        @trainlint.hookimpl
        def trainlint_rulez():
            return []

        @trainlint.hookimpl(optionalhook=True)
        def trainlint_future_hook():
            return []
        '''))
    code, out, _err = _out(capsys, "check", "ds_config.json", "--gpu", "acme-x1", "--format", "json")
    diagnostics = [d for f in json.loads(out)["files"] for d in f["diagnostics"]]
    messages = [d["message"] for d in diagnostics if d["code"] == "TL998"]
    assert code == 2 and len(messages) == 1, messages
    assert "acme_gpu.py" in messages[0] and "`trainlint_rulez`" in messages[0] and "`trainlint_rules`" in messages[0]
    assert "trainlint_future_hook" not in messages[0]
    # its GPU is still in the table: the start-up rule reads it (no bf16 on acme-x1)
    assert "TL112" in {d["code"] for d in diagnostics}
    # the same plugin spelled right: no TL998
    (project / "tools" / "acme_gpu.py").write_text(GPU_PLUGIN)
    code, out, _err = _out(capsys, "check", "ds_config.json", "--gpu", "acme-x1", "--format", "json")
    assert "TL998" not in {d["code"] for f in json.loads(out)["files"] for d in f["diagnostics"]}


def test_the_language_server_sees_the_plugin_gpu(project):
    from trainlint.lsp.workspace import Linter

    linter = Linter({"gpu": "acme-x1"})
    text = (project / "ds_config.json").read_text()
    # the workspace folder is what the editor trusts (with no folder nothing is: issue 29, S7)
    linted = linter.lint(str(project / "ds_config.json"), text, 1, folder=str(project))
    codes = [d.code for ds in linted.by_path.values() for d in ds]
    assert "TL112" in codes and "TL998" not in codes
