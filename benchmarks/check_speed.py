"""How fast is ``trainlint check``? Cold start on one file, and files per second on 1,000 configs.

Every figure is measured in the same run, against baselines measured in that run on the same
machine, and compared with the targets of issue 7 (ratios and differences, not absolute
times, are what carry over from one machine to another):

* cold start: ``trainlint check`` on one DeepSpeed JSON, a fresh process each time, against
  ``python -c "import yaml"`` (the floor for any Python tool that reads YAML) and against
  ``check-jsonschema --schemafile schemas/deepspeed.schema.json`` validating the same file
  (skipped, with a message, when check-jsonschema is not installed: ``pip install
  check-jsonschema`` in the dev venv; it is not a dependency of trainlint).
  Target: within 1.5x the ``import yaml`` time plus 40 ms.
* throughput: ``trainlint check`` over a temporary directory of 1,000 configs made by copying
  the corpus (../shared/corpus) as many times as needed, so the mix of formats is the corpus's;
  files per second overall, and after start-up, with the default ``--jobs`` (one process per
  CPU) and with ``--jobs 1`` (the extra files over the one-file run:
  ``(N - 1) / (t(N files) - t(1 file))``). Target: at least 500 files/s after start-up.

Each timed command runs ``--repeat`` times, interleaved, and the median is reported. By
default the child processes get a private bytecode cache (``PYTHONPYCACHEPREFIX`` in a
temporary directory, warmed by one untimed run of each command), as an installed package
has its ``.pyc`` files; ``--no-bytecode-cache`` measures with whatever the environment says
(``PYTHONDONTWRITEBYTECODE=1`` makes Python compile trainlint's modules on every start).

    python benchmarks/check_speed.py [--repeat 11] [--files 1000] [--corpus ../shared/corpus]
    python benchmarks/cold_start.py                     # the cold-start lines only

Against an earlier trainlint (issue 17: the framework catalogs may not slow a cold check by more than
10%): ``--baseline OTHER_PYTHON`` (the Python of another checkout's venv, e.g. a worktree of the
commit before) times that install's ``trainlint`` in the same interleaved rounds, and prints the
ratio for the cold start, for every ``--extra-file`` (e.g. a Megatron script, which estimates), and
for ``check`` over the corpus itself with ``--jobs 1`` and the default jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FILE = REPO / "examples" / "deepspeed_zero3_offload.json"
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
DEEPSPEED_SCHEMA = REPO / "schemas" / "deepspeed.schema.json"

COLD_RATIO, COLD_EXTRA_MS = 1.5, 40.0
"""Cold start target: at most 1.5 x t(python -c "import yaml") + 40 ms."""
THROUGHPUT_TARGET = 500.0
"""Files per second after start-up, on the corpus mix."""


def child_env(bytecode_cache: bool, cache_dir: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if bytecode_cache and cache_dir:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache_dir
    return env


def run_once(cmd: Sequence[str], env: dict[str, str], capture: bool = False) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(list(cmd), env=env, check=False, text=True,
                          stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, done.stdout if capture else ""


def time_interleaved(commands: dict[str, Sequence[str]], env: dict[str, str], repeat: int) -> dict[str, float]:
    """Median wall time (s) of each command; one untimed warm-up run each, then ``repeat`` rounds."""
    for cmd in commands.values():
        run_once(cmd, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            times[name].append(run_once(cmd, env)[0])
    return {name: statistics.median(values) for name, values in times.items()}


PYTHON = sys.executable
"""The interpreter whose environment is measured (``--python``): this one by default."""


def trainlint_command(python: str | None = None) -> list[str]:
    """The installed ``trainlint`` script next to the measured Python, else ``python -m trainlint``."""
    python = python or PYTHON
    script = Path(python).parent / "trainlint"
    return [str(script)] if script.is_file() else [python, "-m", "trainlint"]


def check_jsonschema_command() -> list[str] | None:
    script = Path(PYTHON).parent / "check-jsonschema"
    if script.is_file():
        return [str(script)]
    found = shutil.which("check-jsonschema")
    return [found] if found else None


def cold_start(file: str, env: dict[str, str], repeat: int) -> dict[str, float]:
    """Median cold-start times (s): import yaml, trainlint check, check-jsonschema (when installed)."""
    commands: dict[str, Sequence[str]] = {
        "yaml": [PYTHON, "-c", "import yaml"],
        "trainlint": trainlint_command() + ["check", "--isolated", file],
    }
    jsonschema_cli = check_jsonschema_command()
    if jsonschema_cli:
        commands["check-jsonschema"] = jsonschema_cli + ["--schemafile", str(DEEPSPEED_SCHEMA), file]
    return time_interleaved(commands, env, repeat)


def report_cold_start(medians: dict[str, float], file: str) -> bool:
    yaml_ms, ours_ms = medians["yaml"] * 1000, medians["trainlint"] * 1000
    limit = COLD_RATIO * yaml_ms + COLD_EXTRA_MS
    print(f"cold start (median of fresh processes), {Path(file).name}:")
    print(f"  python -c 'import yaml'                  {yaml_ms:7.1f} ms")
    print(f"  trainlint check --isolated FILE          {ours_ms:7.1f} ms   ({ours_ms / yaml_ms:.2f}x import yaml, "
          f"+{ours_ms - yaml_ms:.1f} ms)")
    if "check-jsonschema" in medians:
        other = medians["check-jsonschema"] * 1000
        print(f"  check-jsonschema --schemafile ... FILE   {other:7.1f} ms   (trainlint takes {ours_ms / other:.2f}x)")
    else:
        print("  check-jsonschema: not installed, skipped (pip install check-jsonschema in the dev venv to compare)")
    met = ours_ms <= limit
    print(f"  target: <= {COLD_RATIO}x import yaml + {COLD_EXTRA_MS:.0f} ms = {limit:.1f} ms   "
          f"{'MET' if met else 'NOT MET'}")
    return met


def candidate_suffixes() -> set[str]:
    """The suffixes ``trainlint check`` looks at when walking a directory (its adapters')."""
    from trainlint.adapters import builtin_adapters

    return {s for adapter in builtin_adapters() for s in adapter.extensions}


def build_config_dir(corpus: Path, target: Path, count: int) -> int:
    """Copies of the corpus under ``target`` until ``count`` configs (files trainlint looks at);
    the last copy takes an evenly spread subset, so the mix of formats stays the corpus's.
    Returns the number of configs written."""
    suffixes = candidate_suffixes()
    configs = sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix in suffixes)
    if not configs:
        return 0
    written, copy = 0, 0
    while written < count:
        need = count - written
        chosen = configs if need >= len(configs) else [configs[int(i * len(configs) / need)] for i in range(need)]
        for source in chosen:
            destination = target / f"copy_{copy:03d}" / source.relative_to(corpus)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
        written += len(chosen)
        copy += 1
    return written


