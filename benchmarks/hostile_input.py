"""Time, peak memory and outcome of trainlint on hostile input (issues 20 and 29): every case of
tests/hostile_cases.py in a fresh process (``python -m trainlint ...`` in the case's directory, or
the language-server client tests/lsp_driver.py), measured with ``os.wait4``-style accounting (wall
time; peak RSS of that process and the processes it waited for).

A case is *held* when (issue 29, "Done when"): nothing from the checked tree ran and nothing
outside the checkout was read (the case's own check: a marker file, a secret in the output), it
took at most 10 s of CPU (what the input costs: wall time on a shared machine also measures the
other processes; both are printed) and 1 GB, it ended before the --timeout, its exit code is the expected one (1 where the file fails at
launch), the codes it must report are there, no output has a raw control character, and there is
no traceback, TL998 or TL999.

    python benchmarks/hostile_input.py [--timeout 60] [--only SUBSTRING] [--class H,G] [--json] [--strict]

Prints one line per case, then per class (H resource exhaustion, S reads and code outside the
checkout, G gate bypasses, O output, C crashes, 20 issue 20's cases): cases, held, worst time, peak
memory. Exit 1 when a case hit an internal error (a traceback, TL998, TL999); with ``--strict`` also
when a case is not held.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from hostile_cases import CASES  # noqa: E402

TIME_S = 10.0
RSS_MB = 1024.0
CLASSES = {"H": "resource exhaustion", "S": "code or reads outside the checkout", "G": "gate bypasses",
           "O": "output", "C": "crashes", "20": "issue 20"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
"""A raw control character (a tab and a line break are allowed)."""
_CODE = re.compile(r"\bTL\d{3}\b")


AS_LIMIT = 3 * 1024 ** 3
"""Address space a case may take before it fails (MemoryError): a case that reads /dev/zero must not
take the machine down with it. Three times the 1 GB criterion, so a case over it is still measured."""


def _cap_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def measure(argv: list[str], cwd: Path, timeout: float, env: dict[str, str]) -> dict:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env={**os.environ, **env}, preexec_fn=_cap_memory)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        timed_out = True
    elapsed = time.perf_counter() - start
    return {"rc": proc.returncode, "seconds": elapsed, "timed_out": timed_out, "stdout": out, "stderr": err}


def _codes(stdout: bytes) -> list[str]:
    try:
        data = json.loads(stdout)
        return sorted({d["code"] for f in data.get("files", []) for d in f["diagnostics"]})
    except (ValueError, AttributeError, TypeError, KeyError):
        return sorted(set(_CODE.findall(stdout.decode("utf-8", "replace"))))


def one(index: int, timeout: float) -> dict:
    """Run case ``index`` as this process's only child; peak RSS from RUSAGE_CHILDREN."""
    import resource

    case = CASES[index]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp).resolve()
        args = case.build(directory)
        if case.runner == "lsp":
            argv = [sys.executable, str(REPO / "tests" / "lsp_driver.py"), *args]
        else:
            argv = [sys.executable, "-m", "trainlint", *args]
        env = {k: v.replace("{dir}", str(directory)) for k, v in case.env.items()}
        result = measure(argv, directory, timeout, env)
        output = (result["stdout"] + result["stderr"]).decode("utf-8", "replace")
        extra = case.held(directory, output) if case.held is not None else None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_mb = usage.ru_maxrss / 1024
    cpu = usage.ru_utime + usage.ru_stime
    codes = _codes(result["stdout"])
    traceback = b"Traceback" in result["stderr"]
    internal = traceback or bool({"TL998", "TL999"} & set(codes))
    why: list[str] = []
    if result["timed_out"] or cpu > TIME_S:
        why.append(f"took {cpu:.1f} s of CPU" + (f" (killed after {result['seconds']:.0f} s)" if result["timed_out"] else ""))
    if rss_mb > RSS_MB:
        why.append(f"{rss_mb:.0f} MB")
    if not result["timed_out"] and result["rc"] not in case.expect_exit:
        why.append(f"exit {result['rc']}, expected {'/'.join(map(str, case.expect_exit))}")
    missing = set(case.expect_codes) - set(codes)
    if missing and not result["timed_out"]:
        why.append(f"no {', '.join(sorted(missing))}")
    if _CONTROL.search(output):
        why.append("a raw control character in the output")
    if internal:
        why.append("traceback" if traceback else "internal error (TL998/TL999)")
    if extra:
        why.append(extra)
    return {"case": case.name, "class": case.klass, "rc": result["rc"], "seconds": round(result["seconds"], 2),
            "cpu_seconds": round(cpu, 2),
            "peak_rss_mb": round(rss_mb, 1), "codes": codes, "internal_error": internal,
            "timed_out": result["timed_out"], "held": not why, "why": "; ".join(why),
            "stderr": result["stderr"].decode("utf-8", "replace")[-300:] if internal else ""}


