"""The GPT-NeoX adapter: sniffing, NeoX's own merge and type rules, the spec, the real corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.adapters.base import BY_CONTENT, NOT_MINE, LoadContext
from trainlint.adapters.neox.detect import NeoXAdapter
from trainlint.core.diagnostics import Severity
from trainlint.core.provenance import Origin
from trainlint.schemas import load_schema
from trainlint.files.sources import SourceText, read_source

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "neox"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "neox_1-3B.yml"

BASE = """{
  "num_layers": 2,
  "hidden_size": 64,
  "num_attention_heads": 4,
  "seq_length": 128,
  "max_position_embeddings": 128,
  "train_micro_batch_size_per_gpu": 1,
"""


def load(text: str, path: str = "run.yml", extra: list[str] | None = None, frameworks=None):
    return NeoXAdapter().load(SourceText(path, text), LoadContext(extra_paths=extra or [], frameworks=frameworks))


def found(result, severity: Severity | None = None):
    return [(d.code, d.line, d.column) for d in result.diagnostics if severity is None or d.severity is severity]


# -- golden diagnostics ----------------------------------------------------------------------

def test_clean_config_has_no_diagnostics():
    assert load(BASE + "}\n").diagnostics == []


def test_unknown_key_with_did_you_mean():
    result = load(BASE + '  "num-atention-heads": 4,\n}\n')
    assert found(result) == [("TL004", 8, 3)]
    assert "did you mean `num_attention_heads`" in result.diagnostics[0].message


def test_wrong_type():
    result = load(BASE + '  "checkpoint_activations": "yes",\n}\n')
    assert found(result) == [("TL005", 8, 29)]


def test_float_for_int_is_wrong_type_as_in_validate_types():
    assert found(load(BASE + '  "train_iters": 1000.0,\n}\n')) == [("TL005", 8, 18)]


def test_int_for_float_is_accepted():
    assert load(BASE + '  "weight_decay": 0,\n}\n').diagnostics == []


def test_invalid_enum_and_case_insensitive_literal():
    result = load(BASE + '  "pos_emb": "rope",\n  "precision": "BFloat16",\n  "bf16": {"enabled": true},\n}\n')
    assert found(result) == [("TL006", 8, 14)]
    assert "rotary" in result.diagnostics[0].message


def test_scientific_notation_lr():
    result = load("lr: 6e-4\nnum_layers: 2\nhidden_size: 64\n")
    assert found(result) == [("TL009", 1, 5)]
    diag = result.diagnostics[0]
    assert diag.severity is Severity.ERROR and diag.fix == "6.0e-4" and "1.0e-5" not in diag.message
    # settings keep the value as NeoX reads it (a string)
    assert result.specs[0].settings["lr"].value == "6e-4"


def test_scientific_notation_inside_optimizer_params():
    result = load(BASE + '  "optimizer": {"type": "Adam", "params": {"lr": 6e-4}},\n}\n')
    assert found(result) == [("TL009", 8, 50)]


def test_hyphen_then_underscore_in_one_file_is_refused():
    result = load(BASE + '  "hidden-dropout": 0.0,\n  "hidden_dropout": 0.1,\n}\n')
    assert found(result) == [("TL011", 9, 3)]
    assert result.diagnostics[0].severity is Severity.ERROR
    assert "duplicate keys with previously loaded file" in result.diagnostics[0].message


def test_underscore_then_hyphen_in_one_file_silently_overrides():
    result = load(BASE + '  "hidden_dropout": 0.0,\n  "hidden-dropout": 0.1,\n}\n')
    assert found(result) == [("TL011", 9, 3)]
    assert result.diagnostics[0].severity is Severity.WARNING
    assert result.specs[0].settings["hidden_dropout"].value == 0.1


def test_exact_duplicate_in_one_mapping_is_a_warning():
    result = load(BASE + '  "seed": 1,\n  "seed": 2,\n}\n')
    assert found(result) == [("TL003", 9, 3)]
    assert result.diagnostics[0].severity is Severity.WARNING


def test_removed_key_is_explained():
    # No NeoX source beside the file and none configured: upstream is assumed, and the config may be
    # written for an older release that still has the key, so this is a warning that says so.
    result = load(BASE + '  "save_interval": 1000,\n}\n')
    assert found(result) == [("TL008", 8, 3)]
    assert "checkpoint_factor" in result.diagnostics[0].message
    assert "assumed" in result.diagnostics[0].message
    assert result.diagnostics[0].severity is Severity.WARNING


def test_removed_key_is_an_error_against_a_pinned_release():
    from trainlint.frameworks.locate import configure

    result = load(BASE + '  "save_interval": 1000,\n}\n', frameworks=configure({"neox": "main"}))
    assert found(result) == [("TL008", 8, 3)]
    assert result.diagnostics[0].severity is Severity.ERROR
    assert "GPT-NeoX main" in result.diagnostics[0].message


def test_zero_stage_list_needs_autotuning():
    assert found(load(BASE + '  "zero_optimization": {"stage": [0, 1]},\n}\n')) == [("TL006", 8, 34)]
    tuned = load(BASE + '  "zero_optimization": {"stage": [0, 1]},\n  "autotuning": {"enabled": true},\n}\n')
    assert found(tuned) == [("TL007", 8, 34)]


def test_optimizer_needs_type_and_params():
    result = load(BASE + '  "optimizer": {"type": "Adam"},\n}\n')
    assert [c for c, _, _ in found(result)] == ["TL006"]


def test_syntax_error_and_non_mapping():
    assert found(load('{"num_layers": 2\n "hidden_size": 4}\n')) == [("TL002", 2, 15)]
    assert found(load("- a\n- b\n")) == [("TL005", 1, 1)]
    assert found(load("# empty\n")) == [("TL005", 1, 1)]


# -- multi-file runs ---------------------------------------------------------------------------

def test_multi_file_merge_provenance_and_cross_file_duplicate():
    model, train = str(FIXTURES / "model.yml"), str(FIXTURES / "train.yml")
    result = NeoXAdapter().load(read_source(model), LoadContext(extra_paths=[train]))
    assert [(d.code, Path(d.path).name, d.line, d.column) for d in result.diagnostics] == [
        ("TL003", "train.yml", 8, 1)]
    assert result.diagnostics[0].related[0].path == model
    spec = result.specs[0]
    assert spec.sources == [model, train]
    assert spec.parallel.tensor.value == 2 and spec.parallel.tensor.provenance.path == model
    pipeline = spec.parallel.pipeline
    assert pipeline.value == 2 and pipeline.provenance.path == train and pipeline.span.line == 8
    assert spec.parallel.pipeline_engine.value is True
    stage = spec.parallel.zero_stage
    assert (stage.value, stage.provenance.path, stage.provenance.key) == (1, train, "zero_optimization.stage")
    assert spec.batch.micro_batch.provenance.path == train
    assert spec.model.num_layers.provenance.path == model
    assert spec.settings["optimizer.params.lr"].value == 6.0e-4
    assert len(result.documents) == 2


def test_same_key_in_two_files():
    setup = str(FIXTURES / "setup_dup.yml")
    result = NeoXAdapter().load(read_source(str(FIXTURES / "model.yml")), LoadContext(extra_paths=[setup]))
    assert [(d.code, Path(d.path).name, d.line, d.column) for d in result.diagnostics] == [
        ("TL003", "setup_dup.yml", 3, 1)]
    assert result.specs[0].model.num_layers.value == 24


def test_same_basename_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "c.yml", tmp_path / "b" / "c.yml"
    first.write_text("num_layers: 2\n")
    second.write_text("hidden_size: 8\n")
    result = NeoXAdapter().load(read_source(first), LoadContext(extra_paths=[str(second)]))
    assert [(d.code, d.path) for d in result.diagnostics] == [("TL006", str(second))]


# -- the spec ---------------------------------------------------------------------------------

def test_spec_from_example():
    result = NeoXAdapter().load(read_source(EXAMPLE), LoadContext())
    assert result.diagnostics == []
    spec = result.specs[0]
    assert spec.framework == "neox"
    assert spec.value("model.num_layers") == 24 and spec.value("model.hidden_size") == 2048
    assert spec.value("memory.flash_attention") is True
    assert spec.value("precision.dtype") == "bf16"
    assert spec.value("parallel.zero_stage") == 1
    assert spec.value("parallel.pipeline_engine") is False
    assert spec.value("memory.recompute") == "full"
    assert spec.value("batch.grad_accum") == 4
    assert spec.model.num_layers.provenance.span.line == 13


def test_spec_defaults_and_pipeline_engine_for_pp1():
    spec = load(BASE + '  "pipe_parallel_size": 1,\n}\n').specs[0]
    assert spec.value("parallel.pipeline_engine") is True  # PP=1 still engages PipelineEngine
    assert spec.parallel.tensor.provenance.origin is Origin.DEFAULT
    assert "neox_args.py" in spec.parallel.tensor.provenance.note
    assert spec.batch.grad_accum.value == 1 and "deepspeed_args.py" in spec.batch.grad_accum.provenance.note
    assert spec.value("precision.dtype") == "fp32"
    assert spec.value("parallel.zero_stage") == 0


def test_spec_fp16_type_bfloat16_means_bf16_and_swiglu():
    spec = load(BASE + '  "fp16": {"enabled": true, "type": "bfloat16"},\n  "activation": "swiglu",\n'
                       '  "intermediate_size": 384,\n  "global_num_gpus": 8,\n  "model-parallel-size": 2,\n}\n').specs[0]
    assert spec.value("precision.dtype") == "bf16"
    assert spec.value("model.gated_mlp") is True
    assert spec.value("model.ffn_hidden_size") == 128  # int(384 * 2/3) // 2
    assert spec.value("parallel.data") == 4
    assert spec.value("cluster.world_size") == 8
    assert spec.parallel.tensor.provenance.key == "model-parallel-size"


# -- sniffing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["megatron_model_args.yaml", "accelerate.yaml", "workflow.yml"])
def test_foreign_yaml_is_not_claimed(name):
    path = FIXTURES / name
    assert NeoXAdapter().sniff(str(path), path.read_text()) == NOT_MINE


@pytest.mark.parametrize("name", ["model.yml", "train.yml", "local_setup.yml"])
def test_neox_files_are_claimed(name):
    path = FIXTURES / name
    assert NeoXAdapter().sniff(str(path), path.read_text()) >= BY_CONTENT


def test_deepspeed_json_and_hf_config_are_not_claimed():
    ds = '{"train_batch_size": 8, "zero_optimization": {"stage": 2}, "fp16": {"enabled": true}}'
    hf = '{"architectures": ["GPTNeoXForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}'
    adapter = NeoXAdapter()
    assert adapter.sniff("ds_config.json", ds) == NOT_MINE
    assert adapter.sniff("config.json", hf) == NOT_MINE
    assert adapter.sniff("x.yml", "\x00\x01garbage: [") == NOT_MINE


def test_schema_covers_neox_fields():
    schema = load_schema("neox")
    props = schema["properties"]
    assert schema["additionalProperties"] is False
    assert props["pipe_parallel_size"]["default"] == 0
    assert props["precision"]["enum"] == ["fp16", "fp32", "bfloat16", None]
    assert props["zero_optimization"]["type"] == ["object", "null"]
    assert all(src["commit"].startswith("ea7aefd") for src in schema["x-source"])
    assert len(props) > 300


# -- the corpus -------------------------------------------------------------------------------

def _rows(manifest, fmt):
    return [r for r in manifest if r["format"] == fmt]


def test_corpus_neox_files_are_claimed_and_load(corpus_dir, manifest):
    adapter = NeoXAdapter()
    rows = _rows(manifest, "neox-yaml")
    assert rows
    unclaimed = []
    for row in rows:
        source = read_source(corpus_dir / row["path"])
        if adapter.sniff(source.path, source.text) < BY_CONTENT:
            unclaimed.append(row["path"])
        result = adapter.load(source, LoadContext())
        assert len(result.specs) == 1
        assert not [d for d in result.diagnostics if d.code in ("TL001", "TL002", "TL999")], row["path"]
    assert unclaimed == []


def test_corpus_other_files_are_not_claimed(corpus_dir, manifest):
    adapter = NeoXAdapter()
    claimed = []
    for row in manifest:
        if row["format"] == "neox-yaml" or Path(row["path"]).suffix.lower() not in adapter.extensions:
            continue
        source = read_source(corpus_dir / row["path"])
        if adapter.sniff(source.path, source.text) != NOT_MINE:
            claimed.append(row["path"])
    assert claimed == []


def test_the_written_out_strong_keys_are_what_the_schema_gives():
    """adapters/neox/keys.py (read by the sniff instead of the schema) is generated from the schema:
    after a change to either, `python scripts/build_neox_keys.py` writes it again."""
    from trainlint.adapters.neox.detect import _strong_keys, strong_keys_of
    from trainlint.adapters.neox.keys import STRONG_KEYS

    assert strong_keys_of(load_schema("neox")) == STRONG_KEYS, "run: python scripts/build_neox_keys.py"
    assert _strong_keys() is STRONG_KEYS and len(STRONG_KEYS) > 100
    # the sniff finds them as key words with "-" read as "_": each must be such a word
    import re

    assert all(re.fullmatch(r"[a-z0-9_]+", key) for key in STRONG_KEYS)


def test_keys_found_before_colons_are_the_key_patterns_matches():
    """The sniff's scan back from each colon (for texts with few colons) finds what _KEY_WORD finds."""
    import random

    from trainlint.adapters.neox.detect import _KEY_WORD, _keys_before_colons

    texts = ['num-layers: 2\n  "hidden_size" : 4, {seq_length:1}', "a:b:c", ":x", " x:", "x\u00a0:", "'a' :", 'a""  :',
             "abc '  :", "--foo=bar:baz", "\nkey\t:\n", "$x: y", "x-y_z9 : 1", "\u2028pipe_parallel_size:1"]
    rnd = random.Random(19)
    texts += ["".join(rnd.choice("ab-_9 \n\t{,\"':$\u00a0\u2028\x1c") for _ in range(rnd.randint(0, 24)))
              for _ in range(20_000)]
    for text in texts:
        expected = [(m.start(), m.end(), m.group(1)) for m in _KEY_WORD.finditer(text)]
        assert _keys_before_colons(text) == expected, repr(text)


def test_the_strong_key_test_is_the_pre_checks_verdict(corpus_dir):
    """The sniff's first test (distinct key words) says what ``bool(_precheck_matches(text))`` says: on
    every text of the corpus, on NeoX keys in both spellings among other words, and on random texts."""
    import random

    from trainlint.adapters.neox.detect import _has_strong_key, _precheck_matches

    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(corpus_dir.rglob("*"))
             if p.is_file() and p.stat().st_size < 2_000_000]
    texts += ["pipe-parallel-size: 1\n", '{"pipe_parallel_size": 1}', "x pipe_parallel_size : 1", "pipe_parallel_size1: 1",
              "#pipe-parallel-size: 2", "'pipe-parallel-size'\u00a0:", "gpt_j_residual:" + "x" * 200, "a: b\n" * 50]
    rnd = random.Random(7)
    words = ["pipe-parallel-size", "gpt_j_residual", "num_layers", "zero_optimization", "x", "-", "_"]
    texts += ["".join(rnd.choice([*words, " ", ":", "\n", "{", ",", "\"", "'", "\u00a0", "\t", "a" * 150])
                      for _ in range(rnd.randint(0, 30))) for _ in range(5_000)]
    for text in texts:
        assert _has_strong_key(text) == bool(_precheck_matches(text)), repr(text[:200])
