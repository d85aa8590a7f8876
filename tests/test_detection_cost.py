"""Format detection reads a file once, JSON as JSON (issue 33): the sniffs' shortcuts give the
scores the full reads give, and skip the reads they stand in for."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

import trainlint.adapters.deepspeed.adapter as deepspeed
import trainlint.adapters.neox.detect as neox
from trainlint.adapters.base import BY_CONTENT, NOT_MINE

REPO = Path(__file__).resolve().parents[1]

NEOX_AS_JSON_YAML = """# GPT-2 pretraining setup
{
   # parallelism settings
   "pipe_parallel_size": 1,
   "model_parallel_size": 1,
   "num_layers": 24,  # a comment
   "hidden_size": 2048,
   "zero_optimization": {"stage": 1},
}
"""
DEEPSPEED_WITH_FP16 = """{
  "train_batch_size": 64,
  "train_micro_batch_size_per_gpu": 4,
  "fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 1000, "hysteresis": 2},
  "zero_optimization": {"stage": 2}
}
"""


def _variants(text: str, count: int, seed: int) -> list[str]:
    """``text`` with small random edits: quotes, braces, comments, hyphens and blanks put in or cut out."""
    rnd = random.Random(seed)
    junk = ["", '"', "{", "}", ":", "-", "#", "//", "/*", "*/", "\n", ",", '"a-b":', "'", "\\", "\t", "\x0b",
            "\xa0", '"num-layers": 2,', '"train_batch_size": 8,']
    out = [text]
    for _ in range(count):
        i = rnd.randrange(len(text) + 1)
        j = min(len(text), i + rnd.randrange(12))
        out.append(text[:i] + rnd.choice(junk) + text[j:])
    return out


def _examples() -> list[str]:
    return [NEOX_AS_JSON_YAML, DEEPSPEED_WITH_FP16, '{"pipe-parallel-size": 1}', '{"a": 1}',
            *(p.read_text() for p in sorted((REPO / "examples").glob("*")) if p.is_file())]


def test_deepspeed_sniff_first_key_shortcut_gives_the_parsed_score(monkeypatch):
    """The DeepSpeed sniff passes by an object whose first key is NeoX's without parsing it; over
    edited texts the score is the one the full parse gives."""
    texts = [t for base in _examples() for t in _variants(base, 150, seed=len(base))]
    fast = [deepspeed.sniff_score("ds_config.json", t) for t in texts]
    monkeypatch.setattr(deepspeed, "_first_key_says_neox", lambda text, start: False)
    slow = [deepspeed.sniff_score("ds_config.json", t) for t in texts]
    assert fast == slow
    assert any(s > NOT_MINE for s in fast)  # the variants include configs the sniff claims


def test_deepspeed_sniff_does_not_parse_a_neox_config(monkeypatch):
    parsed: list[str] = []
    monkeypatch.setattr(deepspeed, "parse", lambda text: parsed.append(text))
    assert deepspeed.sniff_score("x.yml", NEOX_AS_JSON_YAML) == NOT_MINE
    assert deepspeed.sniff_score("x.yml", '// c\n{ /* c */ "pipe-parallel-size": 1, "x": {') == NOT_MINE
    assert parsed == []


def test_neox_sniff_reads_strict_json_without_yaml(monkeypatch):
    """A DeepSpeed JSON whose fp16 section holds keys NeoX has at its top level is judged by its
    top-level keys as JSON: no YAML parse; a NeoX config written as strict JSON is still claimed."""
    def no_yaml(text, path):
        raise AssertionError("parsed with YAML")

    monkeypatch.setattr(neox, "parse_sniffed", no_yaml)
    adapter = neox.NeoXAdapter()
    assert adapter.sniff("ds_config.json", DEEPSPEED_WITH_FP16) == NOT_MINE
    strict = '{"pipe_parallel_size": 1, "model_parallel_size": 1, "num_layers": 2, "hidden_size": 64}'
    assert adapter.sniff("neox.json", strict) >= BY_CONTENT


def test_neox_sniff_same_scores_as_yaml_on_json(monkeypatch):
    """Strict JSON texts score as when they were read with YAML (the reader NeoX itself uses)."""
    texts = [t for base in (DEEPSPEED_WITH_FP16, '{"pipe-parallel-size": 1, "num-layers": 2, "hidden-size": 8}',
                            '{"pipe_parallel_size": 1, "seq_length": 2, "fp16": {"hysteresis": 2}, "a": 1, "b": 2}')
             for t in _variants(base, 150, seed=3)]
    fast = [neox.NeoXAdapter().sniff("x.json", t) for t in texts]
    monkeypatch.setattr(neox, "_strict_json", lambda text: neox._NOT_JSON)
    slow = [neox.NeoXAdapter().sniff("x.json", t) for t in texts]
    assert fast == slow
    assert any(s >= BY_CONTENT for s in fast)


@pytest.mark.parametrize("example", ["deepspeed_zero3_offload.json"])
def test_checking_a_deepspeed_json_does_not_import_yaml(example, tmp_path):
    """A check of DeepSpeed JSON only (one with an fp16 section) never imports PyYAML."""
    config = tmp_path / "ds_config.json"
    config.write_text(DEEPSPEED_WITH_FP16)
    code = ("import sys\nfrom trainlint.cli import main\n"
            f"code = main(['check', '--isolated', '--exit-zero', {str(config)!r}, {str(REPO / 'examples' / example)!r}])\n"
            "print('yaml' in sys.modules, code)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.split()[-2:] == ["False", "0"], done.stdout + done.stderr


HF_TRAINER_YAML = """### model
model_name_or_path: meta-llama/Llama-3-8B
### method
deepspeed: examples/deepspeed/ds_z3_config.json
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
cutoff_len: 2048
bf16: true
"""
NEOX_WITH_DEEPSPEED_WORDS = """# deepspeed_mpi and a vocabulary .json
{
  "pipe_parallel_size": 1,
  "deepspeed_mpi": false,
  "vocab_file": "data/gpt2-vocab.json",
  "fp16": {"enabled": true},
}
"""


def _hf_examples(tmp: Path) -> list[str]:
    corpus = [p.read_text(errors="replace") for p in sorted((REPO / "examples").glob("*.y*ml"))]
    return [HF_TRAINER_YAML, NEOX_WITH_DEEPSPEED_WORDS, "deepspeed: &d ds.json\nbf16: true\n*d : x\n",
            "? deepspeed\n: ds.json\nfp16: true\n", '"deep\\x73peed": "ds.js\\u006fn"\nbf16: true\n',
            "{deepspeed: a.json, base_model: m}\n", "deepspeed: |-\n  conf.json\nfp16: 1\n", *corpus]


def test_hf_trainer_sniff_text_shortcut_gives_the_parsed_score(monkeypatch, tmp_path):
    """The HF trainer YAML sniff passes by a YAML whose text cannot hold ``deepspeed: *.json`` beside a
    trainer key without reading its events; over edited texts the score is the one the events give."""
    import trainlint.adapters.hf.trainer_yaml as hf

    adapter = hf.HFTrainerYamlAdapter()
    texts = [t for base in _hf_examples(tmp_path) for t in _variants(base, 120, seed=len(base))]
    words = ["deepspeed", "deepspeed_mpi", "xdeepspeed", "deepspeed.json", "-deepspeed", "deep speed", ".json", ". json"]
    rnd = random.Random(5)
    texts += [t.replace("deepspeed", rnd.choice(words), 1).replace(".json", rnd.choice(words), 1) for t in list(texts)]
    fast = [adapter.sniff("train.yaml", t) for t in texts]
    monkeypatch.setattr(hf, "_may_claim", lambda text: True)
    slow = [adapter.sniff("train.yaml", t) for t in texts]
    assert fast == slow
    assert sum(s >= BY_CONTENT for s in fast) > 10  # the variants include runs the sniff claims


def test_hf_trainer_sniff_does_not_read_a_neox_config(monkeypatch):
    import trainlint.adapters.hf.trainer_yaml as hf

    read: list[str] = []
    monkeypatch.setattr(hf, "_top_level", lambda text: read.append(text))
    assert hf.HFTrainerYamlAdapter().sniff("neox.yml", NEOX_WITH_DEEPSPEED_WORDS) == NOT_MINE
    assert read == []
