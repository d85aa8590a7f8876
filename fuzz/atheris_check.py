"""Coverage-guided fuzzing of trainlint with atheris, run by hand (not in CI).

    pip install atheris
    python fuzz/atheris_check.py -max_total_time=300            # seeds: examples/ (+ ../shared/corpus)
    python fuzz/atheris_check.py -runs=100000 crashes/           # also writes crash inputs there

The first input byte picks the file name (so the format the sniffers see), the rest is the text.
A crash is an exception escaping, a TL998/TL999, or the watchdog firing (a hang); libFuzzer
saves the input as ``crash-*`` for a regression test.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["trainlint"]):
    from fuzz_harness import exercise, seed_files

NAMES = ("ds_config.json", "neox.yml", "pretrain_gpt.sh", "config.yaml")


def one_input(data: bytes) -> None:
    if not data:
        return
    name = NAMES[data[0] % len(NAMES)]
    text = data[1:].decode("utf-8", errors="replace")
    exercise(name, text)


def _write_seeds(directory: Path) -> None:
    directory.mkdir(exist_ok=True)
    for i, path in enumerate(seed_files()):
        index = {".json": 0, ".yml": 1, ".yaml": 1, ".sh": 2}.get(path.suffix, 3)
        (directory / f"seed-{i}").write_bytes(bytes([index]) + path.read_bytes()[:65536])


if __name__ == "__main__":
    corpus_dir = HERE / ".atheris-corpus"  # scratch, ignored by git
    _write_seeds(corpus_dir)
    atheris.Setup([sys.argv[0], *sys.argv[1:], str(corpus_dir)], one_input)
    atheris.Fuzz()