def summary(rows: list[dict]) -> list[dict]:
    out = []
    for klass in CLASSES:
        mine = [r for r in rows if r.get("class") == klass]
        if mine:
            out.append({"class": klass, "what": CLASSES[klass], "cases": len(mine),
                        "held": sum(1 for r in mine if r.get("held")),
                        "worst_seconds": max(r.get("seconds", 0) for r in mine),
                        "worst_cpu_seconds": max(r.get("cpu_seconds", 0) for r in mine),
                        "peak_rss_mb": max(r.get("peak_rss_mb", 0) for r in mine)})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=60.0, help="kill a case after this many seconds (wall)")
    parser.add_argument("--only", default="", help="cases whose name contains this")
    parser.add_argument("--class", dest="classes", default="", help="comma-separated classes (H,S,G,O,C,20)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a case is not held")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)  # the per-case child
    args = parser.parse_args()
    if args.case is not None:
        print(json.dumps(one(args.case, args.timeout)))
        return 0
    wanted = {c.strip() for c in args.classes.split(",") if c.strip()}
    rows = []
    for index, case in enumerate(CASES):
        if (args.only and args.only.lower() not in case.name.lower()) or (wanted and case.klass not in wanted):
            continue
        proc = subprocess.run([sys.executable, __file__, "--case", str(index), "--timeout", str(args.timeout)],
                              capture_output=True, text=True)
        try:
            row = json.loads(proc.stdout)
        except ValueError:
            row = {"case": case.name, "class": case.klass, "held": False, "internal_error": True,
                   "why": "the measuring process failed: " + proc.stderr[-300:]}
        rows.append(row)
        if not args.json:
            flag = "held    " if row.get("held") else "NOT HELD"
            print(f"{flag} {row.get('cpu_seconds', 0):6.2f} s CPU {row.get('seconds', 0):6.2f} s wall "
                  f"{row.get('peak_rss_mb', 0):7.1f} MB  exit {row.get('rc')}  "
                  f"{case.name}" + (f"  -- {row['why']}" if row.get("why") else ""), flush=True)
            if row.get("stderr"):
                print("      " + row["stderr"].strip().replace("\n", "\n      "))
    table = summary(rows)
    if args.json:
        print(json.dumps({"cases": rows, "classes": table, "limits": {"seconds": TIME_S, "rss_mb": RSS_MB}}, indent=1))
    else:
        print("\n| class | cases | held | worst time (CPU) | worst time (wall) | peak memory |\n|---|---:|---:|---:|---:|---:|")
        for t in table:
            print(f"| {t['class']} {t['what']} | {t['cases']} | {t['held']} | {t['worst_cpu_seconds']:.2f} s | "
                  f"{t['worst_seconds']:.2f} s | {t['peak_rss_mb']:.0f} MB |")
    internal = any(r.get("internal_error") for r in rows)
    return 1 if internal or (args.strict and not all(r.get("held") for r in rows)) else 0


if __name__ == "__main__":
    sys.exit(main())
