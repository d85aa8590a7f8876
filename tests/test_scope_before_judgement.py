"""Issue 28, deliverable 4: scope before judgement. A shell script is never read as YAML; a Hugging
Face run that trains adapters or a projector only (LoRA, LLaVA's pre-training with a frozen language
model) gets no memory verdict built on an estimate of full training: it is marked not modelled, and
the finding says what is trained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.adapters.base import NOT_MINE
from trainlint.adapters.neox.detect import NeoXAdapter
from trainlint.cli import main

# A bash job whose here-doc writes a NeoX-looking file: it is shell (shebang, #SBATCH), never YAML.
SLURM = """#!/bin/bash
#SBATCH --nodes=2
cat <<EOT > run.yml
  "pipe_parallel_size": 1,
  "model_parallel_size": 2,
  "num_layers": 24,
  "hidden_size": 2048,
EOT
srun python deepy.py train.py run.yml
"""

# llava/train/train.py reads --tune_mm_mlp_adapter (ModelArguments) and then sets
# model.requires_grad_(False) and trains only mm_projector; fastchat/train/train_lora.py wraps the model
# with peft.get_peft_model(LoraConfig(r=lora_args.lora_r, ...)), so only the adapters train.
ZERO2 = {"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto",
         "gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 2}}
LAUNCH = """#!/bin/bash
deepspeed {entry} \\
    --deepspeed ./zero2.json \\
    --model_name_or_path lmsys/vicuna-13b-v1.5 \\
    {extra} \\
    --bf16 True \\
    --per_device_train_batch_size 16 \\
    --gradient_accumulation_steps 1 \\
    --model_max_length 2048 \\
    --gradient_checkpointing False
"""


@pytest.mark.parametrize("text", [SLURM, SLURM.replace("#!/bin/bash\n", "")])
def test_a_shell_script_is_never_yaml(text: str) -> None:
    assert NeoXAdapter().sniff("job.slurm", text) == NOT_MINE


def test_a_shell_job_gets_no_yaml_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "job.slurm").write_text(SLURM)
    main(["check", "--isolated", "--format", "json", "--exit-zero", str(tmp_path / "job.slurm")])
    assert not any(d["code"] == "TL002" for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"])


def _memory(tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, extra: str) -> list[dict]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "zero2.json").write_text(json.dumps(ZERO2))
    script = tmp_path / "train.sh"
    script.write_text(LAUNCH.format(entry=entry, extra=extra))
    main(["check", "--isolated", "--format", "json", "--exit-zero", "--gpu", "a100-sxm-80gb", "--model", "llama2-13b",
          "--nodes", "1", str(script)])
    return [d for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"] if d["code"] in ("TL201", "TL900")]


def test_full_fine_tuning_of_the_same_run_is_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the control: the same launch training every weight is estimated, and does not fit
    found = _memory(tmp_path, capsys, "llava/train/train_mem.py", "--version v1")
    assert [d["severity"] for d in found if d["code"] == "TL201"] == ["error"]


@pytest.mark.parametrize(("entry", "extra", "trained"), [
    ("llava/train/train_mem.py", "--vision_tower openai/clip-vit-large-patch14-336 --tune_mm_mlp_adapter True",
     "only the multimodal projector trains"),
    ("fastchat/train/train_lora.py", "--lora_r 8 --lora_alpha 16", "LoRA of this rank trains adapters only"),
    ("llava/train/train_mem.py", "--lora_enable True --lora_r 128", "LoRA trains adapters only"),
])
def test_adapter_and_frozen_runs_get_no_memory_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     entry: str, extra: str, trained: str) -> None:
    found = _memory(tmp_path, capsys, entry, extra)
    assert not any(d["code"] == "TL201" for d in found)
    (note,) = [d for d in found if d["code"] == "TL900"]
    assert "does not model this run" in note["message"] and trained in note["message"]
