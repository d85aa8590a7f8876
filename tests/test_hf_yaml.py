"""Golden tests: LLaMA-Factory / axolotl training YAML that names its DeepSpeed JSON, read as the
Hugging Face Trainer run it launches (the YAML's keys are TrainingArguments; axolotl's
micro_batch_size / sequence_len / base_model are its names for the same)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.adapters.base import LoadContext
from trainlint.adapters.hf.trainer_yaml import HFTrainerYamlAdapter
from trainlint.files.checker import check_file
from trainlint.estimator import build_context, estimate
from trainlint.core.provenance import Origin

AUTO = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}}
LLAMA_FACTORY = ("### model\nmodel_name_or_path: llama2-7b\nstage: sft\nfinetuning_type: full\n"
                 "deepspeed: configs/ds_z3.json\ncutoff_len: 2048\nper_device_train_batch_size: 2\n"
                 "gradient_accumulation_steps: 4\nbf16: true\n")
AXOLOTL = ("base_model: llama2-7b\nsequence_len: 4096\nmicro_batch_size: 1\ngradient_accumulation_steps: 8\n"
           "deepspeed: configs/ds_z3.json\nbf16: auto\n")


@pytest.fixture
def project(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ds_z3.json").write_text(json.dumps(AUTO))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def load(project: Path, name: str, text: str):
    path = project / name
    path.write_text(text)
    assert HFTrainerYamlAdapter().sniff(str(path), text) > 0
    return check_file(str(path), builtin_adapters(), LoadContext())


def test_llama_factory(project):
    result = load(project, "sft.yaml", LLAMA_FACTORY)
    assert result.format == "hf-trainer"
    (spec,) = result.specs
    assert spec.batch.micro_batch.value == 2 and spec.batch.grad_accum.value == 4
    assert spec.model.seq_length.value == 2048 and spec.model.num_layers.value == 32
    assert spec.precision.dtype.value == "bf16" and spec.parallel.zero_stage.value == 3
    prov = spec.batch.micro_batch.provenance
    assert prov.origin is Origin.FILE and prov.path.endswith("sft.yaml") and prov.span.line == 7
    est = estimate(spec, build_context(spec, nodes=2))
    assert est.inputs.global_batch == 2 * 4 * 16


def test_axolotl_names(project):
    (spec,) = load(project, "lora.yml", AXOLOTL).specs
    assert spec.batch.micro_batch.value == 1 and spec.batch.grad_accum.value == 8
    assert spec.model.seq_length.value == 4096 and spec.model.hidden_size.value == 4096
    assert spec.precision.dtype.value == "bf16"


def test_not_a_trainer_yaml():
    adapter = HFTrainerYamlAdapter()
    assert adapter.sniff("/x/a.yaml", "deepspeed: ds.json\nfoo: 1\n") == 0  # no Trainer key
    assert adapter.sniff("/x/a.yaml", "per_device_train_batch_size: 2\n") == 0  # no DeepSpeed JSON
    assert adapter.sniff("/x/a.yaml", "deepspeed: [\n") == 0


def test_missing_json_is_reported_at_the_key(project):
    result = load(project, "sft.yaml", LLAMA_FACTORY.replace("configs/ds_z3.json", "nowhere.json"))
    (d,) = [d for d in result.diagnostics if d.code == "TL013"]
    assert d.span.line == 5 and not result.specs


def test_json_outside_the_project_is_not_read(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("other") / "ds.json"
    outside.write_text(json.dumps(AUTO))
    result = load(project, "sft.yaml", LLAMA_FACTORY.replace("configs/ds_z3.json", str(outside)))
    assert not result.specs and any(d.code == "TL013" for d in result.diagnostics)


def _composed_pairs(text: str):
    """The reference: the root mapping's scalar pairs as ``yaml.compose`` (pure Python) composes them."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    return [(k.value, v.value, v.start_mark.line, v.start_mark.column, v.end_mark.line, v.end_mark.column)
            for k, v in root.value if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode)]


@pytest.mark.parametrize("text", [
    "deepspeed: ds.json\nper_device_train_batch_size: 4\n", "a: &x ds.json\nb: *x\n", "a: *x\n", "a: &x 1\nb: &x 2\n",
    "---\na: 1\n---\nb: 2\n", "- 1\n- 2\n", "plain", "", "# only a comment\n", "a: {b: 1}\nc: [1, 2]\nd: 3\n",
    "? [a, b]\n: 1\ne: 2\n", "&m {a: 1}\n", "a: &c [1]\nb: *c\nc: x\n", "x: &s hello\n*s : world\n", "a: 1\na: 2\n",
    "{deepspeed: ds.json, bf16: true}", "a: b: c\n", "a: [1, 2\n", "'k': \"v\"\n", "a: |\n  text\nb: >\n  folded\n",
    "x: !!str 5\n", "a: 1\n...\n", "%YAML 1.1\n---\na: 1\n", "a: &r {b: *r}\nc: d\n",
])
def test_top_level_pairs_are_what_compose_gives(text):
    """The sniff reads the root mapping from the event stream (libyaml when present): the same pairs,
    values and marks as composing the whole tree, and None where compose fails or the root is not a mapping."""
    from trainlint.adapters.hf.trainer_yaml import _top_level

    pairs = _top_level(text)
    got = None if pairs is None else [(k, v.value, v.start_mark.line, v.start_mark.column, v.end_mark.line,
                                       v.end_mark.column) for k, v in pairs]
    assert got == _composed_pairs(text)
