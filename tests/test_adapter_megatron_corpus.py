"""The Megatron adapter over the real configs of ../shared/corpus (skipped when it is absent)."""

from __future__ import annotations

import time
from pathlib import Path

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.files.sources import read_source

ADAPTER = MegatronAdapter()
CORE = ("model.num_layers", "model.hidden_size", "model.num_attention_heads", "model.seq_length",
        "parallel.tensor", "parallel.pipeline", "batch.micro_batch")

# Files the adapter leaves unclaimed on purpose, with the reason.
NOT_CLAIMED = {
    # builds its flags at run time from a YAML with yq; the YAMLs themselves are claimed
    "NVIDIA__Megatron-LM/examples/moe-modelzoo/sbatch_benchmarking.sh",
}


def _megatron_rows(manifest):
    return [r for r in manifest if r["format"] == "megatron-args"]


def test_every_megatron_file_loads(corpus_dir: Path, manifest):
    rows = _megatron_rows(manifest)
    assert rows
    claimed, slow = [], []
    for row in rows:
        path = corpus_dir / row["path"]
        source = read_source(path)
        score = ADAPTER.sniff(str(path), source.text)
        start = time.process_time()
        result = ADAPTER.load(source, LoadContext())  # must not raise
        if time.process_time() - start > 2.0:
            slow.append(row["path"])
        if score > 0:
            claimed.append(row["path"])
            assert result.specs or row["path"] in NOT_CLAIMED, f"no spec for {row['path']}"
        else:
            assert row["path"] in NOT_CLAIMED, f"not claimed: {row['path']}"
        for diag in result.diagnostics:
            assert diag.code.startswith("TL0") and diag.span.line >= 1 and diag.span.column >= 1
    assert not slow
    assert len(claimed) >= len(rows) - len(NOT_CLAIMED)


def test_core_fields_found_in_most_specs(corpus_dir: Path, manifest):
    found = total = 0
    for row in _megatron_rows(manifest):
        path = corpus_dir / row["path"]
        for spec in ADAPTER.load(read_source(path), LoadContext()).specs:
            total += 1
            found += sum(spec.get(field) is not None for field in CORE)
    assert total and found / (total * len(CORE)) > 0.8


def test_other_shell_scripts_are_not_claimed(corpus_dir: Path, manifest):
    """HF and DeepSpeed-Chat run scripts (format `other`) carry no Megatron evidence."""
    for row in manifest:
        if row["format"] != "other" or not row["path"].endswith(".sh"):
            continue
        if "DeepSpeed-Chat" in row["path"] or "huggingface__accelerate" in row["path"]:
            path = corpus_dir / row["path"]
            assert ADAPTER.sniff(str(path), read_source(path).text) == 0, row["path"]
