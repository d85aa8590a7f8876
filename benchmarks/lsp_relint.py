"""How long does the language server take to re-lint a buffer after a change?

The server lints a buffer with :class:`trainlint.lsp.workspace.Linter` (in a worker thread,
after a debounce); this measures that call in-process, the way the server makes it, on every
config of the corpus and the examples between ``--min-lines`` and ``--max-lines`` lines, each
re-linted ``--repeat`` times after one warm-up lint (the first lint of a session loads plugins,
schemas and caches; later ones are what an editor waits for on each change). Two figures: an
edit that leaves the run's values as they were (a line break at the end: results memoised on
the spec's values, and the rules' findings kept per run while it stays the same, are reused),
and the worst case, an edit that changes them (the memoised layout searches and the kept
findings are forgotten before each re-lint). A third figure: an edit that moves every run
(blank lines added at the top, a different number each time): the values stay, every position
changes, so no run's findings can be reused (the layout searches, memoised on values, are). A fourth: an
edit of the training length (``--train-iters`` / ``train_iters``, a new number each time), a value edit
the rules' kept findings cannot survive and the fix hints' layout searches do not read (they are memoised
on the fields they read, trainlint.layout.reads); only configs that write it.

Baseline, measured in the same run on the same text: parsing it with the standard parser of
its format (``json.loads``, ``yaml.safe_load``, ``shlex.split`` for scripts), the floor for
any tool that reads the file at all. Target of issue 7: a 300-line config under 20 ms.

    python benchmarks/lsp_relint.py [--corpus ../shared/corpus] [--repeat 7] [--min-lines 150] [--max-lines 600]

Against an earlier trainlint (issue 19: the re-lint may not be slower than before the session
module): ``--baseline OTHER_PYTHON`` (the Python of another checkout's venv) runs this script's
measurement in a child process of that Python and of this one, ``--rounds`` times each,
interleaved, on the same files, and prints both sides' median / p90 / max over the files (each
file's figure the median of its rounds) in wall and thread CPU time, and the ratios.

    python benchmarks/lsp_relint.py --baseline ../base/.venv/bin/python [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_MS = 20.0


TRAIN_ITERS = re.compile(r"""(--train-iters[ =]+|\btrain[-_]iters["']?\s*[:=]\s*|\b[A-Z_]*TRAIN[A-Z_]*(?:ITERS|STEPS)=)(\d+)""")
"""The training length as a script (the flag, or the variable it is given from), a YAML or a JSON writes it:
the value the fourth figure edits."""


def with_train_iters(text: str, offset: int) -> str | None:
    """``text`` with its first training length raised by ``offset`` (None: it writes none)."""
    if TRAIN_ITERS.search(text) is None:
        return None
    return TRAIN_ITERS.sub(lambda m: m.group(1) + str(int(m.group(2)) + offset), text, count=1)


def baseline_parse(path: Path, text: str) -> None:
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            json.loads(text)
        elif suffix in (".yml", ".yaml"):
            import yaml

            yaml.safe_load(text)
        else:
            shlex.split(text, comments=True)
    except Exception:  # noqa: BLE001 - the floor is the attempt, valid or not
        pass


def forget_memoised_results(linter) -> None:
    """Forget the whole-layout searches (trainlint.rules.estimation.fixes.LayoutAdvice) and the rules'
    findings kept per run (LintSettings.findings): what an edit that changes a run's values leaves nothing of."""
    if hasattr(linter, "forget_memoised"):
        linter.forget_memoised()
        return
    # an earlier trainlint (--baseline): the searches in each session, or in a module global before that
    for entry in linter._sessions.values():
        advice = getattr(entry.session.settings, "layout_advice", None)
        if advice is not None and hasattr(advice, "found"):
            advice.found.clear()
    try:
        from trainlint.rules.estimation import fixes

        fixes._LAYOUTS.clear()
    except (ImportError, AttributeError):
        pass


def _missing_lsp_extra() -> str | None:
    """The first of the lsp extra's modules that cannot be imported (None when all can)."""
    import importlib

    for name in ("pygls", "lsprotocol"):
        try:
            importlib.import_module(name)
        except ImportError:
            return name
    return None


def internal_errors(linted) -> list[str]:
    """The TL999 messages of one lint (a trainlint bug, contained as a diagnostic on the buffer)."""
    found = [d for diagnostics in linted.by_path.values() for d in diagnostics if d.code == "TL999"]
    if linted.result is not None:
        found += [d for d in linted.result.diagnostics if d.code == "TL999"]
    return [d.message for d in found]


CPU_MS: list[float] = []
"""The thread CPU time of each median_ms call, beside the wall time it returns (for --rows-json)."""


def median_ms(action, repeat: int) -> float:
    wall, cpu = [], []
    for _ in range(repeat):
        began, began_cpu = time.perf_counter(), time.thread_time()
        action()
        cpu.append(time.thread_time() - began_cpu)
        wall.append(time.perf_counter() - began)
    CPU_MS.append(statistics.median(cpu) * 1e3)
    return statistics.median(wall) * 1e3


def quantiles(values: list[float]) -> tuple[float, float, float]:
    """Median, p90 and max, as the report prints them."""
    return statistics.median(values), statistics.quantiles(values, n=10)[-1], max(values)


def against_baseline(baseline: str, args: argparse.Namespace) -> int:
    """Both installs' per-file figures, in interleaved child processes; medians over the rounds."""
    tail = [str(Path(__file__).resolve()), "--rows-json", "--corpus", args.corpus, "--repeat", str(args.repeat),
            "--min-lines", str(args.min_lines), "--max-lines", str(args.max_lines)]
    runs: dict[str, dict[str, list[list[float]]]] = {"baseline": {}, "this": {}}
    for round_ in range(args.rounds):
        for side, python in (("baseline", baseline), ("this", sys.executable))[:: 1 if round_ % 2 == 0 else -1]:
            out = subprocess.run([python, *tail], capture_output=True, text=True, check=True).stdout
            for name, *figures in json.loads(out):
                runs[side].setdefault(f"{name}\0False", []).append(figures[:4])
                runs[side].setdefault(f"{name}\0True", []).append(figures[4:])
    names = sorted(set(runs["baseline"]) & set(runs["this"]))
    print(f"re-lint through the language server's Linter, against the baseline {baseline}: {args.rounds} interleaved "
          f"rounds, each file's figure the median of its rounds (each round: median of {args.repeat} re-lints)")
    for cpu in (False, True):
        keys = [n for n in names if n.endswith(f"\0{cpu}")]
        for column, label in ((0, "re-lint"), (1, "memo forgotten"), (2, "after a moving edit"),
                              (3, "--train-iters edit")):
            measured = [k for k in keys if all(runs[side][k][0][column] is not None for side in runs)]
            if len(measured) < 2:
                continue
            figures = {side: quantiles([statistics.median(r[column] for r in runs[side][k]) for k in measured])
                       for side in runs}
            b, t = figures["baseline"], figures["this"]
            print(f"  {label:20s} {'CPU ' if cpu else 'wall'} {len(measured)} files: median / p90 / max  baseline "
                  f"{b[0]:5.1f} / {b[1]:5.1f} / {b[2]:5.1f} ms   this {t[0]:5.1f} / {t[1]:5.1f} / {t[2]:5.1f} ms   "
                  f"ratio {t[0] / b[0]:.2f} / {t[1] / b[1]:.2f} / {t[2] / b[2]:.2f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--min-lines", type=int, default=150)
    parser.add_argument("--max-lines", type=int, default=600)
    parser.add_argument("--baseline", metavar="PYTHON", help="compare with another install's Python (see above)")
    parser.add_argument("--rounds", type=int, default=5, help="with --baseline: interleaved rounds per side")
    parser.add_argument("--rows-json", action="store_true", help=argparse.SUPPRESS)  # one side of --baseline
    args = parser.parse_args()
    if args.baseline:
        return against_baseline(args.baseline, args)

    missing = _missing_lsp_extra()
    if missing:
        print(f"lsp_relint: error: the language server's dependencies are not installed ({missing}): "
              "pip install -e '.[lsp]'", file=sys.stderr)
        return 2
    from trainlint.lsp.workspace import Linter

    roots = [REPO / "examples"] + ([Path(args.corpus)] if Path(args.corpus).is_dir() else [])
    files = []
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if args.min_lines <= text.count("\n") + 1 <= args.max_lines:
                files.append((path, text))

    rows = []
    cpu: dict[Path, tuple[float, float, float]] = {}
    moved: dict[Path, float] = {}
    valued: dict[Path, tuple[float, float] | None] = {}
    with tempfile.TemporaryDirectory() as empty:
        linter = Linter()
        for path, text in files:
            # an isolated folder: no project config from the corpus's surroundings
            name = str(Path(empty) / path.name)
            first = linter.lint(name, text, 0)
            broken = internal_errors(first)
            if broken:
                # a trainlint bug on this buffer: a figure measured on it would time an error path
                print(f"lsp_relint: error: internal error linting {path}: {broken[0]}", file=sys.stderr)
                return 2
            if first.result is None or first.result.format is None:
                continue  # not a config: the server publishes nothing for it
            # each edit timed below linted once first: an internal error on it would be timed as an error path
            edits = [text + "\n", "\n" + text, with_train_iters(text, 1)]
            broken = [m for edit in edits if edit is not None for m in internal_errors(linter.lint(name, edit, 1))]
            if broken:
                print(f"lsp_relint: error: internal error linting an edit of {path}: {broken[0]}", file=sys.stderr)
                return 2
            version = iter(range(1, 10**6))
            ours = median_ms(lambda: linter.lint(name, text + "\n" * (next(version) % 2), 1), args.repeat)
            ours_cpu = CPU_MS[-1]

            def relint_with_new_values() -> None:
                forget_memoised_results(linter)  # as if the edit had changed the run's sizes or layout
                linter.lint(name, text + "\n" * (next(version) % 2), 1)

            changed = median_ms(relint_with_new_values, args.repeat)
            changed_cpu = CPU_MS[-1]
            # blank lines added at the top, more each time: every value where it was, every position new
            moved[path] = median_ms(lambda: linter.lint(name, "\n" * (next(version) % 97 + 1) + text, 1), args.repeat)
            cpu[path] = (ours_cpu, changed_cpu, CPU_MS[-1])
            valued[path] = None
            if with_train_iters(text, 1) is not None:
                # a new training length each time: the run's values change, the layout question does not
                wall = median_ms(lambda: linter.lint(name, with_train_iters(text, next(version)), 1), args.repeat)
                valued[path] = (wall, CPU_MS[-1])
            floor = median_ms(lambda: baseline_parse(path, text), args.repeat)
            rows.append((ours, floor, text.count("\n") + 1, first.result.format, path, changed))

    if args.rows_json:
        print(json.dumps([[str(r[4]), r[0], r[5], moved[r[4]], *(valued[r[4]] or (None,))[:1], *cpu[r[4]],
                           *(valued[r[4]] or (None, None))[1:]] for r in rows]))
        return 0
    if not rows:
        print(f"lsp_relint: error: no config of {args.min_lines}-{args.max_lines} lines found under "
              f"{', '.join(str(r) for r in roots)}: nothing measured", file=sys.stderr)
        return 2
    ours = [r[0] for r in rows]
    ratio = [r[0] / max(r[1], 1e-6) for r in rows]
    over = [r for r in rows if r[0] >= TARGET_MS]
    print(f"re-lint through the language server's Linter, {len(rows)} configs of {args.min_lines}-{args.max_lines} lines, "
          f"median of {args.repeat} re-lints each:")
    print(f"  median {statistics.median(ours):6.1f} ms   p90 {statistics.quantiles(ours, n=10)[-1]:6.1f} ms   "
          f"max {max(ours):6.1f} ms")
    shifted = [moved[r[4]] for r in rows]
    print(f"  after an edit that moves every run (blank lines added at the top): median {statistics.median(shifted):6.1f} ms   "
          f"p90 {statistics.quantiles(shifted, n=10)[-1]:6.1f} ms   max {max(shifted):6.1f} ms")
    worst = [r[5] for r in rows]
    print(f"  after an edit that changes the run's values (memoised searches and findings forgotten): median "
          f"{statistics.median(worst):6.1f} ms   p90 {statistics.quantiles(worst, n=10)[-1]:6.1f} ms   max {max(worst):6.1f} ms")
    edited = [valued[r[4]] for r in rows if valued[r[4]] is not None]
    if len(edited) >= 2:
        walls, cpus = [v[0] for v in edited if v], [v[1] for v in edited if v]
        print(f"  after an edit of the training length (--train-iters / train_iters, {len(edited)} configs): median "
              f"{statistics.median(walls):6.1f} ms   p90 {statistics.quantiles(walls, n=10)[-1]:6.1f} ms   max "
              f"{max(walls):6.1f} ms   (thread CPU median {statistics.median(cpus):6.1f} ms   p90 "
              f"{statistics.quantiles(cpus, n=10)[-1]:6.1f} ms)")
    for column, label in ((0, "re-lint"), (2, "after a moving edit"), (1, "after a value edit")):
        figures = [cpu[r[4]][column] for r in rows]
        print(f"  thread CPU time, {label:20s} median {statistics.median(figures):6.1f} ms   "
              f"p90 {statistics.quantiles(figures, n=10)[-1]:6.1f} ms   max {max(figures):6.1f} ms   (far less moved by a "
              f"loaded machine than the wall times above)")
    print(f"  against parsing the same text with json/yaml/shlex: median {statistics.median(ratio):.1f}x")
    by_format: dict[str, list[float]] = {}
    for r in rows:
        by_format.setdefault(r[3], []).append(r[0])
    for fmt, values in sorted(by_format.items()):
        print(f"  {fmt:10s} {len(values):4d} configs   median {statistics.median(values):6.1f} ms   max {max(values):6.1f} ms")
    print(f"  target: < {TARGET_MS:.0f} ms   {len(rows) - len(over)} of {len(rows)} configs meet it")
    for ms, _floor, lines, fmt, path, _ in sorted(over, reverse=True):
        print(f"    {ms:6.1f} ms  {lines:4d} lines  {fmt:9s} {path}")
    slow = [r for r in rows if r[5] >= TARGET_MS]
    print(f"  after a value edit: {len(rows) - len(slow)} of {len(rows)} configs under {TARGET_MS:.0f} ms")
    for _, _, lines, fmt, path, ms in sorted(slow, key=lambda r: -r[5]):
        print(f"    {ms:6.1f} ms  {lines:4d} lines  {fmt:9s} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
