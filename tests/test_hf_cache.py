"""A model named by Hub id is read from the local Hugging Face cache (never downloaded): the
LLaMA-Factory YAML, ``--model`` and a tokenizer name get the cached config.json's shape; a model
found nowhere is named in what the estimate asks for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.estimator.context import resolve_model
from trainlint.presets.hf_cache import cache_dirs, cached_file, is_repo_id
from trainlint.core.provenance import Origin
from trainlint.adapters.hf.tokenizer_vocab import from_preset
from conftest import estimate_run

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
# the shape of a small gated-MLP GQA decoder (written for this test)
CONFIG = {"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16,
          "num_hidden_layers": 12, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
          "max_position_embeddings": 32768, "tie_word_embeddings": True, "hidden_act": "silu"}
REPO = "example-org/Tiny-Decoder-1B"


def cache_model(cache: Path, repo: str, config: dict, commit: str = COMMIT, ref: bool = True) -> Path:
    folder = cache / ("models--" + repo.replace("/", "--"))
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    if ref:
        (folder / "refs").mkdir(exist_ok=True)
        (folder / "refs" / "main").write_text(commit)
    return snap / "config.json"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch) -> Path:
    cache = tmp_path / "hub-cache"
    cache.mkdir()
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def test_repo_ids_and_paths():
    assert is_repo_id("Qwen/Qwen3-4B-Instruct-2507") and is_repo_id("gpt2")
    for path in ("../secrets/x", "/etc/passwd", "./local/model", "a/b/c", "org/..", ""):
        assert not is_repo_id(path), path


def test_cache_folders_follow_the_hub_library():
    env = {"HF_HOME": "/h", "XDG_CACHE_HOME": "/x"}
    assert cache_dirs(env) == [Path("/h/hub"), Path("/x/huggingface/hub")]
    assert cache_dirs({"HF_HUB_CACHE": "/c"})[0] == Path("/c")


def test_refs_main_names_the_snapshot(hub: Path):
    wanted = cache_model(hub, REPO, CONFIG)
    other = hub / ("models--" + REPO.replace("/", "--")) / "snapshots" / OTHER
    other.mkdir()
    (other / "config.json").write_text(json.dumps({**CONFIG, "num_hidden_layers": 99}))
    assert cached_file(REPO) == wanted


def test_without_refs_only_an_unambiguous_snapshot(hub: Path):
    only = cache_model(hub, REPO, CONFIG, ref=False)
    assert cached_file(REPO) == only
    second = only.parents[1] / OTHER
    second.mkdir()
    (second / "config.json").write_text("{}")
    assert cached_file(REPO) is None  # two revisions: which one the run uses is not known


def test_model_flag_reads_the_cache(hub: Path):
    cache_model(hub, REPO, CONFIG)
    value = resolve_model(REPO, Origin.CLI)
    assert value.value.num_layers == 12 and value.value.num_kv_heads == 4
    assert "local cache" in value.provenance.note


def test_tokenizer_name_gives_the_cached_vocabulary(hub: Path):
    cache_model(hub, REPO, CONFIG)
    vocab = from_preset(REPO)
    assert vocab is not None and vocab.size == 151936 and "Hugging Face cache" in vocab.note
    assert from_preset("example-org/not-cached") is None


def _trainer_project(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "ds_z3.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": "auto"},
                                                  "zero_optimization": {"stage": 3}}))
    sft = root / "sft.yaml"
    sft.write_text(f"model_name_or_path: {REPO}\ndeepspeed: ds_z3.json\ncutoff_len: 1024\n"
                   "per_device_train_batch_size: 2\ngradient_accumulation_steps: 4\nbf16: true\n")
    return sft


def _estimate(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainlint", "estimate", "--format", "json", path.name],
                          cwd=path.parent, env=env, capture_output=True, text=True, timeout=120)


def test_trainer_yaml_estimated_from_the_cache(tmp_path: Path, hub: Path):
    import os

    sft = _trainer_project(tmp_path / "proj")
    env = {**os.environ}
    missing = _estimate(sft, env)
    assert missing.returncode == 1, missing.stderr
    asked = estimate_run(missing.stdout)["missing"]
    assert any(f"`{REPO}`" in m["how"] and "Hugging Face cache" in m["how"] for m in asked)

    cache_model(hub, REPO, CONFIG)
    found = _estimate(sft, env)
    assert found.returncode in (0, 1), found.stderr
    data = estimate_run(found.stdout)
    # 12 layers of (q 1024x2048, k and v 1024x512 each, o 2048x1024, gated MLP 3 x 1024x3072) + 151,936 x 1024
    # tied embeddings: about 0.33B (the cached config's shape, head_dim 128 and 4 KV heads included)
    per_layer = 1024 * 2048 * 2 + 1024 * 512 * 2 + 3 * 1024 * 3072
    expected = 12 * per_layer + 151936 * 1024
    assert abs(data["num_params"] - expected) / expected < 0.01, data["num_params"]


def test_estimate_says_why_a_read_file_has_no_run(tmp_path: Path):
    import os

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    sft = root / "sft.yaml"
    sft.write_text("model_name_or_path: llama2-7b\ndeepspeed: not_here.json\nper_device_train_batch_size: 2\n")
    out = _estimate(sft, {**os.environ})
    assert out.returncode == 2
    assert "sft.yaml: not estimated: TL013" in out.stderr and "not_here.json" in out.stderr
