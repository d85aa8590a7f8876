"""How fast is ``trainlint check``? Throughput on the corpus and cold start-up on one file.

Each figure is printed next to a baseline measured in the same run on the same machine:
a cold ``python -c "import yaml, jsonschema"`` (the floor for any Python tool that reads YAML
and validates JSON Schema). Ratios, not absolute times, are what to compare across machines.

    python benchmarks/check_speed.py [--corpus ../shared/corpus] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _time(cmd: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--file", default=str(REPO / "examples" / "deepspeed_zero3_offload.json"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    py = sys.executable
    trainlint = [py, "-m", "trainlint"]
    baseline = _time([py, "-c", "import yaml, jsonschema"], args.repeat)
    startup = _time(trainlint + ["check", "--isolated", args.file], args.repeat)
    print(f"baseline  python -c 'import yaml, jsonschema'   median {statistics.median(baseline) * 1000:7.1f} ms")
    print(f"start-up  trainlint check <one file>            median {statistics.median(startup) * 1000:7.1f} ms"
          f"   ({statistics.median(startup) / statistics.median(baseline):.2f}x baseline)")

    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"corpus not found at {corpus}: throughput not measured")
        return 0
    runs = []
    for _ in range(max(1, args.repeat // 2)):
        start = time.perf_counter()
        out = subprocess.run(trainlint + ["check", "--isolated", "--format", "json", "--exit-zero", str(corpus)],
                             capture_output=True, text=True, check=False)
        runs.append(time.perf_counter() - start)
    files = json.loads(out.stdout)["files"]
    elapsed = statistics.median(runs)
    net = max(elapsed - statistics.median(startup), 1e-9)
    print(f"corpus    trainlint check {corpus}: {len(files)} files in {elapsed:.2f} s "
          f"({len(files) / elapsed:.0f} files/s overall, {len(files) / net:.0f} files/s after start-up)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
