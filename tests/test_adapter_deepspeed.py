"""The DeepSpeed JSON adapter: golden diagnostics, sniffing, the spec, and the real-config corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.adapters.base import BY_CONTENT, BY_NAME, NOT_MINE, LoadContext
from trainlint.adapters.deepspeed.adapter import DeepSpeedAdapter, load_deepspeed_config
from trainlint.core.provenance import Origin
from trainlint.schemas import load_schema
from trainlint.files.sources import SourceText, read_source

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "deepspeed_zero3_offload.json"
ADAPTER = DeepSpeedAdapter()


def load(text: str, path: str = "ds_config.json"):
    return ADAPTER.load(SourceText(path, text), LoadContext())


def found(text: str) -> list[tuple[str, int, int, str]]:
    return [(d.code, d.line, d.column, d.severity.value) for d in load(text).diagnostics]


# ------------------------------------------------------------------------------ golden cases

def test_unknown_key_in_a_section_is_an_error_with_did_you_mean():
    text = '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 2,\n    "overlap_com": true\n  }\n}'
    result = load(text)
    assert [(d.code, d.line, d.column, d.severity.value) for d in result.diagnostics] == [("TL004", 5, 5, "error")]
    assert "did you mean `overlap_comm`?" in result.diagnostics[0].message


def test_unknown_top_level_key_is_a_warning():
    text = '{\n  "train_batch_size": 8,\n  "train_micro_batch_size": 4\n}'
    result = load(text)
    assert [(d.code, d.line, d.column, d.severity.value) for d in result.diagnostics] == [("TL004", 3, 3, "warning")]
    assert "train_micro_batch_size_per_gpu" in result.diagnostics[0].message


def test_wrong_type():
    text = '{\n  "train_batch_size": "32",\n  "fp16": {"enabled": 1}\n}'
    assert found(text) == [("TL005", 2, 23, "error"), ("TL005", 3, 23, "error")]


def test_invalid_enum_value():
    text = ('{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 5,\n'
            '    "offload_optimizer": {"device": "gpu"}\n  }\n}')
    result = load(text)
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("TL006", 4, 14), ("TL006", 5, 37)]
    assert '"gpu"; expected one of "none", "cpu", "nvme"' in result.diagnostics[1].message


def test_auto_is_unresolved_info_at_the_value_and_skipped_by_the_schema():
    text = ('{\n  "train_micro_batch_size_per_gpu": "auto",\n  "zero_optimization": {\n'
            '    "stage": 3,\n    "reduce_bucket_size": "auto"\n  }\n}')
    result = load(text)
    # one note for the file's "auto" values (issue 28), at the first, the others related
    assert [(d.code, d.line, d.column, d.severity.value) for d in result.diagnostics] == [("TL007", 2, 37, "info")]
    note = result.diagnostics[0]
    assert "Hugging Face Trainer / Accelerate" in note.message and "2 values are \"auto\"" in note.message
    assert "`zero_optimization.reduce_bucket_size`" in note.message
    assert [(r.span.line, r.span.column) for r in note.related] == [(5, 27)]
    doc = result.documents[0]
    assert set(doc.unresolved) == {"/train_micro_batch_size_per_gpu", "/zero_optimization/reduce_bucket_size"}
    spec = result.specs[0]
    assert spec.batch.micro_batch is None and spec.batch.grad_accum is None
    assert spec.settings["train_micro_batch_size_per_gpu"].value == "auto"


def test_deepspeed_native_auto_is_not_reported():
    text = '{"train_batch_size": 8, "pipeline": {"stages": "auto"}}'
    assert found(text) == []


def test_template_placeholder():
    text = '{\n  "train_batch_size" : GB_SIZE,\n  "fp16": {"enabled": FP16_ENABLE}\n}'
    result = load(text)
    assert [(d.code, d.line, d.column, d.severity.value) for d in result.diagnostics] == [
        ("TL007", 2, 24, "info"), ("TL007", 3, 23, "info")]
    assert result.diagnostics[0].message.startswith(
        "template placeholder GB_SIZE, filled by a script before launch")
    spec = result.specs[0]
    assert spec.batch.global_batch is None and spec.precision.fp16_enabled is None


def test_duplicate_key():
    text = '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true},\n  "train_batch_size": 16\n}'
    result = load(text)
    assert [(d.code, d.line, d.column, d.severity.value) for d in result.diagnostics] == [("TL003", 4, 3, "error")]
    assert "Duplicate keys in DeepSpeed config" in result.diagnostics[0].message
    assert result.specs[0].batch.global_batch.value == 16


def test_hjson_comment_is_non_portable_info():
    text = '{\n  // ZeRO-2 for the 1.3B run\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2},\n}'
    assert found(text) == [("TL010", 2, 3, "info"), ("TL010", 4, 36, "info")]


def test_deprecated_cpu_offload():
    text = '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 2,\n    "cpu_offload": true\n  }\n}'
    result = load(text)
    assert [(d.code, d.line, d.column, d.severity.value) for d in result.diagnostics] == [("TL008", 5, 5, "warning")]
    assert 'offload_optimizer: {"device": "cpu"}' in result.diagnostics[0].message
    spec = result.specs[0]
    assert spec.parallel.offload_optimizer.value == "cpu"
    assert spec.parallel.offload_optimizer.provenance.origin is Origin.DERIVED


def test_deprecated_key_with_its_replacement_is_an_error():
    text = ('{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 2,\n    "cpu_offload": false,\n'
            '    "offload_optimizer": {"device": "cpu"}\n  }\n}')
    diags = load(text).diagnostics
    assert [(d.code, d.line, d.column, d.severity.value) for d in diags] == [("TL008", 5, 5, "error")]
    assert diags[0].related[0].span.line == 6


def test_bfloat16_alias_is_deprecated_and_read_as_bf16():
    text = '{\n  "train_batch_size": 8,\n  "bfloat16": {"enabled": true}\n}'
    result = load(text)
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("TL008", 3, 3)]
    spec = result.specs[0]
    assert spec.precision.bf16_enabled.value is True
    assert spec.precision.bf16_enabled.provenance.key == "bfloat16.enabled"
    assert spec.precision.dtype.value == "bf16"


def test_zero_alias_given_twice_is_a_conflicting_spelling():
    text = ('{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "prefetch_bucket_size": 1000,\n    "stage3_prefetch_bucket_size": 2000\n  }\n}')
    assert found(text) == [("TL011", 6, 5, "warning")]


def test_syntax_error_gives_only_tl002_and_no_spec():
    result = load('{\n  "zero_optimization": {\n    "stage": 3 "x": 1}}')
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("TL002", 3, 16)]
    assert "expected ',' or '}' after the value of \"stage\"" in result.diagnostics[0].message
    assert result.specs == [] and result.documents == []


def test_top_level_array_is_refused():
    assert found("[1, 2]") == [("TL005", 1, 1, "error")]


def test_scientific_notation_is_an_integer_for_the_schema():
    text = '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "allgather_bucket_size": 2e8}}'
    result = load(text)
    assert result.diagnostics == []
    assert result.specs[0].settings["zero_optimization.allgather_bucket_size"].value == 2e8


# ------------------------------------------------------------------------------ sniffing

@pytest.mark.parametrize("path, text, expected", [
    ("conf.json", '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}', "content"),
    ("conf.json", '{"train_batch_size": 64, "fp16": {"enabled": true}}', "content"),
    ("conf.json", '{"gradient_accumulation_steps": 4, "optimizer": {"type": "Adam"}}', "content"),
    ("conf.json", '// comment first\n{"train_batch_size": 64, "bf16": {"enabled": true}}', "content"),
    ("ds_config.json", '{"optimizer": {"type": "Adam"}}', "name"),
    ("my_deepspeed.json", '{}', "name"),
    ("conf.json", '{"optimizer": {"type": "Adam"}}', "no"),
    ("ds_config.json", '{"train_batch_size": GB_SIZE, "fp16": {"enabled": FP16}}', "content"),
    ("ds_config.json", '{"train_batch_size": 8, "zero_optimization": {', "content"),  # broken: still ours
])
def test_sniff_claims_deepspeed(path, text, expected):
    score = ADAPTER.sniff(path, text)
    if expected == "content":
        assert score >= BY_CONTENT
    elif expected == "name":
        assert BY_NAME <= score < BY_CONTENT
    else:
        assert score == NOT_MINE


@pytest.mark.parametrize("path, text", [
    # GPT-NeoX configs written as JSON: they carry DeepSpeed keys too, but belong to the NeoX adapter
    ("neox.json", '{"num-layers": 24, "hidden-size": 2048, "pipe-parallel-size": 1, "model-parallel-size": 1,'
                  ' "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 1}}'),
    ("ds_config.json", '{"num_layers": 24, "hidden_size": 2048, "attention_config": [[["global"], 24]],'
                       ' "train_micro_batch_size_per_gpu": 4}'),
    # Hugging Face model config.json and other JSON files
    ("config.json", '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096}'),
    ("config.json", '{"model_type": "gpt2", "n_layer": 12, "train_batch_size": 8}'),
    ("package.json", '{"name": "x", "version": "1.0.0", "dependencies": {}}'),
    ("data.json", '[1, 2, 3]'),
    ("notes.json", '"just a string"'),
    ("ds_config.json", "not json at all"),
    ("ds_config.json", ""),
])
def test_sniff_does_not_claim_other_json(path, text):
    assert ADAPTER.sniff(path, text) == NOT_MINE


def test_sniff_never_raises_on_garbage():
    for text in ["{", "{\"a\"", "\x00\x01", "{" * 10_000, "/*", "// x", "{\"a\": '''"]:
        ADAPTER.sniff("ds_config.json", text)


# ------------------------------------------------------------------------------ the spec

def test_example_has_no_findings_and_a_full_spec():
    source = read_source(EXAMPLE)
    assert ADAPTER.sniff(source.path, source.text) >= BY_CONTENT
    result = ADAPTER.load(source, LoadContext())
    assert result.diagnostics == []
    [spec] = result.specs
    assert spec.framework == "deepspeed" and spec.sources == [source.path]
    expect = {
        "batch.global_batch": (512, 2), "batch.micro_batch": (4, 3), "batch.grad_accum": (8, 4),
        "parallel.zero_stage": (3, 36), "parallel.offload_optimizer": ("cpu", 47),
        "parallel.offload_params": ("cpu", 51), "precision.bf16_enabled": (True, 10),
        "precision.grad_accum_dtype": ("fp32", 13), "precision.optimizer": ("adamw", 17),
        "memory.partition_activations": (True, 57), "memory.cpu_checkpointing": (False, 58),
    }
    for field, (value, line) in expect.items():
        entry = spec.get(field)
        assert entry.value == value, field
        assert entry.provenance.origin is Origin.FILE and entry.provenance.path == source.path
        assert entry.span.line == line, field
    assert spec.get("parallel.zero_stage").provenance.key == "zero_optimization.stage"
    assert spec.precision.dtype.value == "bf16" and spec.precision.dtype.provenance.origin is Origin.DERIVED
    assert spec.precision.fp16_enabled.value is False
    assert spec.precision.fp16_enabled.provenance.origin is Origin.DEFAULT
    assert spec.parallel.data.value == 16  # 512 / (4 x 8)
    # every leaf reachable by its dotted path, with its file position
    assert spec.settings["zero_optimization.stage3_max_live_parameters"].value == 1e9
    assert spec.settings["optimizer.params.betas"].value == [0.9, 0.95]
    assert spec.settings["tensorboard.job_name"].span.line == 66
    assert len(spec.settings) == 39


def test_example_spec_matches_the_spec_schema():
    from jsonschema import Draft202012Validator

    spec = ADAPTER.load(read_source(EXAMPLE), LoadContext()).specs[0]
    errors = list(Draft202012Validator(load_schema("spec")).iter_errors(spec.to_dict()))
    assert errors == []


def test_defaults_when_sections_are_absent():
    spec = load('{"train_batch_size": 32}').specs[0]
    assert spec.parallel.zero_stage.value == 0
    assert spec.parallel.zero_stage.provenance.origin is Origin.DEFAULT
    assert "deepspeed/runtime/zero/config.py" in spec.parallel.zero_stage.provenance.note
    assert spec.parallel.offload_optimizer.value == "none"
    assert spec.precision.dtype.value == "fp32"
    assert spec.batch.grad_accum.value == 1  # DeepSpeed sets GAS = 1 when only train_batch_size is given
    assert spec.batch.grad_accum.provenance.origin is Origin.DERIVED
    assert spec.batch.micro_batch is None and spec.parallel.data is None


def test_micro_and_gas_leave_global_batch_to_launch_time():
    spec = load('{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}').specs[0]
    assert spec.batch.global_batch is None and spec.parallel.data is None
    assert (spec.batch.micro_batch.value, spec.batch.grad_accum.value) == (2, 4)


def test_legacy_zero_boolean_and_autotp():
    result = load('{"train_batch_size": 8, "zero_optimization": true, "tensor_parallel": {"autotp_size": 4}}')
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("TL008", 1, 46)]
    spec = result.specs[0]
    assert spec.parallel.zero_stage.value == 1 and spec.parallel.tensor.value == 4


def test_load_deepspeed_config_is_usable_by_other_adapters():
    result = load_deepspeed_config(SourceText("ref/ds.json", '{"train_batch_size": 16, "fp16": {"enabled": true}}'))
    assert result.format == "deepspeed"
    assert result.specs[0].precision.dtype.value == "fp16"
    assert result.documents[0].path == "ref/ds.json"


# ------------------------------------------------------------------------------ the schema

def test_schema_sections_follow_deepspeed_strictness():
    schema = load_schema("deepspeed")
    assert schema["$schema"].endswith("2020-12/schema")
    assert schema["additionalProperties"] is False and schema["x-unknown-key-severity"] == "warning"
    props = schema["properties"]
    for forbid in ("zero_optimization", "fp16", "bf16", "comms_logger", "tensorboard", "hybrid_engine"):
        assert props[forbid]["additionalProperties"] is False
        assert "x-unknown-key-severity" not in props[forbid], forbid
    for lookup in ("activation_checkpointing", "flops_profiler", "aio", "checkpoint", "pipeline"):
        assert props[lookup]["x-unknown-key-severity"] == "warning", lookup
    zero = props["zero_optimization"]["properties"]
    assert zero["stage"]["enum"] == [0, 1, 2, 3] and zero["stage"]["default"] == 0
    assert zero["reduce_bucket_size"]["type"] == "integer" and zero["reduce_bucket_size"]["default"] == 500000000
    assert "stage3_prefetch_bucket_size" in zero and "x-deprecated" in zero["cpu_offload"]
    assert "x-deprecated" in props["bfloat16"]
    assert props["zero_optimization"]["x-source"]["commit"].startswith("edaa722")


def _has_auto(node) -> bool:
    text = json.dumps(node)
    return '"auto"' in text


def test_schema_does_not_encode_hf_auto_for_batch_keys():
    props = load_schema("deepspeed")["properties"]
    assert not _has_auto(props["train_batch_size"]) and not _has_auto(props["zero_optimization"]["properties"]["stage"])


# ------------------------------------------------------------------------------ corpus

def test_corpus_deepspeed_json_files_are_claimed_and_load(corpus_dir: Path, manifest):
    rows = [row for row in manifest if row["format"] == "deepspeed-json"]
    assert rows, "no deepspeed-json rows in MANIFEST.tsv"
    unclaimed, errors = [], []
    for row in rows:
        source = read_source(corpus_dir / row["path"])
        if ADAPTER.sniff(source.path, source.text) < BY_NAME:
            unclaimed.append(row["path"])
        result = ADAPTER.load(source, LoadContext())  # must not raise
        assert result.specs, row["path"]
        errors += [(row["path"], d.code, d.line) for d in result.diagnostics if d.severity.value == "error"]
    assert unclaimed == []
    # The only error is a real upstream typo (`stage3_param_persitence_threshold`) that every DeepSpeed
    # release ignores or refuses; `cpu_offload_params`, read by DeepSpeed 0.3.12 to 0.6.7, is a TL008
    # warning while no DeepSpeed version is known for the config.
    assert [(Path(p).name, code, line) for p, code, line in errors] == [
        ("ds_zero_stage_infinity_config.json", "TL004", 9)]


def test_corpus_neox_json_is_not_claimed(corpus_dir: Path, manifest):
    rows = [row for row in manifest if row["format"] != "deepspeed-json" and row["path"].endswith(".json")]
    for row in rows:
        source = read_source(corpus_dir / row["path"])
        assert ADAPTER.sniff(source.path, source.text) == NOT_MINE, row["path"]
