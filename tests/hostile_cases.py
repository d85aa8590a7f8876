"""Hostile inputs, generated (no stored blobs): shared by tests/test_hostile_input.py and
benchmarks/hostile_input.py, which runs each one in a fresh process and measures its time and
peak RSS.

Each case writes its files into a directory and gives the ``trainlint`` arguments to run there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

LAUNCH = ("python pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 24 --hidden-size 2048 "
          "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 4 "
          "--global-batch-size 64\n")


def function_bomb() -> str:
    """Ten functions, each calling the one before ten times: 10^9 calls of f0 if followed (439 bytes
    with the launch line after them)."""
    lines = ["f0() { X=1; }"]
    for i in range(1, 10):
        lines.append(f"f{i}() {{ " + " ".join([f"f{i - 1};"] * 10) + " }")
    lines.append("f9")
    return "\n".join(lines) + "\n" + LAUNCH


def source_fan_out(directory: Path) -> str:
    """Each of four files sources the next forty times: 64,000 evaluations of the last."""
    for level in range(1, 5):
        body = "".join("source ./s{}.sh\n".format(level + 1) for _ in range(40)) if level < 4 else "X=1\nY=2\n"
        (directory / f"s{level}.sh").write_text(body)
    return "source ./s1.sh\n" + LAUNCH


def many_assignments(size: int = 8 * 1024 * 1024 - 4096) -> str:
    return "X=1\n" * (size // 4) + LAUNCH


def deep_nesting(levels: int = 1000) -> str:
    return "{ " * levels + LAUNCH.strip() + "; }" * levels + "\n"


def deep_subshells(levels: int = 1000) -> str:
    return "( " * levels + LAUNCH.strip() + " )" * levels + "\n"  # "((" would start arithmetic


def deep_expansion(levels: int = 1000) -> str:
    return "TP=" + "${A:-" * levels + "2" + "}" * levels + "\n" + LAUNCH.replace("size 2 ", "size $TP ")


def big_integer(digits: int = 4301) -> str:
    return "9" * digits


@dataclass
class Case:
    name: str
    build: Callable[[Path], list[str]]
    """Writes the files; returns the trainlint arguments."""
    expect_exit: tuple[int, ...] = (1,)
    expect_codes: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def _sparse(directory: Path, name: str, size: int) -> Path:
    path = directory / name
    with open(path, "wb") as handle:
        handle.write(b"# trainlint: noqa\n")
        handle.truncate(size)
    return path


def _check(*paths: Path | str, extra: tuple[str, ...] = ()) -> list[str]:
    return ["check", "--isolated", "--format", "json", *extra, *map(str, paths)]


CASES: list[Case] = [
    Case("shell: 10^10 nested function calls (439-byte bomb)",
         lambda d: _check(_write(d, "bomb.sh", function_bomb())), (1,), ("TL012",)),
    Case("shell: source fan-out 40^3",
         lambda d: _check(_write(d, "fan.sh", source_fan_out(d))), (1,), ("TL012",)),
    Case("shell: 8 MB of X=1",
         lambda d: _check(_write(d, "assign.sh", many_assignments())), (1,), ("TL012",)),
    Case("shell: 1,000 nested { } groups",
         lambda d: _check(_write(d, "nest.sh", deep_nesting())), (1,), ("TL002",)),
    Case("shell: 1,000 nested subshells",
         lambda d: _check(_write(d, "sub.sh", deep_subshells())), (1,), ("TL002",)),
    Case("shell: 1,000 nested ${A:-...}",
         lambda d: _check(_write(d, "exp.sh", deep_expansion())), (1,), ("TL002",)),
    Case("DeepSpeed: a 4,301-digit integer",
         lambda d: _check(_write(d, "ds_config.json", '{"train_micro_batch_size_per_gpu": 4,\n "train_batch_size": '
                                 + big_integer() + "}\n")), (1,), ("TL100",)),
    Case("NeoX: a 4,000-digit num_layers",
         lambda d: _check(_write(d, "neox.yml", "num_layers: " + big_integer(4000) + "\nhidden_size: 2048\n"
                                 "num_attention_heads: 16\nseq_length: 2048\nmodel_parallel_size: 1\n"
                                 "pipe_parallel_size: 1\ntrain_micro_batch_size_per_gpu: 4\n")), (1,), ("TL185",)),
    Case("Megatron: a 4,301-digit --num-layers",  # a value (clamped), not a bad flag: the estimate names it
         lambda d: _check(_write(d, "run.sh", LAUNCH.replace("--num-layers 24", "--num-layers " + big_integer()))),
         (1,), ("TL900",)),
    Case("DeepSpeed: micro x accumulation of two 4,400-digit values (an 8,600-digit product in TL100)",
         lambda d: _check(_write(d, "ds_config.json", '{"train_batch_size": 7, "train_micro_batch_size_per_gpu": '
                                 + big_integer(4400) + ', "gradient_accumulation_steps": ' + big_integer(4400) + "}\n")),
         (1,), ("TL100",)),
    Case("shell: a 4,301-digit integer in $((...))",
         lambda d: _check(_write(d, "arith.sh", "N=$((" + big_integer() + " * 2))\n"
                                 + LAUNCH.replace("--num-layers 24", "--num-layers $N"))), (0, 1), ()),
    Case("Megatron: launch line after 256 KB of comments",
         lambda d: _check(_write(d, "late.sh", "# padding comment line .........................\n" * 5400 + LAUNCH)),
         (1,), ("TL101",)),
    Case("a 2 GB sparse file",
         lambda d: _check(_sparse(d, "train.sh", 2 * 1024 ** 3)), (1,), ("TL001",)),
    Case("a 12 MB tokenizer.json in a walk",
         lambda d: [*_check(d), ] if _write(d, "tokenizer.json", '{"model": {"vocab": {' + ",".join(
             f'"t{i}": {i}' for i in range(1_000_000)) + "}}}\n") and _write(
             d, "ds_config.json", '{"train_micro_batch_size_per_gpu": 4}\n') else [], (0,), ()),
]


def run_case_inline(case: Case, directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    return case.build(directory)


if __name__ == "__main__":  # pragma: no cover - a quick look by hand
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            print(i, case.name, run_case_inline(case, Path(tmp) / str(i)), file=sys.stderr)
    _ = os
