"""Recall on the frameworks' own rejection tests (issue 34): configs that a framework's unit tests
expect it to refuse (``pytest.raises`` around ``validate_args``, a config class, ...) or to accept,
written as the file a user would write, and checked by trainlint as a user would.

Cases live in ``benchmarks/rejection_cases/<framework>/``, one folder per framework (so each
framework's cases are kept by whoever reads that framework's tests), with a ``cases.yaml`` manifest:

    - file: cuda-graph-nan-check.sh      # the config, in this folder
      expect: reject                     # reject | accept
      source: tests/unit_tests/test_x.py::test_y @ d98e8a6   # the test it was written from
      release: core_v0.15.0              # optional: stated as the project's framework release
      args: [--nodes, 16]                # optional: how the run is launched (a world size the test passes)
      why: what the framework refuses    # optional, for the reader

A rejection counts as **caught** when trainlint reports a start-up finding on it (a TL0xx input
check other than the notes, a TL1xx / TL6xx launch rule) as an error or a warning: against the
assumed upstream release, the release-dependent launch rules speak as warnings by policy (docs/rules.md
"What is an error"); the figures say how many were errors. An accepted config must get **no error**
at all (any rule).

    python benchmarks/rejection_recall.py [--framework megatron] [--verbose] [--json]

Exit status 1 when recall is below --min-recall (default 0.9) or an accepted config gets an error; 2 when
trainlint fails (exit 2) or reports an internal error (TL999) on a case.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CASES = Path(__file__).resolve().parent / "rejection_cases"
NOT_CHECKS = {"TL007", "TL012", "TL014", "TL020"}
"""Input codes that are notes about what was read, not a start-up check."""


@dataclass
class Case:
    framework: str
    file: Path
    expect: str
    source: str
    release: str | None = None
    why: str = ""
    args: tuple[str, ...] = ()
    """Command-line options of the check (``--nodes 16 --gpus-per-node 8``: the world size the test passes)."""


@dataclass
class Outcome:
    case: Case
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def caught(self) -> bool:
        return bool(self.errors or self.warnings)


def load_cases(framework: str | None = None) -> list[Case]:
    out = []
    for folder in sorted(p for p in CASES.iterdir() if p.is_dir()):
        if framework and folder.name != framework:
            continue
        manifest = folder / "cases.yaml"
        if not manifest.is_file():
            continue
        for entry in yaml.safe_load(manifest.read_text(encoding="utf-8")) or []:
            if entry["expect"] not in ("reject", "accept"):
                raise SystemExit(f"{manifest}: {entry['file']}: expect must be reject or accept")
            path = folder / entry["file"]
            if not path.is_file():
                raise SystemExit(f"{manifest}: no file {entry['file']}")
            out.append(Case(folder.name, path, entry["expect"], entry.get("source", ""), entry.get("release"),
                            entry.get("why", ""), tuple(str(a) for a in entry.get("args", ()))))
    return out


def _startup(code: str) -> bool:
    return code.startswith(("TL0", "TL1", "TL6")) and code not in NOT_CHECKS


def run(case: Case) -> Outcome:
    """trainlint check on a copy of the case in a folder of its own (with a project config stating the
    release when the case names one, else --isolated: the release is assumed)."""
    with tempfile.TemporaryDirectory(prefix="rejection-") as tmp:
        target = Path(tmp) / case.file.name
        shutil.copyfile(case.file, target)
        config: list[str] = ["--isolated"]
        if case.release:
            toml = Path(tmp) / "trainlint.toml"
            toml.write_text(f'framework = {{{case.framework} = "{case.release}"}}\n', encoding="utf-8")
            config = ["--config", str(toml)]
        done = subprocess.run([sys.executable, "-m", "trainlint", "check", *config, *case.args, "--format", "json",
                               "--exit-zero", str(target)], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        print(f"rejection_recall: error: trainlint exited {done.returncode} on {case.file}: {done.stderr[-2000:]}",
              file=sys.stderr)
        raise SystemExit(2)
    outcome = Outcome(case)
    files = json.loads(done.stdout)["files"]
    if any(d["code"] == "TL999" for f in files for d in f["diagnostics"]):
        print(f"rejection_recall: error: internal error (TL999) on {case.file}", file=sys.stderr)
        raise SystemExit(2)
    for f in files:
        for d in f["diagnostics"]:
            shown = f"{d['code']} {d['line']}:{d['column']} {d['message'][:160]}"
            if case.expect == "accept":
                if d["severity"] == "error":
                    outcome.errors.append(shown)
            elif _startup(d["code"]) and d["severity"] in ("error", "warning"):
                (outcome.errors if d["severity"] == "error" else outcome.warnings).append(shown)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", help="only this framework's cases (a folder name)")
    parser.add_argument("--min-recall", type=float, default=0.9)
    parser.add_argument("--verbose", action="store_true", help="every case with what trainlint said")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    outcomes = [run(case) for case in load_cases(args.framework)]
    if not outcomes:
        print("no cases", file=sys.stderr)
        return 2
    rows = []
    failed = False
    for framework in sorted({o.case.framework for o in outcomes}):
        mine = [o for o in outcomes if o.case.framework == framework]
        rejects = [o for o in mine if o.case.expect == "reject"]
        accepts = [o for o in mine if o.case.expect == "accept"]
        caught = sum(o.caught for o in rejects)
        as_error = sum(bool(o.errors) for o in rejects)
        false_errors = sum(bool(o.errors) for o in accepts)
        recall = caught / len(rejects) if rejects else 1.0
        failed |= recall < args.min_recall or false_errors > 0
        rows.append({"framework": framework, "rejections": len(rejects), "caught": caught, "caught_as_error": as_error,
                     "recall": round(recall, 3), "accepted": len(accepts), "accepted_with_an_error": false_errors,
                     "missed": [o.case.file.name for o in rejects if not o.caught],
                     "false_errors": [o.case.file.name for o in accepts if o.errors]})
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for row in rows:
            print(f"{row['framework']}: rejections caught {row['caught']} of {row['rejections']} "
                  f"({100 * row['recall']:.0f}%; {row['caught_as_error']} as errors), accepted configs with an error: "
                  f"{row['accepted_with_an_error']} of {row['accepted']}")
            for name in row["missed"]:
                print(f"  missed: {name}")
            for name in row["false_errors"]:
                print(f"  error on an accepted config: {name}")
        if args.verbose:
            for o in outcomes:
                said = o.errors + o.warnings
                print(f"\n{o.case.framework}/{o.case.file.name} ({o.case.expect}; {o.case.source})")
                for line in said or ["(nothing)"]:
                    print(f"    {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
