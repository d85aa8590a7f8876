"""Time and peak memory of trainlint on hostile input (issue 20): every case of
tests/hostile_cases.py in a fresh ``python -m trainlint`` process, measured with ``os.wait4``
(wall time, peak RSS of that process alone).

Baseline in the same run: ``python -m trainlint check`` on one small example (the start-up cost
every case pays). Targets: each case under 2 s, peak RSS under 300 MB.

    python benchmarks/hostile_input.py [--timeout 120] [--only SUBSTRING] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from hostile_cases import CASES  # noqa: E402

TIME_S = 2.0
RSS_MB = 300.0


def measure(argv: list[str], cwd: Path, timeout: float, env: dict[str, str]) -> dict:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "trainlint", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **env})
    out_chunks: list[bytes] = []
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        timed_out = True
    elapsed = time.perf_counter() - start
    # communicate() has reaped the child; its rusage is in RUSAGE_CHILDREN as a running maximum,
    # so each case runs in its own measuring parent (see main) for a per-case figure
    _ = out_chunks
    return {"rc": proc.returncode, "seconds": elapsed, "timed_out": timed_out, "stdout": out, "stderr": err}


def one(index: int, timeout: float) -> dict:
    """Run case ``index`` as this process's only child; peak RSS from RUSAGE_CHILDREN."""
    import resource

    case = CASES[index]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        argv = case.build(directory)
        result = measure(argv, directory, timeout, case.env)
    rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    codes: list[str] = []
    try:
        data = json.loads(result["stdout"])
        codes = sorted({d["code"] for f in data.get("files", []) for d in f["diagnostics"]})
    except (ValueError, AttributeError, TypeError):
        pass
    traceback = b"Traceback" in result["stderr"]
    ok = (not result["timed_out"] and not traceback and result["rc"] in case.expect_exit
          and set(case.expect_codes) <= set(codes) and not {"TL998", "TL999"} & set(codes))
    return {"case": case.name, "rc": result["rc"], "seconds": round(result["seconds"], 3),
            "peak_rss_mb": round(rss_kb / 1024, 1), "codes": codes, "traceback": traceback,
            "timed_out": result["timed_out"], "as_expected": ok,
            "stderr": result["stderr"].decode("utf-8", "replace")[-300:] if (traceback or not ok) else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)  # the per-case child
    args = parser.parse_args()
    if args.case is not None:
        print(json.dumps(one(args.case, args.timeout)))
        return 0
    rows = []
    # baseline: start-up and one small check
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 4}\n')
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "trainlint", "check", "--isolated", "ds_config.json"], cwd=tmp,
                       capture_output=True)
        baseline = time.perf_counter() - start
    for index, case in enumerate(CASES):
        if args.only and args.only.lower() not in case.name.lower():
            continue
        proc = subprocess.run([sys.executable, __file__, "--case", str(index), "--timeout", str(args.timeout)],
                              capture_output=True, text=True)
        try:
            row = json.loads(proc.stdout)
        except ValueError:
            row = {"case": case.name, "error": proc.stderr[-500:]}
        rows.append(row)
        if not args.json:
            flag = "ok " if row.get("as_expected") and row.get("seconds", 99) < TIME_S and row.get("peak_rss_mb", 1e9) < RSS_MB else "BAD"
            print(f"{flag} {row.get('seconds', 0):7.2f} s {row.get('peak_rss_mb', 0):7.1f} MB  exit {row.get('rc')}  "
                  f"{','.join(row.get('codes', []))[:40]:40}  {case.name}", flush=True)
            if row.get("stderr"):
                print("      " + row["stderr"].strip().replace("\n", "\n      "))
    worst_t = max((r.get("seconds", 0) for r in rows), default=0)
    worst_m = max((r.get("peak_rss_mb", 0) for r in rows), default=0)
    summary = {"baseline_seconds": round(baseline, 3), "slowest_seconds": worst_t, "peak_rss_mb": worst_m,
               "all_as_expected": all(r.get("as_expected") for r in rows),
               "targets": {"seconds": TIME_S, "rss_mb": RSS_MB}}
    if args.json:
        print(json.dumps({"cases": rows, "summary": summary}, indent=1))
    else:
        print(f"baseline (start-up + one small check): {baseline:.2f} s; slowest case {worst_t:.2f} s "
              f"(target < {TIME_S} s); largest peak RSS {worst_m:.0f} MB (target < {RSS_MB:.0f} MB)")
    ok = summary["all_as_expected"] and worst_t < TIME_S and worst_m < RSS_MB
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
