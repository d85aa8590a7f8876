"""How fast is ``trainlint check``? Cold start on one file, and files per second on 1,000 configs.

Every figure is measured in the same run, against baselines measured in that run on the same
machine, and compared with the targets of issues 7 and 33 (ratios and differences, not absolute
times, are what carry over from one machine to another):

* cold start: ``trainlint check`` on one DeepSpeed JSON, a fresh process each time, against
  ``python -c "import yaml"`` (the floor for any Python tool that reads YAML) and against
  ``check-jsonschema --schemafile schemas/deepspeed.schema.json`` validating the same file
  (skipped, with a message, when check-jsonschema is not installed: ``pip install
  check-jsonschema`` in the dev venv; it is not a dependency of trainlint).
  Target: within 1.5x the ``import yaml`` time plus 40 ms.
* throughput and memory: ``trainlint check --format json`` over temporary directories of 1,000
  and 10,000 configs (``--files``) made by copying the corpus (../shared/corpus) as many times
  as needed, so the mix of formats is the corpus's; with the default ``--jobs`` (one process per
  CPU) and with ``--jobs 1``, the two modes alternating round by round (A B, B A, ...). For each:
  files per second (overall; after start-up, ``(N - 1) / (t(N files) - t(1 file))``, beside it),
  CPU time per file (user + system of trainlint and its workers: far less sensitive to a machine
  others load than wall time) and the peak resident memory of the largest process. Targets of
  issue 33 at the largest size: >= 1,000 files/s with the default jobs on 2 CPUs, >= 500 with
  ``--jobs 1``; peak memory at the largest size within 1.2x of the smallest, in both modes.

A run that fails (exit 2, a TL999 internal error in the report, a different file count in the
two modes) ends the benchmark with exit 2 and no figure. Each cold-start command runs
``--repeat`` times, interleaved, and the median is reported. By
default the child processes get a private bytecode cache (``PYTHONPYCACHEPREFIX`` in a
temporary directory, warmed by one untimed run of each command), as an installed package
has its ``.pyc`` files; ``--no-bytecode-cache`` measures with whatever the environment says
(``PYTHONDONTWRITEBYTECODE=1`` makes Python compile trainlint's modules on every start).

    python benchmarks/check_speed.py [--repeat 11] [--files 1000,10000] [--throughput-runs 3] [--corpus ../shared/corpus]
    python benchmarks/cold_start.py                     # the cold-start lines only
    python benchmarks/cold_start.py --instructions      # and its instruction counts (valgrind), load-independent

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
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FILE = REPO / "examples" / "deepspeed_zero3_offload.json"
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
DEEPSPEED_SCHEMA = REPO / "schemas" / "deepspeed.schema.json"

COLD_RATIO, COLD_EXTRA_MS = 1.5, 40.0
"""Cold start target: at most 1.5 x t(python -c "import yaml") + 40 ms."""
THROUGHPUT_TARGETS = {"default --jobs": 1000.0, "--jobs 1": 500.0}
"""Files per second (overall, start-up included) on the largest directory, on the corpus mix (issue 33)."""
MEMORY_GROWTH = 1.2
"""Peak memory at the largest size at most this times the peak at the smallest, in each mode (issue 33)."""


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
    if done.returncode not in (0, 1):  # 2: a usage or internal error (TL999); negative: killed by a signal
        raise InternalError(f"{' '.join(cmd)} exited with {done.returncode}")
    return time.perf_counter() - start, done.stdout if capture else ""


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
    """Median cold-start times (s): import yaml, trainlint check, check-jsonschema (when installed); with
    ``cpu:`` before the name, the median CPU time (user + system) of the same runs."""
    commands: dict[str, Sequence[str]] = {
        "yaml": [PYTHON, "-c", "import yaml"],
        "trainlint": trainlint_command() + ["check", "--isolated", file],
    }
    jsonschema_cli = check_jsonschema_command()
    if jsonschema_cli:
        commands["check-jsonschema"] = jsonschema_cli + ["--schemafile", str(DEEPSPEED_SCHEMA), file]
    both = _compare(commands, env, repeat)
    return {**{name: w for name, (w, _) in both.items()}, **{f"cpu:{name}": c for name, (_, c) in both.items()}}


def instructions(cmd: Sequence[str], env: dict[str, str]) -> int:
    """Instructions one run of ``cmd`` executes, counted by ``valgrind --tool=callgrind`` (a count the
    machine's load does not move, unlike wall and CPU time). InternalError when the command fails or
    valgrind prints no count."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], env=env,
                          check=False, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode not in (0, 1):
        raise InternalError(f"{' '.join(cmd)} under valgrind exited with {done.returncode}")
    counts = [line.split(":", 1)[1].strip().replace(",", "") for line in done.stderr.splitlines() if "Collected :" in line]
    if not counts or not counts[-1].isdigit():
        raise InternalError(f"valgrind printed no instruction count for {' '.join(cmd)}")
    return int(counts[-1])


def report_instructions(file: str, env: dict[str, str], baseline: str | None) -> dict[str, int]:
    """The cold start in instructions (``--instructions``): import yaml, this trainlint and, with
    ``--baseline``, that one; each command run once untimed first (its bytecode cache written)."""
    commands: dict[str, Sequence[str]] = {"python -c 'import yaml'": [PYTHON, "-c", "import yaml"],
                                          "trainlint check --isolated FILE": trainlint_command() + ["check", "--isolated", file]}
    if baseline:
        commands["baseline trainlint check --isolated FILE"] = trainlint_command(baseline) + ["check", "--isolated", file]
    counted = {}
    for name, cmd in commands.items():
        run_once(cmd, env)
        counted[name] = instructions(cmd, env)
    floor = counted["python -c 'import yaml'"]
    print(f"cold start in instructions (valgrind --tool=callgrind, one run each), {Path(file).name}:")
    for name, count in counted.items():
        print(f"  {name:42s} {count / 1e6:8.1f} M   ({count / floor:.2f}x import yaml)")
    return counted


def report_instruction_target(counted: dict[str, int], medians: dict[str, float]) -> None:
    """The cold-start target in instructions: the 40 ms converted at the rate ``import yaml`` ran in this
    run (its instructions over its median CPU time), so that the verdict does not move with the load."""
    yaml_count, ours = counted["python -c 'import yaml'"], counted["trainlint check --isolated FILE"]
    yaml_cpu_ms = medians["cpu:yaml"] * 1000
    per_ms = yaml_count / yaml_cpu_ms
    limit = COLD_RATIO * yaml_count + COLD_EXTRA_MS * per_ms
    print(f"  the same target in instructions (import yaml ran {per_ms / 1e6:.2f} M per ms of CPU): "
          f"<= {COLD_RATIO}x {yaml_count / 1e6:.1f} M + {COLD_EXTRA_MS:.0f} ms = {limit / 1e6:.1f} M; "
          f"trainlint {ours / 1e6:.1f} M   {'MET' if ours <= limit else 'NOT MET'}")


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
    if "cpu:yaml" in medians:
        # CPU time (user + system) of the same runs: far less moved than wall time by a machine others load
        yaml_cpu, ours_cpu = medians["cpu:yaml"] * 1000, medians["cpu:trainlint"] * 1000
        cpu_limit = COLD_RATIO * yaml_cpu + COLD_EXTRA_MS
        print(f"  CPU time: import yaml {yaml_cpu:.1f} ms, trainlint check {ours_cpu:.1f} ms ({ours_cpu / yaml_cpu:.2f}x); "
              f"the same target on CPU time: <= {cpu_limit:.1f} ms   {'MET' if ours_cpu <= cpu_limit else 'NOT MET'}")
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


@dataclass
class Run:
    """One child process, waited for with ``wait4``: wall seconds, CPU seconds (user + system of the
    process and every worker it waited for) and the peak resident memory of the largest process of
    that tree (Linux ``ru_maxrss``: the largest one, not their sum)."""

    wall: float
    cpu: float
    peak_mib: float
    returncode: int
    stdout: str = ""


class InternalError(Exception):
    """A measured command failed (exit 2, a TL999, output that is not the report): no figure stands."""


def run_measured(cmd: Sequence[str], env: dict[str, str], capture: bool = False) -> Run:
    """``capture``: the run's JSON report is summarised (file count, TL999 files) by a child Python, never
    read into this process: on Linux a child's ``ru_maxrss`` starts from the peak of the process that
    spawned it (``exec`` keeps the old image's high-water mark), so a benchmark that once held a 10,000-file
    report would report its own size as every later run's peak."""
    with tempfile.NamedTemporaryFile("w+", suffix=".json") as out:
        start = time.perf_counter()
        child = subprocess.Popen(list(cmd), env=env, text=True, stdout=out if capture else subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        text = ""
        if capture:
            out.flush()
            summary = subprocess.run([sys.executable, "-c", _SUMMARISE, out.name], check=False, text=True,
                                     capture_output=True)
            text = summary.stdout if summary.returncode == 0 else ""
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode, text)


_SUMMARISE = ("import json, sys\n"
              "report = json.load(open(sys.argv[1], encoding='utf-8'))\n"
              "broken = [f['path'] for f in report['files']"
              " if any(d.get('code') == 'TL999' for d in f.get('diagnostics', []))]\n"
              "print(json.dumps({'files': len(report['files']), 'broken': broken[:1], 'n_broken': len(broken)}))\n")
"""Run by a child Python on a captured report: its file count and the files with a TL999."""


def check_report(run: Run, what: str) -> int:
    """The number of files in a ``--format json --exit-zero`` report; InternalError when the run
    failed or any file got a TL999 (an internal error contained as a finding)."""
    if run.returncode != 0:
        raise InternalError(f"{what}: exit {run.returncode} with --exit-zero (trainlint failed)")
    try:
        summary = json.loads(run.stdout)
    except ValueError:
        raise InternalError(f"{what}: the output is not a JSON report") from None
    if summary["n_broken"]:
        raise InternalError(f"{what}: internal error (TL999) on {summary['n_broken']} files, e.g. {summary['broken'][0]}")
    return int(summary["files"])


MODES = {"default --jobs": "0", "--jobs 1": "1"}


def throughput(directory: str, env: dict[str, str], runs: int) -> tuple[int, dict[str, list[Run]]]:
    """(files checked, the runs of each mode) for ``trainlint check --jobs J`` over ``directory``: one
    checked warm-up run per mode, then ``runs`` rounds, each running both modes, in alternating order
    (A B, B A, ...), so that a machine that gets busier or quieter weighs on both alike."""
    commands = {mode: trainlint_command() + ["check", "--isolated", "--exit-zero", "--format", "json", "--jobs", jobs,
                                             directory] for mode, jobs in MODES.items()}
    counts = {check_report(run_measured(cmd, env, capture=True), f"check {mode} {directory}")
              for mode, cmd in commands.items()}
    if len(counts) != 1:
        raise InternalError(f"the two modes checked different numbers of files: {sorted(counts)}")
    measured: dict[str, list[Run]] = {mode: [] for mode in commands}
    order = list(commands)
    for round_ in range(runs):
        for mode in order if round_ % 2 == 0 else order[::-1]:
            run = run_measured(commands[mode], env)
            if run.returncode != 0:
                raise InternalError(f"check {mode} {directory}: exit {run.returncode} in round {round_ + 1}")
            measured[mode].append(run)
    return counts.pop(), measured


def load_average() -> str:
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not Unix
        return "load average unknown"


def report_throughput(sizes: dict[int, tuple[int, dict[str, list[Run]]]], one_file: float) -> bool:
    """Files/s, CPU per file and peak memory of each mode at each size; whether the targets are met."""
    met = True
    peaks: dict[str, dict[int, float]] = {mode: {} for mode in MODES}
    for size, (files, measured) in sizes.items():
        for mode, runs in measured.items():
            wall = statistics.median(r.wall for r in runs)
            cpu = statistics.median(r.cpu for r in runs)
            peak = statistics.median(r.peak_mib for r in runs)
            peaks[mode][size] = peak
            rate = files / wall
            after = (files - 1) / max(wall - one_file, 1e-9)
            target = THROUGHPUT_TARGETS[mode]
            ok = rate >= target
            if size == max(sizes):
                met &= ok
            print(f"  {files:6d} files, {mode:15s} {wall:7.2f} s  {rate:6.0f} files/s ({after:6.0f} after start-up)  "
                  f"CPU {cpu * 1000 / files:5.2f} ms/file  peak RSS {peak:6.1f} MiB"
                  + (f"   target >= {target:.0f} files/s {'MET' if ok else 'NOT MET'}" if size == max(sizes) else ""))
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        for mode in MODES:
            growth = peaks[mode][large] / peaks[mode][small]
            ok = growth <= MEMORY_GROWTH
            met &= ok
            print(f"  peak memory {mode:15s} {large} / {small} files: {growth:.2f}x   target <= {MEMORY_GROWTH}x "
                  f"{'MET' if ok else 'NOT MET'}")
    return met


def _wall_and_cpu(cmd: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the process and the workers it waited for)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, _ = run_once(cmd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _compare(commands: dict[str, Sequence[str]], env: dict[str, str], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of each command over interleaved rounds, after one untimed run each; the
    order alternates round by round (A B, B A, ...), so that neither side always runs right after
    the other (a warmed page cache, a machine getting busier). CPU time moves much less than wall
    time on a machine others load: both are printed."""
    for cmd in commands.values():
        run_once(cmd, env)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    order = list(commands)
    for round_ in range(repeat):
        for name in order if round_ % 2 == 0 else order[::-1]:
            runs[name].append(_wall_and_cpu(commands[name], env))
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


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 1000,10000, got {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes must be positive")
    return sizes


def main(argv: Sequence[str] | None = None, *, throughput_too: bool = True) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=str(DEFAULT_FILE), help="the one DeepSpeed JSON of the cold-start test")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--files", type=_sizes, default=[1000, 10000], metavar="N[,N...]",
                        help="sizes of the throughput directories (default 1000,10000): files/s and CPU per file at "
                             "each, the targets at the largest, peak memory at the largest against the smallest")
    parser.add_argument("--repeat", type=int, default=11, help="timed runs of each cold-start command (median; default 11)")
    parser.add_argument("--throughput-runs", type=int, default=3,
                        help="rounds of the two --jobs modes on each directory, alternating (median; default 3)")
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
                        help="with --baseline: only the comparison, not the targets")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the cold start's instructions with valgrind (callgrind): ratios the machine's "
                             "load does not move (with --baseline, that install's too)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="do not give the child processes a bytecode cache (measure as the environment is)")
    args = parser.parse_args(argv)
    global PYTHON
    PYTHON = args.python
    try:
        return measure(args, throughput_too)
    except InternalError as exc:
        print(f"check_speed: error: {exc}; no figure is reported", file=sys.stderr)
        return 2


def measure(args: argparse.Namespace, throughput_too: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="trainlint-speed-") as tmp:
        cache = None if args.no_bytecode_cache else os.path.join(tmp, "pycache")
        env = child_env(not args.no_bytecode_cache, cache)
        print(f"{PYTHON} (python {sys.version.split()[0]}) on {os.cpu_count()} CPUs, {load_average()}; bytecode "
              f"cache: {'private, warmed' if cache else 'as the environment says'}")
        counted: dict[str, int] = {}
        if args.instructions:
            if shutil.which("valgrind") is None:
                raise InternalError("--instructions needs valgrind on PATH")
            counted = report_instructions(args.file, env, args.baseline)
        if args.baseline:
            against_baseline(args.baseline, [args.file, *args.extra_file], Path(args.corpus), env, args.repeat)
            if args.baseline_only:
                return 0
        check_report(run_measured(trainlint_command() + ["check", "--isolated", "--exit-zero", "--format", "json",
                                                         args.file], env, capture=True), f"check {args.file}")
        medians = cold_start(args.file, env, args.repeat)
        met = report_cold_start(medians, args.file)
        if counted and "cpu:yaml" in medians:
            report_instruction_target(counted, medians)
        if throughput_too:
            corpus = Path(args.corpus)
            if not corpus.is_dir():
                raise InternalError(f"corpus not found at {corpus}: throughput not measured")
            sizes = {}
            for size in args.files:
                configs = os.path.join(tmp, f"configs-{size}")
                written = build_config_dir(corpus, Path(configs), size)
                sizes[size] = throughput(configs, env, args.throughput_runs)
                shutil.rmtree(configs, ignore_errors=True)
                if sizes[size][0] != written:
                    raise InternalError(f"{written} configs written, {sizes[size][0]} checked")
            print(f"throughput on configs copied from {corpus} (median of {args.throughput_runs} rounds, the two modes "
                  f"alternating; CPU = user + system of trainlint and its workers; {os.cpu_count()} CPUs, "
                  f"{load_average()}):")
            met &= report_throughput(sizes, medians["trainlint"])
        print("all targets MET" if met else "some targets NOT MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
