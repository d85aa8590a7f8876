"""TL201 when DeepSpeed runs the step but its config was not read: the estimate assumed ZeRO 0
without offload (the most memory a run can take), so exceeding the GPU is a warning that says
so; with the config read the same run is an error."""

from __future__ import annotations

import json
from pathlib import Path

from trainlint.cli import main

SCRIPT = """#!/bin/bash
deepspeed --num_gpus 1 pretrain_gpt2.py \\
    --num-layers 50 --hidden-size 4096 --num-attention-heads 32 \\
    --seq-length 1024 --max-position-embeddings 1024 \\
    --micro-batch-size 10 --global-batch-size 10 --fp16 \\
    --tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt \\
    --deepspeed --deepspeed_config {config}
"""


def _tl201(tmp_path: Path, config: str, capsys) -> list[tuple[str, str, int, int]]:
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT.format(config=config))
    main(["check", "--isolated", "--gpu", "h100-sxm", "--format", "json", "--select", "TL201", str(script)])
    out = json.loads(capsys.readouterr().out)
    return [(d["code"], d["severity"], d["line"], d["column"]) for f in out["files"] for d in f["diagnostics"]]


def test_exceeding_the_gpu_with_an_unread_deepspeed_config_is_a_warning(tmp_path, capsys):
    got = _tl201(tmp_path, "$1", capsys)
    assert got == [("TL201", "warning", 5, 24)]


def test_the_same_run_with_its_config_read_is_an_error(tmp_path, capsys):
    (tmp_path / "ds.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 10, "zero_optimization": {"stage": 0},
                                                  "fp16": {"enabled": True}}))
    got = _tl201(tmp_path, "ds.json", capsys)
    # anchored at the first setting of the fix: ZeRO stage 1 in ds.json beside the recompute flags, since
    # FP16_Optimizer's step (ZeRO 0) holds 8 bytes of fp32 gradients per parameter where ZeRO's holds 4
    assert got == [("TL201", "error", 1, 71)]
