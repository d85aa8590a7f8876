"""The whole real-config corpus (../shared/corpus): every file is read without an internal
error, and every labelled config is claimed by the adapter of its format."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths

LABELS = {"deepspeed-json": "deepspeed", "megatron-args": "megatron", "neox-yaml": "neox"}


@pytest.fixture(scope="module")
def corpus_results(corpus_dir: Path, manifest: list[dict[str, str]]):
    paths = [str(corpus_dir / row["path"]) for row in manifest]
    results = {r.path: r for r in check_paths(paths, builtin_adapters())}
    return [(row, results[str(corpus_dir / row["path"])]) for row in manifest]


def test_no_internal_error_anywhere(corpus_results):
    internal = [f"{row['path']}: {d.message}" for row, r in corpus_results for d in r.diagnostics if d.code == "TL999"]
    assert internal == []


def test_labelled_configs_are_claimed_by_their_adapter(corpus_results):
    wrong = [f"{row['path']}: {row['format']} claimed by {r.format}"
             for row, r in corpus_results if row["format"] in LABELS and r.format != LABELS[row["format"]]]
    assert wrong == []


def test_other_files_are_not_taken_for_json_or_yaml_configs(corpus_results):
    # A shell fragment labelled "other" may hold Megatron flags (sc21/SRUN.sh); a JSON or YAML
    # that is not a DeepSpeed or NeoX config (accelerate YAML, HF config) must be skipped.
    taken = [f"{row['path']}: claimed by {r.format}" for row, r in corpus_results
             if row["format"] == "other" and r.format in ("deepspeed", "neox")]
    assert taken == []


def test_megatron_scripts_yield_specs_with_the_core_fields(corpus_results):
    specs = [s for row, r in corpus_results if row["format"] == "megatron-args" for s in r.specs]
    assert len(specs) >= 140
    with_layers = sum(1 for s in specs if s.model.num_layers is not None)
    with_micro = sum(1 for s in specs if s.batch.micro_batch is not None)
    assert with_layers / len(specs) > 0.8 and with_micro / len(specs) > 0.85
