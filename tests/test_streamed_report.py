"""``check`` reports one file at a time (issue 33): the same report as a list of every result gives,
without keeping the results.

The report is fed each result as it is linted (``Report.add``), keeps a small record per file and
stores the findings (spooled out of memory for a check); what needs the whole run (a file a later
script sources, plugin failures placed first, unused suppressions) is settled at the end."""

from __future__ import annotations

import gc
import json
import os
import weakref
from pathlib import Path

import pytest

from trainlint.cli import main
from trainlint.core.diagnostics import Diagnostic, Severity
from trainlint.output import file_entries
from trainlint.output.report import Report, SpoolStore
from trainlint.core.positions import Span
from trainlint.core.results import FileResult


def _finding(path: str | None, line: int, code: str = "TL012", severity: Severity = Severity.INFO) -> Diagnostic:
    return Diagnostic(code, "x", severity, f"finding at line {line}", Span(line, 1, line, 5), path=path)


def _run(tmp_path: Path) -> list[FileResult]:
    """A script, then a file it sources (with its own finding), then a later script sourcing the
    same file with a new finding in it, and a file nothing else names: entries that a report
    written file by file would get wrong."""
    shared = str(tmp_path / "conf" / "args.sh")
    return [
        FileResult("a.sh", "megatron", [_finding(None, 3), _finding(shared, 7)]),
        FileResult(shared, "megatron", [_finding(None, 2, severity=Severity.ERROR)]),
        FileResult("b.json", "deepspeed", []),
        FileResult("c.sh", "megatron", [_finding(shared, 7), _finding(shared, 1, code="TL013"), _finding(None, 9)]),
        FileResult("d.txt", None, []),
    ]


@pytest.mark.parametrize("spool_bytes", [0, 1 << 20])
def test_a_report_fed_out_of_order_is_the_report_of_the_list(tmp_path: Path, spool_bytes: int) -> None:
    """Results given in any order, each with its place in the run, give the entries of the ordered
    list: order of first mention, a shared file's findings merged (the later script's new one
    included), sorted, a finding two scripts share once. With the findings on disk (size 0) too."""
    results = _run(tmp_path)
    report = Report(SpoolStore(max_size=spool_bytes))
    for index in (3, 0, 4, 2, 1):
        report.add(results[index], (1, index, 0))
    expected = file_entries(results)
    assert list(report.entries()) == expected
    shared = next(e for e in expected if e.path.endswith("args.sh"))
    # its own result's finding (no path) sorts first, then the sourcing scripts', the shared one once
    assert [(d.code, d.line) for d in shared.diagnostics] == [("TL012", 2), ("TL013", 1), ("TL012", 7)]
    assert report.summary_line() == "Found 5 problems (1 error, 4 info) in 4 files; 1 file not recognised as a config."
    report.close()


def test_a_result_placed_first_names_its_file_first(tmp_path: Path) -> None:
    """A plugin failure, known at the end of the run, is reported first, as in the list."""
    results = _run(tmp_path)
    failure = FileResult("pyproject.toml", None, [_finding(None, 1, code="TL998")])
    report = Report()
    for index, result in enumerate(results):
        report.add(result, (1, index, 0))
    report.add(failure, (0, 0, 0))
    assert list(report.entries()) == file_entries([failure, *results])


