"""Red-team cases of issue 29 (second round), generated (no stored blobs): code and secrets (S1-S9),
the gate bypass of a nested config (G1), output (O1) and crashes (C1-C4).

Shared by tests/test_security.py, which runs each in a fresh process (under a 1 GB address-space
limit and a 10 s timeout), and by benchmarks/hostile_input.py, which can time them the same way
as the cases of tests/hostile_cases.py. Each case writes its files into a directory and gives the
``trainlint`` arguments (paths absolute); ``cwd`` says where to run them from (the checkout).
A secret outside the checkout holds :data:`SECRET`: it must never appear in any output.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

SECRET = "SECRET_hunter2_XYZ"
LAUNCH = ("python pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 24 --hidden-size 2048 "
          "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 4 "
          "--global-batch-size 64")
BAD_DS = '{"train_batch_size": 999, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}\n'
"""A DeepSpeed config DeepSpeed refuses (999 is not micro x accumulation x DP for any DP of 8): TL100, exit 1."""


@dataclass
class Case:
    name: str
    build: Callable[[Path], list[str]]
    """Writes the files under the given directory; returns the trainlint arguments."""
    expect_exit: tuple[int, ...] = (1,)
    expect_codes: tuple[str, ...] = ()
    absent_codes: tuple[str, ...] = ("TL999",)
    cwd: str = "repo"
    """Where to run, relative to the case's directory."""
    env: dict[str, str] = field(default_factory=dict)


def _repo(d: Path) -> Path:
    repo = d / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    return repo


def _secret_dir(d: Path) -> Path:
    outside = d / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "env.sh").write_text(f"TP={SECRET}\n")
    (outside / "ds.json").write_text(f'{{"train_micro_batch_size_per_gpu": 4, "{SECRET}": 1}}\n')
    (outside / "config.json").write_text('{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, '
                                         '"num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000, '
                                         f'"{SECRET}": 1}}\n')
    return outside


def source_roots_everything(d: Path) -> list[str]:
    repo, outside = _repo(d), _secret_dir(d)
    (repo / ".trainlint.toml").write_text('source-roots = ["/"]\n')
    (repo / "train.sh").write_text(f"source {outside / 'env.sh'}\n"
                                   + LAUNCH.replace("size 2 ", "size $TP ")
                                   + f" --deepspeed --deepspeed_config {outside / 'ds.json'}\n")
    return ["check", "--format", "json", str(repo / "train.sh")]


def runs_outside(d: Path) -> list[str]:
    repo, outside = _repo(d), _secret_dir(d)
    (repo / ".trainlint.toml").write_text(f'runs = [["{outside / "ds.json"}"]]\n')
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def model_outside(d: Path) -> list[str]:
    repo, outside = _repo(d), _secret_dir(d)
    (repo / ".trainlint.toml").write_text(f'model = "{outside / "config.json"}"\n')
    (repo / "train.sh").write_text(LAUNCH + "\n")
    return ["estimate", "--format", "json", str(repo / "train.sh")]


def walk_symlink_out(d: Path) -> list[str]:
    repo, outside = _repo(d), _secret_dir(d)
    (repo / "leak").symlink_to(outside, target_is_directory=True)
    (repo / "leak.json").symlink_to(outside / "ds.json")
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo)]


def explicit_symlink_out(d: Path) -> list[str]:
    """Changed-files CI passes a pull request's paths explicitly; one is a link out of the checkout."""
    repo, outside = _repo(d), _secret_dir(d)
    (repo / "x.json").symlink_to(outside / "ds.json")
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo / "x.json"), str(repo / "ds_config.json")]


def model_dev_zero(d: Path) -> list[str]:
    repo = _repo(d)
    (repo / "zero.json").symlink_to("/dev/zero")
    (repo / ".trainlint.toml").write_text('model = "zero.json"\n')
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def model_fifo(d: Path) -> list[str]:
    repo = _repo(d)
    os.mkfifo(repo / "model.json")
    (repo / ".trainlint.toml").write_text('model = "model.json"\n')
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def cli_model_dev_zero(d: Path) -> list[str]:
    repo = _repo(d)
    (repo / "zero.json").symlink_to("/dev/zero")
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--isolated", "--format", "json", "--model", str(repo / "zero.json"), str(repo / "ds_config.json")]


