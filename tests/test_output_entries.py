"""The report's files: one entry per file however its path is spelled, a shared finding shown once."""

from __future__ import annotations

import json
import os
from pathlib import Path

from trainlint.core.results import FileResult
from trainlint.core.diagnostics import Diagnostic, Severity
from trainlint.output import file_entries, severity_counts, summary_line
from trainlint.output.json_format import render as render_json
from trainlint.core.positions import Span


def _undecided(path: str, line: int) -> Diagnostic:
    return Diagnostic("TL012", "unresolved-shell", Severity.INFO, f"the condition at line {line} is not known statically",
                      Span(line, 1, line, 10), path=path)


def _sourcing_scripts(tmp_path: Path, n: int) -> tuple[list[FileResult], str, str]:
    """``n`` scripts that each source conf/args.sh (the shell resolves it to an absolute path), and
    conf/args.sh itself, checked as the user's walk spelled it (relative) and read as no config."""
    shared_abs = str(tmp_path / "conf" / "args.sh")
    shared_rel = os.path.relpath(shared_abs)
    results = [FileResult(str(tmp_path / f"run{i}.sh"), "megatron", [_undecided(shared_abs, 49)]) for i in range(n)]
    results.append(FileResult(shared_rel, None))
    return results, shared_abs, shared_rel


def test_a_finding_five_scripts_share_is_one_entry_shown_once(tmp_path: Path) -> None:
    results, _, shared_rel = _sourcing_scripts(tmp_path, 5)
    entries = file_entries(results)
    shared = [e for e in entries if e.path.endswith("args.sh")]
    assert [e.path for e in shared] == [shared_rel]  # the user's spelling names it
    assert shared[0].format == "megatron"  # the runs that read it say what it is
    assert len(shared[0].diagnostics) == 1
    assert severity_counts(results)[Severity.INFO] == 1
    assert "1 info" in summary_line(results)


def test_json_report_lists_the_file_once(tmp_path: Path) -> None:
    results, _, _ = _sourcing_scripts(tmp_path, 3)
    report = json.loads(render_json(results))
    paths = [f["path"] for f in report["files"] if f["path"].endswith("args.sh")]
    assert len(paths) == 1


def test_findings_that_differ_stay(tmp_path: Path) -> None:
    results, shared_abs, _ = _sourcing_scripts(tmp_path, 2)
    results[1].diagnostics.append(_undecided(shared_abs, 54))
    entry = next(e for e in file_entries(results) if e.path.endswith("args.sh"))
    assert [d.span.line for d in entry.diagnostics] == [49, 54]


def test_pseudo_paths_are_their_own_entry() -> None:
    cli = Diagnostic("TL013", "x", Severity.ERROR, "bad flag", path="<command line>")
    results = [FileResult("a.json", "deepspeed", [cli])]
    assert [e.path for e in file_entries(results)] == ["a.json", "<command line>"]