def test_a_file_spelled_differently_by_a_result_placed_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report keeps a file's first spelling and the spelling of the result that is the file apart
    (the latter sparsely, only where they differ): a plugin failure placed first that names a checked
    file by another spelling changes the first, not the name the entry shows; a file checked under
    two spellings counts twice in the summary, as the list form counts it."""
    monkeypatch.chdir(tmp_path)
    absolute = str(tmp_path / "x.json")
    results = [
        FileResult("x.json", "deepspeed", [_finding(None, 2)]),
        FileResult("./x.json", "deepspeed", [_finding(None, 4)]),
        FileResult("y.json", "deepspeed", []),
    ]
    failure = FileResult("pyproject.toml", None, [_finding(absolute, 1, code="TL998"), _finding("y.json", 3)])
    report = Report(SpoolStore(max_size=0))
    for index, result in enumerate(results):
        report.add(result, (1, index, 0))
    report.add(failure, (0, 0, 0))
    expected = file_entries([failure, *results])
    entries = list(report.entries())
    assert entries == expected
    assert [e.path for e in entries] == ["pyproject.toml", "x.json", "y.json"]
    assert sorted(d.line for d in entries[1].diagnostics) == [1, 2, 4]  # the three results' findings, one entry
    assert "in 4 files" in report.summary_line()  # pyproject.toml, x.json twice (two spellings), y.json
    report.close()


def test_the_report_keeps_no_result(tmp_path: Path) -> None:
    """Neither a result nor its findings outlive ``add``: what the report keeps is its own record."""
    report = Report(SpoolStore())
    refs = []
    for result in _run(tmp_path):
        refs.append(weakref.ref(result))
        refs += [weakref.ref(d) for d in result.diagnostics]
        report.add(result)
        del result
    gc.collect()
    assert not [r for r in refs if r() is not None]
    assert len(list(report.entries())) == 5
    report.close()


def _tree(root: Path, copies: int) -> Path:
    """Launch scripts sourcing one argument file, DeepSpeed JSON, and a file that is no config."""
    for copy in range(copies):
        folder = root / f"copy{copy}"
        (folder / "conf").mkdir(parents=True)
        (folder / "conf" / "args.sh").write_text(
            "GPT_ARGS=\"--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048\"\n"
            "if [ \"$MODE\" = big ]; then GPT_ARGS=\"$GPT_ARGS --num-layers 48\"; fi\n")
        for name in ("a", "b"):
            (folder / f"train_{name}.sh").write_text(
                "source $(dirname $0)/conf/args.sh\n"
                f"torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS --micro-batch-size 4 "
                f"--global-batch-size {'256' if name == 'a' else '100'} --tensor-model-parallel-size 3 --lr 1e-4\n")
        (folder / "ds.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True},
                                                    "fp16": {"enabled": True}}))
        (folder / "notes.yaml").write_text("title: not a config\n")
    return root


@pytest.mark.parametrize("fmt", ["json", "full", "sarif", "github", "markdown"])
def test_check_reports_what_the_list_of_results_gives(tmp_path: Path, capsys, fmt: str) -> None:
    """``check`` (streamed) prints what rendering the whole list of linted results prints."""
    from argparse import Namespace

    from trainlint.commands.check import render_results
    from trainlint.project.session import SessionOptions, open_session

    root = _tree(tmp_path / "tree", 3)
    assert main(["check", "--isolated", "--exit-zero", "--format", fmt, "--color", "never", "--jobs", "1",
                 str(root)]) == 0
    streamed = capsys.readouterr().out
    session = open_session(SessionOptions(isolated=True), root)
    session.settings.write_fixes = True
    linted = session.lint(session.check_paths([str(root)]))
    assert any(r.format is None for r in linted) and any(d.path and d.path != r.path for r in linted
                                                          for d in r.diagnostics)
    args = Namespace(format=fmt, color="never", fix=False, unsafe_fixes=False)
    assert streamed == render_results(linted, args, session)


def test_a_comment_used_by_a_later_script_is_not_unused(tmp_path: Path) -> None:
    """A suppression comment in a file, used only by a script read after the file itself, is not
    unused: TL020 is judged at the end of the run, from what every result used."""
    from trainlint.project.unused_suppressions import UnusedSuppressions, report_unused

    args = tmp_path / "args.sh"
    args.write_text("if [ \"$MODE\" = big ]; then X=1; fi  # trainlint: disable=TL012\n")
    alone = FileResult(str(args), "megatron")
    later = FileResult(str(tmp_path / "z.sh"), "megatron",
                       used_suppressions=frozenset({("inline", str(args), 1, "TL012")}))
    for results, unused in (([alone], ["TL020"]), ([alone, later], [])):
        tracker = UnusedSuppressions()
        for index, result in enumerate(results):
            tracker.add(result, index)
        found = [d.code for _, _, diagnostics in tracker.inline_findings() for d in diagnostics]
        assert found == unused
        assert [d.code for d in report_unused(results)[0].diagnostics] == unused


def test_a_baseline_matches_per_file_as_over_the_list(tmp_path: Path, capsys) -> None:
    """--write-baseline then --baseline: nothing new; after a new finding, only it, and the counts."""
    root = _tree(tmp_path / "tree", 2)
    baseline = str(tmp_path / "baseline.json")
    assert main(["check", "--isolated", "--write-baseline", baseline, "--format", "json", str(root)]) == 0
    written = capsys.readouterr()
    assert json.loads(written.out)["files"] and "Wrote" in written.err
    recorded = len(json.loads(Path(baseline).read_text())["findings"])
    assert recorded > 4
    assert main(["check", "--isolated", "--baseline", baseline, "--format", "json", "--jobs", "1", str(root)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not any(f["diagnostics"] for f in report["files"])
    assert report["baseline"]["suppressed"] == recorded and report["baseline"]["stale"] == 0
    (root / "copy1" / "ds.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 4}))
    os.remove(root / "copy0" / "train_b.sh")
    main(["check", "--isolated", "--baseline", baseline, "--format", "json", "--exit-zero", "--jobs", "1", str(root)])
    report = json.loads(capsys.readouterr().out)
    assert report["baseline"]["stale"] > 0
    assert report["baseline"]["suppressed"] + report["baseline"]["stale"] <= recorded


def test_without_a_temporary_file_the_findings_stay_in_memory(tmp_path: Path, monkeypatch) -> None:
    """A read-only or full temporary folder costs memory, never the report."""
    import tempfile

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    results = _run(tmp_path)
    report = Report(SpoolStore(max_size=0))
    for result in results:
        report.add(result)
    assert report.store.file.disk is None and report.store.file.memory is not None
    assert list(report.entries()) == file_entries(results)


def test_forgetting_folders_changes_no_report(tmp_path: Path, capsys, monkeypatch) -> None:
    """The framework-target memos start again every MEMO_FOLDERS folders (flat memory over a large
    tree): the report is the same as with everything remembered."""
    from trainlint.frameworks import locate

    root = _tree(tmp_path / "tree", 3)
    command = ["check", "--isolated", "--exit-zero", "--format", "json", "--jobs", "1", str(root)]
    locate.clear_caches()
    main(command)
    remembered = capsys.readouterr().out
    monkeypatch.setattr(locate, "MEMO_FOLDERS", 2)
    locate.clear_caches()
    main(command)
    assert capsys.readouterr().out == remembered
    assert len(locate._memo) <= 2 and len(locate._git_roots) <= 2 and len(locate._beside) <= 2
