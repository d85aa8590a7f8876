"""Golden tests: the vocabulary each framework builds its embedding with, from the tokenizer options.

Facts (see trainlint.adapters.hf.tokenizer_vocab): Megatron's _vocab_size_with_padding rounds the tokenizer's size
up to make-vocab-size-divisible-by (128) x TP (megatron/training/tokenizer/tokenizer.py); GPT-NeoX
the same with model_parallel_size (megatron/tokenizer/tokenizer.py), tokenizer_type defaulting to
GPT2BPETokenizer (neox_args.py, NeoXArgsTokenizer); GPT-2's BPE has 50,257 tokens; Megatron's
NullTokenizer adds one EOD token to --vocab-size ("Size of vocab before EOD or padding",
megatron/training/arguments.py _add_tokenizer_args).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.adapters.neox.detect import NeoXAdapter
from trainlint.estimator import build_context, estimate
from trainlint.core.provenance import Origin
from trainlint.files.sources import SourceText
from trainlint.adapters.hf.tokenizer_vocab import local_file, padded

HEAD = ("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 "
        "--num-attention-heads 16 --seq-length 2048 --micro-batch-size 4 --global-batch-size 64 --bf16 ")


def megatron(tail: str, tmp_path: Path | None = None):
    path = str((tmp_path or Path("/nonexistent")) / "train.sh")
    specs = MegatronAdapter().load(SourceText(path, HEAD + tail + "\n"), LoadContext()).specs
    assert len(specs) == 1
    return specs[0]


def neox(text: str, path: str = "/nonexistent/run.yml"):
    specs = NeoXAdapter().load(SourceText(path, text), LoadContext()).specs
    return specs[0]


def rows(spec) -> int:
    """The embedding rows the estimate uses (the framework's padding applied)."""
    est = estimate(spec, build_context(spec, nodes=1))
    assert est.ok, est.missing
    return est.inputs.vocab


def test_layout_with_another_tp_is_padded_for_that_tp():
    spec = megatron("--tokenizer-type GPT2BPETokenizer --tensor-model-parallel-size 1")
    assert rows(spec) == 50304
    spec.parallel.tensor = spec.parallel.tensor.__class__(4, spec.parallel.tensor.provenance)
    spec.parallel.data = None  # derived from the old TP
    spec.batch.grad_accum = None  # and so was the accumulation (the estimate refuses a stale triple)
    assert rows(spec) == 50688  # multiple of 512


def test_padding_rounds_up_to_the_multiple():
    assert padded(50257, 128) == 50304
    assert padded(50257, 256) == 50432
    assert padded(128256, 128) == 128256
    assert padded(32000, 1) == 32000


def test_megatron_gpt2_bpe_padded_by_divisible_by_times_tp():
    spec = megatron("--tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt "
                    "--tensor-model-parallel-size 2")
    assert spec.model.vocab_size.value == 50257 and spec.model.vocab_pad_multiple.value == 128
    assert rows(spec) == 50432  # 50,257 -> multiple of 128 x 2
    assert spec.model.vocab_size.provenance.origin is Origin.DERIVED
    assert "50,257" in spec.model.vocab_size.provenance.note


def test_megatron_make_vocab_size_divisible_by_one_keeps_the_tokenizer_size():
    spec = megatron("--tokenizer-type GPT2BPETokenizer --make-vocab-size-divisible-by 1 --tensor-model-parallel-size 1")
    assert rows(spec) == 50257


def test_megatron_null_tokenizer_adds_eod_then_pads():
    spec = megatron("--tokenizer-type NullTokenizer --vocab-size 32000")
    assert spec.model.vocab_size.value == 32001  # 32,000 + EOD
    assert rows(spec) == 32128  # -> a multiple of 128


def test_megatron_hf_tokenizer_name_matching_a_preset():
    spec = megatron("--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Meta-Llama-3-8B "
                    "--tensor-model-parallel-size 8")
    assert rows(spec) == 129024  # 128,256 -> multiple of 128 x 8 = 1,024
    spec = megatron("--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-8B-Instruct")
    assert spec.model.vocab_size.value == 128256


def test_megatron_unknown_tokenizer_gives_no_vocab():
    spec = megatron("--tokenizer-type HuggingFaceTokenizer --tokenizer-model some-org/unknown-model")
    assert spec.model.vocab_size is None


def test_tokenizer_json_in_the_repository_is_read_for_its_size(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    tok = tmp_path / "tok"
    tok.mkdir()
    vocab = {f"t{i}": i for i in range(1000)}
    (tok / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "vocab": vocab},
                                                    "added_tokens": [{"id": 1000, "content": "<eos>"}]}))
    spec = megatron("--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok", tmp_path)
    assert spec.model.vocab_size.value == 1001 and rows(spec) == 1024  # 1,001 tokens -> 1,024
    assert "tokenizer.json" in spec.model.vocab_size.provenance.note


