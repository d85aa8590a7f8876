"""Every benchmark exits non-zero on an internal error (issue 33): a figure measured over files
trainlint failed on times an error path. Each cheap benchmark is run here with trainlint made to
fail on every file (its format detection raises: a TL999 on each file, in this process through
monkeypatch, in a child process through a ``sitecustomize`` on PYTHONPATH) and must exit 2 and say
why; where it is cheap, the same run without the failure is shown to exit 0 or 1, so that the exit 2
is the internal error's doing."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO

BENCHMARKS = REPO / "benchmarks"
EXAMPLE = REPO / "examples" / "deepspeed_zero3_offload.json"


@pytest.fixture(scope="module", autouse=True)
def _on_path():
    sys.path.insert(0, str(BENCHMARKS))
    yield
    sys.path.remove(str(BENCHMARKS))


def bench(name: str):
    return importlib.import_module(name)


def _fail_detection(monkeypatch) -> None:
    import trainlint.files.checker as checker

    def broken(*_args, **_kwargs):
        raise RuntimeError("injected by tests/test_benchmarks.py")

    monkeypatch.setattr(checker, "detect", broken)


@pytest.fixture
def failing(monkeypatch):
    _fail_detection(monkeypatch)


@pytest.fixture
def failing_children(tmp_path, monkeypatch) -> None:
    """Child processes (``python -m trainlint``, the ``trainlint`` script) fail on every file too."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent("""
        import trainlint.files.checker as checker

        def broken(*_args, **_kwargs):
            raise RuntimeError("injected by tests/test_benchmarks.py")

        checker.detect = broken
    """))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A corpus of two configs in the shared corpus's layout (a repository folder, MANIFEST.tsv)."""
    root = tmp_path / "corpus"
    (root / "owner__repo").mkdir(parents=True)
    shutil.copyfile(EXAMPLE, root / "owner__repo" / "ds.json")
    shutil.copyfile(REPO / "examples" / "neox_1-3B.yml", root / "owner__repo" / "neox.yml")
    (root / "MANIFEST.tsv").write_text("path\tformat\nowner__repo/ds.json\tdeepspeed-json\n"
                                       "owner__repo/neox.yml\tneox-yaml\n")
    return root


def test_the_injection_is_a_tl999(failing):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_file

    assert [d.code for d in check_file(str(EXAMPLE), builtin_adapters()).diagnostics] == ["TL999"]


def test_corpus_report(corpus, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["corpus_report.py", "--corpus", str(corpus)])
    assert bench("corpus_report").main() == 0
    _fail_detection(monkeypatch)
    assert bench("corpus_report").main() == 2
    assert "internal errors (TL999) in 2 files" in capsys.readouterr().err


def test_corpus_estimates(corpus, monkeypatch, capsys):
    assert bench("corpus_estimates").main([str(corpus)]) == 0
    _fail_detection(monkeypatch)
    assert bench("corpus_estimates").main([str(corpus), "--json"]) == 2
    assert "internal errors" in capsys.readouterr().err


def test_estimate_coverage(corpus, monkeypatch, capsys):
    assert bench("estimate_coverage").main([str(corpus)]) == 0
    _fail_detection(monkeypatch)
    assert bench("estimate_coverage").main([str(corpus)]) == 2
    assert "TL999" in capsys.readouterr().err


def test_estimate_speed_does_not_time_a_failing_estimate(monkeypatch, capsys):
    module = bench("estimate_speed")
    from trainlint.estimator import InvariantError

    def broken(*_args, **_kwargs):
        raise InvariantError("injected")

    monkeypatch.setattr(module, "estimate", broken)
    assert module.main() == 2
    assert "broke an invariant" in capsys.readouterr().err


def test_fix_positions(corpus, failing, capsys):
    assert bench("fix_positions").main([str(corpus), "--skip-copy"]) == 2
    assert "internal errors (TL999)" in capsys.readouterr().err


def test_accuracy_reading(tmp_path, failing):
    module = bench("accuracy")
    with pytest.raises(module.InternalError, match="TL999"):
        module.read_case([str(EXAMPLE), "--isolated", "--gpu", "h100-sxm"])


def test_corpus_findings(corpus, failing_children, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["corpus_findings.py", "--corpus", str(corpus)])
    with pytest.raises(SystemExit) as stop:
        bench("corpus_findings").main()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "trainlint exited 2" in err or "internal error (TL999) in 2 files" in err


def test_rejection_recall(failing_children, capsys):
    with pytest.raises(SystemExit) as stop:
        bench("rejection_recall").main(["--framework", "deepspeed"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "trainlint exited 2" in err or "internal error (TL999)" in err


def test_check_speed(corpus, failing_children, capsys):
    """The cold start's one file is checked first: a TL999 there ends the benchmark before any timing."""
    code = bench("check_speed").main(["--file", str(EXAMPLE), "--corpus", str(corpus), "--files", "2",
                                      "--repeat", "1", "--throughput-runs", "1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "exit 2" in err or "TL999" in err


def test_check_speed_reads_the_report():
    """The report is summarised by a child Python (the benchmark never holds it: a child's peak memory
    would start from the benchmark's own), and what it finds ends the benchmark."""
    module = bench("check_speed")

    def printed(text: str):
        return module.run_measured([sys.executable, "-c", f"print({text!r})"], dict(os.environ), capture=True)

    report = {"files": [{"path": "a.json", "diagnostics": [{"code": "TL999"}]}]}
    with pytest.raises(module.InternalError, match=r"\(TL999\) on 1 files, e.g. a.json"):
        module.check_report(printed(json.dumps(report)), "check")
    with pytest.raises(module.InternalError, match="not a JSON report"):
        module.check_report(printed("Traceback (most recent call last):"), "check")
    with pytest.raises(module.InternalError, match="exit 2"):
        module.check_report(module.Run(1.0, 1.0, 10.0, 2, ""), "check")
    with pytest.raises(module.InternalError, match="exit -9"):
        module.check_report(module.Run(1.0, 1.0, 10.0, -9, ""), "check")  # a killed child
    clean = {"files": [{"path": "a", "diagnostics": []}, {"path": "b", "diagnostics": [{"code": "TL004"}]}]}
    assert module.check_report(printed(json.dumps(clean)), "check") == 2


@pytest.mark.slow
def test_suggest_speed(monkeypatch, capsys):
    module = bench("suggest_speed")

    def broken(*_args, **_kwargs):
        raise AttributeError("injected")

    monkeypatch.setattr(module, "search", broken)
    assert module.main(["--repeat", "1"]) == 2
    assert "internal error" in capsys.readouterr().err


@pytest.mark.slow
def test_lsp_relint_and_lsp_memory_say_an_internal_error(failing_children):
    """Without the lsp extra they exit 2 saying so; with it, the injected TL999 on the first buffer."""
    for script in ("lsp_relint.py", "lsp_memory.py"):
        done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--max-lines", "100000"]
                              if script == "lsp_relint.py" else [sys.executable, str(BENCHMARKS / script)],
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 2, (script, done.stderr[-2000:])
        assert "error" in done.stderr


def test_cross_format(failing, capsys):
    assert bench("cross_format").main(["-n", "1", "--core", "0"]) == 2
    assert "internal error" in capsys.readouterr().err
