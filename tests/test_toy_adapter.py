"""Adding a format is one module: a toy ``key = value`` training format (tests/plugins/toy_format.py),
registered as a local plugin through the ``trainlint_adapters`` hook, is read, estimated, suggested
for and written back through the adapter protocol alone (issue 19)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainlint.cli import main

PLUGIN = Path(__file__).resolve().parent / "plugins" / "toy_format.py"

RUN = """\
# a 1.3B GPT on one node
model.num_layers = 24
model.hidden_size = 2048
model.num_attention_heads = 16
model.seq_length = 2048
model.vocab_size = 50304
parallel.tensor = 8
batch.micro_batch = 1
batch.global_batch = 64
precision.dtype = bf16
cluster.gpus_per_node = 8
cluster.nodes = 1
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copy(PLUGIN, tmp_path / "toy_format.py")
    (tmp_path / ".trainlint.toml").write_text('plugins = ["toy_format.py"]\n')
    (tmp_path / "run.toytrain").write_text(RUN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAINLINT_ALLOW_PLUGINS", "1")  # the project is the user's own (trust: test_trust.py)
    return tmp_path


def _check(capsys, path: Path) -> dict:
    code = main(["check", "--format", "json", "--gpu", "h100-80gb", str(path)])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    (only,) = out["files"]
    return only


def test_toy_format_is_read_by_its_plugin_adapter(project, capsys):
    (project / "bad.toytrain").write_text("model.num_layers = 2\nthis is not a setting\n")
    found = _check(capsys, project / "bad.toytrain")
    assert found["format"] == "toytrain"
    assert [(d["code"], d["line"], d["column"]) for d in found["diagnostics"] if d["code"] == "TL003"] == [("TL003", 2, 1)]


def test_toy_format_is_estimated(project, capsys):
    from trainlint.files.checker import check_paths
    from trainlint.project.config import discover
    from trainlint.estimator import build_context, estimate
    from trainlint.project.plugins import project_host
    from trainlint.project.registry import build_registry

    registry = build_registry(project_host(discover(project / "run.toytrain", None, False)))
    (result,) = check_paths([str(project / "run.toytrain")], registry.adapters)
    assert result.format == "toytrain"
    (spec,) = result.specs
    est = estimate(spec, build_context(spec, gpu="h100-80gb"))
    assert est.ok and est.inputs.tp == 8 and est.inputs.world == 8 and est.inputs.micro == 1
    assert 0 < est.worst_stage.total < est.capacity_bytes and est.tokens_per_s > 0


def test_toy_format_is_suggested_for_and_written_back(project, capsys):
    code = main(["suggest", "--format", "json", "--gpu", "h100-80gb", "run.toytrain"])
    out = capsys.readouterr().out
    assert code == 0, out
    run = json.loads(out)
    assert run["framework"] == "toytrain" and run["current"]["layout"]["tp"] == 8
    first = run["suggestions"][0]
    # spelled by the toy adapter, in its own format
    assert first["changes"] and first["diff"] == [f"{k} = {v}" for k, v in first["changes"].items() if k != "parallel.data"]
    code = main(["suggest", "--gpu", "h100-80gb", "run.toytrain", "--write-to", "run.toytrain"])
    capsys.readouterr()
    assert code == 0
    text = (project / "run.toytrain").read_text()
    # the search varied what the toy format says it can express (Adapter.expressible): TP too
    assert "parallel.tensor" in first["changes"] and first["layout"]["tp"] != 8
    assert text.startswith("# a 1.3B GPT on one node\n")
    assert all(f"{k} = {v}" in text.splitlines() for k, v in first["changes"].items() if k != "parallel.data")
    # everything else byte for byte, the new keys as new lines at the end
    kept = [line for line in RUN.splitlines() if not line.startswith(tuple(first["changes"]))]
    assert all(line in text.splitlines() for line in kept)
    # read again: the file now is the suggested layout
    again = _check(capsys, project / "run.toytrain")
    assert again["format"] == "toytrain"


def test_toy_writer_refuses_what_the_format_cannot_write(project):
    from trainlint.files.checker import check_paths
    from trainlint.project.config import discover
    from trainlint.layout.writeback import WritebackError, rewrite
    from trainlint.project.plugins import project_host
    from trainlint.project.registry import build_registry

    registry = build_registry(project_host(discover(project / "run.toytrain", None, False)))
    (result,) = check_paths([str(project / "run.toytrain")], registry.adapters)
    texts = rewrite(result, result.specs[0], {"parallel.tensor": 4}, adapters=registry.adapters)
    assert texts[str(project / "run.toytrain")] == RUN.replace("parallel.tensor = 8", "parallel.tensor = 4")
    with pytest.raises(WritebackError, match="removing a setting"):
        rewrite(result, result.specs[0], {"parallel.context": None}, adapters=registry.adapters)
    # without the session's adapters, a toytrain file is one trainlint cannot write
    with pytest.raises(WritebackError, match="cannot write a layout back into a toytrain file"):
        rewrite(result, result.specs[0], {"parallel.tensor": 4})


BIG = RUN.replace("model.seq_length = 2048", "model.seq_length = 4096").replace(
    "parallel.tensor = 8", "parallel.tensor = 1").replace("batch.micro_batch = 1", "batch.micro_batch = 16").replace(
    "batch.global_batch = 64", "batch.global_batch = 128")


def test_toy_format_gets_fix_hints_and_check_fix_from_its_adapter(project, capsys):
    """An out-of-memory finding on a plugin format: the fix hint is spelled by the toy adapter
    (the session's adapters reach the rule through RuleContext), and ``check --fix`` writes it with
    the toy adapter's writer (Finding.changes -> Adapter.writer -> edits), only as an unsafe fix."""
    path = project / "big.toytrain"
    path.write_text(BIG)
    found = _check(capsys, path)
    (oom,) = [d for d in found["diagnostics"] if d["code"] == "TL201"]
    assert "with batch.micro_batch = " in oom["fix"] and "micro batch " not in oom["fix"]
    smaller = int(oom["fix"].split("with batch.micro_batch = ")[1].split(":")[0])
    assert 1 <= smaller < 16
    # a plain --fix applies safe fixes only: a layout change is unsafe, the file stays as it is
    assert main(["check", "--fix", "--gpu", "h100-80gb", str(path)]) in (0, 1)
    capsys.readouterr()
    assert path.read_text() == BIG
    assert main(["check", "--diff", "--unsafe-fixes", "--gpu", "h100-80gb", str(path)]) == 1
    diff = capsys.readouterr().out
    assert "-batch.micro_batch = 16\n" in diff and f"+batch.micro_batch = {smaller}\n" in diff
    assert main(["check", "--fix", "--unsafe-fixes", "--gpu", "h100-80gb", str(path)]) == 0
    capsys.readouterr()
    assert path.read_text() == BIG.replace("batch.micro_batch = 16", f"batch.micro_batch = {smaller}")
    assert not [d for d in _check(capsys, path)["diagnostics"] if d["code"] == "TL201"]


def test_toy_format_gets_the_batch_check_and_its_fix_from_its_adapter(project, capsys):
    """TL100 on a plugin format: its batch fields must multiply out; the fix is spelled by the toy
    adapter and written by its writer (Finding.changes), as an unsafe fix."""
    path = project / "batch.toytrain"
    text = RUN.replace("batch.global_batch = 64", "batch.grad_accum = 4\nbatch.global_batch = 30").replace(
        "cluster.nodes = 1", "cluster.nodes = 1\ncluster.world_size = 8")  # TP 8 on 8 GPUs: DP 1
    path.write_text(text)
    found = _check(capsys, path)
    (tl100,) = [d for d in found["diagnostics"] if d["code"] == "TL100"]
    assert (tl100["line"], tl100["column"]) == (10, 22)
    assert tl100["fix"] == "set batch.global_batch = 4, or leave one of the three out"
    assert tl100["applicability"] == "unsafe"
    assert main(["check", "--fix", "--unsafe-fixes", "--select", "TL100", "--gpu", "h100-80gb", str(path)]) == 0
    capsys.readouterr()
    assert path.read_text() == text.replace("batch.global_batch = 30", "batch.global_batch = 4")