def test_tokenizer_file_outside_the_repository_is_not_read(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "vocab.json").write_text(json.dumps({"a": 0, "b": 1}))
    assert local_file("../vocab.json", str(repo / "train.sh")) is None
    (repo / "vocab.json").write_text(json.dumps({"a": 0, "b": 1}))
    assert local_file("vocab.json", str(repo / "train.sh")).size == 2


NEOX = "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 2048\ntrain_micro_batch_size_per_gpu: 1\n"


def test_neox_default_tokenizer_is_gpt2_bpe():
    spec = neox(NEOX)
    assert spec.model.vocab_size.value == 50257
    assert rows(spec) == 50304  # Pythia's 50,304


def test_neox_20b_tokenizer_padded_by_model_parallel_size():
    spec = neox(NEOX + "model_parallel_size: 2\n"
                "tokenizer_type: HFTokenizer\nvocab_file: ./20B_checkpoints/20B_tokenizer.json\n")
    assert spec.model.vocab_size.value == 50277
    assert rows(spec) == 50432  # GPT-NeoX-20B's released embedding rows


def test_neox_hf_tokenizer_not_in_the_repository_gives_no_vocab():
    spec = neox("num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\n"
                "tokenizer_type: HFTokenizer\nvocab_file: /data/tokenizer.json\n")
    assert spec.model.vocab_size is None


def test_unidentified_vocab_is_assumed_and_stated():
    spec = megatron("--tokenizer-type HuggingFaceTokenizer --tokenizer-model some-org/unknown-model")
    est = estimate(spec, build_context(spec))
    assert est.ok
    assumed = [a for a in est.assumptions if a.field == "model.vocab_size"]
    assert assumed and assumed[0].origin == "assumed" and assumed[0].value == 32000
    assert "--vocab-size" in assumed[0].source


def test_vocab_size_flag_replaces_a_derived_vocab_not_a_stated_one():
    spec = megatron("--tokenizer-type GPT2BPETokenizer")
    est = estimate(spec, build_context(spec, vocab_size=64000))
    assert est.inputs.vocab == 64000
    stated = megatron("--tokenizer-type TikTokenizer --vocab-size 100000 --make-vocab-size-divisible-by 1")
    assert stated.model.vocab_size.value == 100000 and rows(stated) == 100000
    est = estimate(stated, build_context(stated, vocab_size=64000))
    assert est.inputs.vocab == 100000


def test_estimate_lists_the_assumed_vocab_with_its_range(tmp_path: Path):
    script = tmp_path / "train.sh"
    script.write_text(HEAD + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model some-org/unknown\n")
    out = subprocess.run([sys.executable, "-m", "trainlint", "estimate", "--isolated", str(script)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    line = next(l for l in out.stdout.splitlines() if "model.vocab_size = 32000" in l)
    assert "GiB at 32,000" in line and "GiB at 256,000" in line
    out = subprocess.run([sys.executable, "-m", "trainlint", "estimate", "--isolated", "--vocab-size", "50000",
                          str(script)], capture_output=True, text=True, timeout=120)
    assert "model.vocab_size = 50000" in out.stdout and "[cli]" in out.stdout