def throughput(directory: str, env: dict[str, str], repeat: int, jobs: int = 0) -> tuple[int, float]:
    """(files checked, median seconds) for one ``trainlint check --jobs JOBS`` over ``directory``."""
    cmd = trainlint_command() + ["check", "--isolated", "--exit-zero", "--format", "json", "--jobs", str(jobs), directory]
    _, out = run_once(cmd, env, capture=True)  # warm-up, and the file count
    files = len(json.loads(out)["files"])
    runs = [run_once(cmd, env)[0] for _ in range(repeat)]
    return files, statistics.median(runs)


def report_throughput(label: str, files: int, elapsed: float, one_file: float) -> bool:
    after = (files - 1) / max(elapsed - one_file, 1e-9)
    print(f"  {label}: {files} files in {elapsed:.2f} s: {files / elapsed:6.0f} files/s overall, "
          f"{after:6.0f} files/s after start-up")
    return after >= THROUGHPUT_TARGET


def _wall_and_cpu(cmd: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the process and the workers it waited for)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, _ = run_once(cmd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _compare(commands: dict[str, Sequence[str]], env: dict[str, str], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of each command over interleaved rounds, after one untimed run each. CPU
    time moves much less than wall time on a machine others load: both are printed."""
    for cmd in commands.values():
        run_once(cmd, env)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            runs[name].append(_wall_and_cpu(cmd, env))
    return {name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for name, v in runs.items()}


def against_baseline(baseline: str, files: Sequence[str], corpus: Path, env: dict[str, str], repeat: int) -> None:
    """This install and ``baseline``'s, interleaved: cold one-file checks and the corpus check."""
    ours, theirs = trainlint_command(), trainlint_command(baseline)
    print(f"against the baseline {baseline} (interleaved; median wall / CPU time):")

    def line(label: str, m: dict[str, tuple[float, float]], unit: float, name: str) -> None:
        (bw, bc), (tw, tc) = m["baseline"], m["this"]
        print(f"  {label:52s} baseline {bw * unit:8.1f} / {bc * unit:8.1f} {name}, this {tw * unit:8.1f} / "
              f"{tc * unit:8.1f} {name}   (wall {tw / bw - 1:+.1%}, CPU {tc / bc - 1:+.1%})")

    for file in files:
        tail = ["check", "--isolated", "--exit-zero", "--gpu", "h100-sxm", file]
        line(f"cold check of {Path(file).name}", _compare({"baseline": theirs + tail, "this": ours + tail}, env, repeat),
             1000, "ms")
    if corpus.is_dir():
        for jobs in ("1", "0"):
            tail = ["check", "--isolated", "--exit-zero", "--gpu", "h100-sxm", "--jobs", jobs, str(corpus)]
            line(f"check of the corpus, {'--jobs 1' if jobs == '1' else 'default --jobs'}",
                 _compare({"baseline": theirs + tail, "this": ours + tail}, env, max(3, repeat // 2)), 1, "s")


def main(argv: Sequence[str] | None = None, *, throughput_too: bool = True) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=str(DEFAULT_FILE), help="the one DeepSpeed JSON of the cold-start test")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--files", type=int, default=1000, help="configs in the throughput directory (default 1000)")
    parser.add_argument("--repeat", type=int, default=11, help="timed runs of each command (median; default 11)")
    parser.add_argument("--python", default=sys.executable,
                        help="measure the trainlint installed for this Python (default: the one running the benchmark); "
                             "e.g. a venv with a regular, non-editable install: an editable install adds its import "
                             "hook's cost to every start, the baseline's included")
    parser.add_argument("--baseline", metavar="PYTHON",
                        help="also time the trainlint installed for this Python (another checkout's venv) in the same "
                             "interleaved rounds, and print the ratios")
    parser.add_argument("--extra-file", action="append", default=[],
                        help="with --baseline: another file for a cold one-file check (repeatable)")
    parser.add_argument("--baseline-only", action="store_true",
                        help="with --baseline: only the comparison, not the targets of issue 7")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="do not give the child processes a bytecode cache (measure as the environment is)")
    args = parser.parse_args(argv)
    global PYTHON
    PYTHON = args.python

    with tempfile.TemporaryDirectory(prefix="trainlint-speed-") as tmp:
        cache = None if args.no_bytecode_cache else os.path.join(tmp, "pycache")
        env = child_env(not args.no_bytecode_cache, cache)
        print(f"{PYTHON} (python {sys.version.split()[0]}) on {os.cpu_count()} CPUs; bytecode cache: "
              f"{'private, warmed' if cache else 'as the environment says'}; {args.repeat} runs each, median")
        if args.baseline:
            against_baseline(args.baseline, [args.file, *args.extra_file], Path(args.corpus), env, args.repeat)
            if args.baseline_only:
                return 0
        medians = cold_start(args.file, env, args.repeat)
        report_cold_start(medians, args.file)
        if throughput_too:
            corpus = Path(args.corpus)
            if not corpus.is_dir():
                print(f"corpus not found at {corpus}: throughput not measured")
            else:
                configs = os.path.join(tmp, "configs")
                written = build_config_dir(corpus, Path(configs), args.files)
                runs = max(3, args.repeat // 2)
                print(f"throughput (median of {runs} runs; after start-up = (N - 1) / (t(N) - t(one file cold))):")
                cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
                files, elapsed = throughput(configs, env, runs)
                met = report_throughput(f"{written} configs copied from the corpus, default --jobs ({cpus} CPUs)",
                                        files, elapsed, medians["trainlint"])
                files, elapsed = throughput(configs, env, runs, jobs=1)
                report_throughput(f"{written} configs copied from the corpus, --jobs 1 (one process)",
                                  files, elapsed, medians["trainlint"])
                files, elapsed = throughput(str(corpus), env, runs)
                report_throughput(f"the corpus itself ({corpus}), default --jobs", files, elapsed, medians["trainlint"])
                print(f"  target: >= {THROUGHPUT_TARGET:.0f} files/s after start-up on the {written} configs   "
                      f"{'MET' if met else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
