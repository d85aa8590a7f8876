"""Findings on the real-config corpus by code and severity: the measure of issue 28 (errors only for
certainties, no flood of warnings nobody can act on).

Checks ../shared/corpus as a user would: the configs of each upstream repository from the corpus
folder (no framework source there: the release is assumed), and each fork of corpus/forks where it
lives (the current directory is the fork's checkout, so its own argument module is found in the
project). Prints, per group and in total, the count of each code at each severity, the unknown-name
findings (TL004 warnings), and with --errors every error-level finding, one line each.

    python benchmarks/corpus_findings.py [--corpus ../shared/corpus] [--errors] [--json]

To compare with another build, run it with that build first on PYTHONPATH (the checks run as
``python -m trainlint`` subprocesses and inherit the environment).

Exit status 2 when trainlint fails (exit 2) or reports an internal error (TL999) on any file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEVERITIES = ("error", "warning", "info")


def check(cwd: Path, paths: list[str]) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "trainlint", "check", "--format", "json", "--exit-zero", "--isolated",
                           *paths], cwd=cwd, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        print(f"corpus_findings: error: trainlint exited {done.returncode} in {cwd}: {done.stderr[-2000:]}",
              file=sys.stderr)
        raise SystemExit(2)
    files = json.loads(done.stdout)["files"]
    broken = [f["path"] for f in files if any(d["code"] == "TL999" for d in f["diagnostics"])]
    if broken:
        print(f"corpus_findings: error: internal error (TL999) in {len(broken)} files in {cwd}, e.g. {broken[0]}",
              file=sys.stderr)
        raise SystemExit(2)
    for f in files:
        f["path"] = str((cwd / f["path"]).resolve().relative_to(cwd.resolve().parent)) if not Path(f["path"]).is_absolute() \
            else f["path"]
    return files


def groups(corpus: Path) -> list[tuple[str, Path, list[str]]]:
    """(name, directory to run in, paths there): the upstream repositories together, each fork alone."""
    upstream = sorted(p.name for p in corpus.iterdir() if p.is_dir() and p.name != "forks")
    out = [("upstream repositories (release assumed)", corpus, upstream)]
    forks = corpus / "forks"
    if forks.is_dir():
        out.extend((f"fork {p.name} (checked in its checkout)", p, ["."]) for p in sorted(forks.iterdir()) if p.is_dir())
    return out


def counts(files: list[dict]) -> Counter:
    return Counter((d["code"], d["severity"]) for f in files for d in f["diagnostics"])


def table(counter: Counter) -> list[str]:
    lines = []
    for severity in SEVERITIES:
        row = sorted((code, n) for (code, sev), n in counter.items() if sev == severity)
        total = sum(n for _, n in row)
        lines.append(f"  {severity:7s} {total:5d}  " + ", ".join(f"{code} x{n}" for code, n in row))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--errors", action="store_true", help="list every error-level finding")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args()
    corpus = Path(args.corpus).resolve()
    if not corpus.is_dir():
        print(f"no corpus at {corpus}", file=sys.stderr)
        return 2
    env_note = os.environ.get("PYTHONPATH", "")
    total: Counter = Counter()
    report: dict = {}
    errors: list[str] = []
    for name, cwd, paths in groups(corpus):
        files = check(cwd, paths)
        counter = counts(files)
        total += counter
        report[name] = {f"{code} {sev}": n for (code, sev), n in sorted(counter.items())}
        if not args.json:
            print(f"{name}: {len(files)} files")
            print("\n".join(table(counter)))
        for f in files:
            for d in f["diagnostics"]:
                if d["severity"] == "error":
                    errors.append(f"  {f['path']}:{d['line']}:{d['column']}: {d['code']} {d['message'][:200]}")
    if args.json:
        print(json.dumps({"groups": report, "total": {f"{c} {s}": n for (c, s), n in sorted(total.items())}}, indent=1))
        return 0
    print("total:" + (f" (PYTHONPATH={env_note})" if env_note else ""))
    print("\n".join(table(total)))
    print(f"unknown-name warnings (TL004): {total[('TL004', 'warning')]}; errors: "
          f"{sum(n for (_, s), n in total.items() if s == 'error')}")
    if args.errors:
        print("error-level findings:")
        print("\n".join(errors) or "  none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
