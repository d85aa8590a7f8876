"""layout.candidate.batch_changes: only the batch members the file has to write, never a missing one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trainlint.layout.candidate import batch_changes
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec

REPO = Path(__file__).resolve().parents[1]


def _megatron(global_batch: int | None) -> TrainingSpec:
    spec = TrainingSpec(framework="megatron", path="train.sh")
    spec.batch.micro_batch = Value(4, Provenance(Origin.FILE, key="--micro-batch-size"))
    if global_batch is not None:
        spec.batch.global_batch = Value(global_batch, Provenance(Origin.FILE, key="--global-batch-size"))
    return spec


def test_a_run_without_a_global_batch_gets_none_written():
    # Megatron v1.x (--batch-size x DP, no --global-batch-size): the micro batch changes, nothing else
    assert batch_changes(_megatron(None), (4, 2, None), (8, 1, None), 4) == {"batch.micro_batch": 8}


def test_a_written_global_batch_that_changes_is_written():
    assert batch_changes(_megatron(64), (4, 2, 64), (4, 4, 128), 8) == {"batch.global_batch": 128}
    assert batch_changes(_megatron(64), (4, 2, 64), (8, 1, 64), 8) == {"batch.micro_batch": 8}


def test_no_fix_hint_renders_a_missing_value():
    # the legacy Megatron-DeepSpeed fixture once got "with --micro-batch-size 8, --global-batch-size None"
    out = subprocess.run([sys.executable, "-m", "trainlint", "check", "--no-summary", "--isolated",
                          str(REPO / "tests" / "fixtures" / "megatron" / "deepspeed.sh")],
                         capture_output=True, text=True, cwd=REPO)
    assert "TL304" in out.stdout and "--micro-batch-size 8" in out.stdout
    assert " None" not in out.stdout
