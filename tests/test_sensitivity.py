"""Golden tests: `estimate` says, beside every assumed input (world size, micro batch, sequence
length, vocabulary), how much the total memory moves between a low and a high plausible value."""

from __future__ import annotations

import json
import re
from pathlib import Path

from trainlint.cli import main

RANGE = re.compile(r"total memory ([\d.]+) GiB at (.+?) to ([\d.]+) GiB at (.+?) \(([+-][\d.]+) GiB\)")


def assumption_lines(capsys, *argv: str) -> dict[str, str]:
    assert main(["estimate", "--isolated", *argv]) == 0
    out = capsys.readouterr().out
    return {line.split(" = ")[0].strip(): line for line in out.splitlines() if " = " in line and "[" in line}


def test_every_assumed_input_has_a_range(tmp_path: Path, capsys):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}))
    lines = assumption_lines(capsys, str(ds), "--model", "llama2-7b")
    for name, low_label, high_label in (("batch.micro_batch", "micro batch 1", "micro batch 8"),
                                        ("model.seq_length", "sequence 2,048", "sequence 8,192"),
                                        ("cluster.world_size", "1 GPU", "64 GPUs")):
        m = RANGE.search(lines[name])
        assert m, lines[name]
        low, high = float(m.group(1)), float(m.group(3))
        assert (m.group(2), m.group(4)) == (low_label, high_label)
        assert abs((high - low) - float(m.group(5))) < 0.11
    micro = RANGE.search(lines["batch.micro_batch"])
    assert float(micro.group(3)) > float(micro.group(1))  # more activations per GPU
    world = RANGE.search(lines["cluster.world_size"])
    assert float(world.group(3)) < float(world.group(1))  # ZeRO 2 shards over more ranks
    assert RANGE.search(lines["model.vocab_size"]) is None  # the preset states it: not assumed


def test_stated_inputs_get_no_range(tmp_path: Path, capsys):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}))
    lines = assumption_lines(capsys, str(ds), "--model", "llama2-7b", "--nodes", "2")
    assert "batch.micro_batch" not in lines or RANGE.search(lines["batch.micro_batch"]) is None
    assert RANGE.search(lines.get("cluster.world_size", "")) is None


def test_assumed_vocabulary_keeps_its_range(tmp_path: Path, capsys):
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 "
                      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
                      "--micro-batch-size 1 --global-batch-size 64\n")
    lines = assumption_lines(capsys, str(script))
    m = RANGE.search(lines["model.vocab_size"])
    assert m and m.group(2) == "32,000" and m.group(4) == "256,000" and float(m.group(3)) > float(m.group(1))