def baseline_fifo(d: Path) -> list[str]:
    repo = _repo(d)
    os.mkfifo(repo / "baseline.json")
    (repo / ".trainlint.toml").write_text('baseline = "baseline.json"\n')
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def baseline_dev_zero(d: Path) -> list[str]:
    repo = _repo(d)
    (repo / "baseline.json").symlink_to("/dev/zero")
    (repo / ".trainlint.toml").write_text('baseline = "baseline.json"\n')
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def nested_config_silences_the_commit(d: Path) -> list[str]:
    repo = _repo(d)
    (repo / "aaa").mkdir()
    (repo / "aaa" / ".trainlint.toml").write_text('ignore = ["ALL"]\n')
    (repo / "aaa" / "x.json").write_text('{"train_micro_batch_size_per_gpu": 4}\n')
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo / "aaa" / "x.json"), str(repo / "ds_config.json")]


def negative_nproc(d: Path) -> list[str]:
    repo = _repo(d)
    (repo / "train.sh").write_text("torchrun --nproc_per_node -8 " + LAUNCH.removeprefix("python ") + "\n")
    return ["check", "--isolated", "--format", "json", str(repo / "train.sh")]


def _zero_memory_gpu(d: Path) -> Path:
    repo = _repo(d)
    (repo / ".trainlint.toml").write_text('gpu = "mygpu"\n[gpus.mygpu]\nmemory_gb = 0\nbf16_tflops = nan\n')
    (repo / "train.sh").write_text(LAUNCH + "\n")
    return repo


def zero_memory_gpu_check(d: Path) -> list[str]:
    return ["check", "--format", "json", str(_zero_memory_gpu(d) / "train.sh")]


def zero_memory_gpu_estimate(d: Path) -> list[str]:
    return ["estimate", str(_zero_memory_gpu(d) / "train.sh")]


def zero_memory_gpu_suggest(d: Path) -> list[str]:
    return ["suggest", str(_zero_memory_gpu(d) / "train.sh")]


def tool_is_a_number(d: Path) -> list[str]:
    repo = _repo(d / "parent")
    (d / "parent" / "pyproject.toml").write_text("tool = 1\n")
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def run_of_commas(d: Path) -> list[str]:
    _repo(d)
    return ["check", "--run", ","]


def forged_config_error(d: Path) -> list[str]:
    repo = _repo(d)
    (repo / ".trainlint.toml").write_text('"\\u001b[31mred\\n::error file=x.py,line=1::forged" = 1\n')
    (repo / "ds_config.json").write_text(BAD_DS)
    return ["check", "--format", "github", str(repo / "ds_config.json")]


CASES: list[Case] = [
    Case("S3: a repository config's source-roots = [\"/\"]", source_roots_everything, (0, 1), ("TL012",)),
    Case("S6: runs = a file outside the checkout", runs_outside, (2,)),
    Case("S9: model = a config.json outside the checkout", model_outside, (2,)),
    Case("S5: the walk meets symlinks out of the checkout", walk_symlink_out, (1,), ("TL100",)),
    Case("S5: an explicit path is a symlink out of the checkout", explicit_symlink_out, (1,), ("TL001", "TL100")),
    Case("S4: model = a symlink to /dev/zero", model_dev_zero, (2,)),
    Case("S4: model = a named pipe", model_fifo, (2,)),
    Case("S4: --model a symlink to /dev/zero", cli_model_dev_zero, (2,)),
    Case("S4: baseline = a named pipe", baseline_fifo, (2,)),
    Case("S4: baseline = a symlink to /dev/zero", baseline_dev_zero, (2,)),
    Case("G1: aaa/.trainlint.toml ignore = ALL named first", nested_config_silences_the_commit, (1,), ("TL100",)),
    Case("C1: --nproc_per_node -8", negative_nproc, (1,), ("TL006",)),
    Case("C2: a project GPU with 0 memory (check)", zero_memory_gpu_check, (2,)),
    Case("C2: a project GPU with 0 memory (estimate)", zero_memory_gpu_estimate, (2,)),
    Case("C2: a project GPU with 0 memory (suggest)", zero_memory_gpu_suggest, (2,)),
    Case("C3: tool = 1 in a parent pyproject.toml", tool_is_a_number, (1,), ("TL100",), cwd="parent/repo"),
    Case("C4: --run ,", run_of_commas, (2,)),
    Case("O1: an escape sequence and a forged ::error line in a config key", forged_config_error, (2,)),
]
