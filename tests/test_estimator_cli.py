"""``trainlint estimate`` end to end: text, JSON, missing inputs, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.cli import main
from conftest import estimate_run, estimate_runs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DS_JSON = {"train_batch_size": 256, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 8,
           "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}


@pytest.fixture
def ds_file(tmp_path: Path) -> Path:
    p = tmp_path / "ds_config.json"
    p.write_text(json.dumps(DS_JSON), encoding="utf-8")
    return p


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["estimate", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_bare_deepspeed_json_says_what_is_missing(capsys, tmp_path):
    p = tmp_path / "bare.json"
    p.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True}}), encoding="utf-8")
    code, out, _ = run(capsys, str(p), "--isolated")
    assert code == 1
    assert "cannot estimate" in out and "--model" in out and "--nodes" in out


def test_text_output(capsys, ds_file):
    code, out, _ = run(capsys, str(ds_file), "--model", "llama2-7b", "--gpu", "a100-80gb", "--isolated")
    assert code == 0
    for needle in ("Memory per GPU", "total", "Time per step", "tokens/s", "MFU", "Bound:", "Inputs not read from the config",
                   "[cli]", "world size" if False else "parallel.data"):
        assert needle in out
    assert "[" in out and "#" in out  # the bar against capacity


def test_json_output_shape(capsys, ds_file):
    code, out, _ = run(capsys, str(ds_file), "--model", "llama2-7b", "--format", "json", "--isolated")
    assert code == 0
    data = estimate_run(out)
    assert set(data["memory_gib"]) == {"params", "grads", "optimizer", "activations", "buffers", "overhead", "total"}
    for key in ("capacity_gib", "step_time_s", "tokens_per_s", "mfu", "model_flops_per_step", "bound", "time_s",
                "stages", "assumptions"):
        assert key in data
    assert data["gpu"] == "h100-sxm"
    assert any(a["field"] == "cluster.gpu" and a["origin"] == "assumed" for a in data["assumptions"])


def test_json_is_one_shape_for_one_run_several_and_none(capsys, ds_file, tmp_path):
    """``{"runs": [...]}`` whatever the count: once an object for one run and a list for several,
    so a reader had to tell them apart (issue 31). The same with --compare-gpus."""
    other = tmp_path / "other" / "ds_config.json"
    other.parent.mkdir()
    other.write_text(json.dumps(dict(DS_JSON, train_micro_batch_size_per_gpu=1, gradient_accumulation_steps=16)), encoding="utf-8")
    flags = ("--model", "llama2-7b", "--format", "json", "--isolated")
    code, out, _ = run(capsys, str(ds_file), *flags)
    assert code == 0 and [r["path"] for r in estimate_runs(out)] == [str(ds_file)]
    code, out, _ = run(capsys, str(ds_file), str(other), *flags)
    runs = estimate_runs(out)
    assert code == 0 and [r["path"] for r in runs] == [str(ds_file), str(other)]
    assert runs[0]["memory_gib"]["activations"] > runs[1]["memory_gib"]["activations"]  # micro batch 2 vs 1
    code, out, _ = run(capsys, str(ds_file), str(other), *flags, "--tokens", "1T", "--compare-gpus", "h100-sxm,a100-80gb")
    runs = estimate_runs(out)
    assert code == 0 and [r["path"] for r in runs] == [str(ds_file), str(other)]
    assert all({row["gpu"] for row in r["compare_gpus"]} == {"h100-sxm", "a100-80gb"} for r in runs)
    not_a_config = tmp_path / "notes.json"
    not_a_config.write_text('{"hello": "world"}', encoding="utf-8")
    code, out, err = run(capsys, str(not_a_config), *flags)
    assert code == 2 and estimate_runs(out) == [] and "notes.json" in err


def test_project_config_supplies_gpu_and_model(capsys, ds_file, tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.trainlint]\ngpu = "mygpu"\nmodel = "llama2-7b"\n'
        '[tool.trainlint.gpus.mygpu]\nmemory_gb = 48\nbf16_tflops = 300\nhbm_bandwidth_tbps = 1.0\n', encoding="utf-8")
    code, out, _ = run(capsys, str(ds_file), "--format", "json")
    data = estimate_run(out)
    assert code == 0 and data["gpu"] == "mygpu" and data["capacity_gib"] == pytest.approx(48)
    code, out, _ = run(capsys, str(ds_file), "--format", "json", "--gpu", "a100-80gb")
    assert estimate_run(out)["gpu"] == "a100-80gb"  # the flag wins


def test_each_path_is_estimated_with_its_own_project_config(capsys, tmp_path):
    """Two folders, each with its own project config (GPU and model): `estimate a/ b/` estimates
    each folder's run with its own, as `check` resolves configs, never with the first path's."""
    for name, gpu, model in (("a", "a100-80gb", "llama2-7b"), ("b", "h100-sxm", "llama2-13b")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f'[tool.trainlint]\ngpu = "{gpu}"\nmodel = "{model}"\n', encoding="utf-8")
        (folder / "ds_config.json").write_text(json.dumps(DS_JSON), encoding="utf-8")
    code, out, _ = run(capsys, str(tmp_path / "a" / "ds_config.json"), str(tmp_path / "b" / "ds_config.json"),
                       "--format", "json")
    runs = estimate_runs(out)
    assert code == 0 and [r["gpu"] for r in runs] == ["a100-80gb", "h100-sxm"]
    assert runs[0]["memory_gib"]["params"] < runs[1]["memory_gib"]["params"]  # 7B against 13B


def test_unknown_gpu_and_model_are_usage_errors(capsys, ds_file):
    code, _, err = run(capsys, str(ds_file), "--gpu", "h1000", "--isolated")
    assert code == 2 and "h1000" in err
    code, _, err = run(capsys, str(ds_file), "--model", "no-such-model", "--isolated")
    assert code == 2 and "no-such-model" in err


def test_missing_file(capsys):
    code, _, err = run(capsys, "does/not/exist.json")
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("name,extra", [("megatron_gpt_8b.sh", ["--model", "llama3-8b"]),
                                        ("neox_1-3B.yml", ["--model", "gpt-neox-20b", "--nodes", "1"]),
                                        ("deepspeed_zero3_offload.json", ["--model", "llama2-7b", "--nodes", "2"])])
def test_examples_end_to_end(capsys, name, extra):
    path = EXAMPLES / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    code, out, err = run(capsys, str(path), "--format", "json", "--isolated", *extra)
    assert code == 0, err
    items = estimate_runs(out)
    assert items and all(item["step_time_s"] > 0 and item["memory_gib"]["total"] > 0 for item in items)


def test_module_entry_point(ds_file):
    proc = subprocess.run([sys.executable, "-m", "trainlint", "estimate", str(ds_file), "--model", "llama2-7b",
                           "--format", "json", "--isolated"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert estimate_run(proc.stdout)["bound"] in ("compute", "memory", "network")
