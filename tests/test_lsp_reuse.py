"""The language server keeps the rules' findings on each run and gives them again while the run
is the same (LintSettings.reuse_findings): never for a run that changed, by value or by place."""

from __future__ import annotations

import re
from pathlib import Path

import trainlint.project.engine as engine
from trainlint.lsp.workspace import Linter

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _fresh(path: str, text: str) -> dict:
    """What a new server (nothing kept) publishes for ``text``."""
    return Linter().lint(path, text, 1).by_path


def _count_rule_runs(monkeypatch) -> list[int]:
    runs = [0]
    real = engine._run_rules_unlimited

    def counted(*args, **kwargs):
        runs[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "_run_rules_unlimited", counted)
    return runs


def test_an_edit_that_changes_a_value_changes_the_diagnostics(tmp_path: Path, monkeypatch):
    text = (EXAMPLES / "megatron_llama2_70b_oom.sh").read_text(encoding="utf-8")
    path = str(tmp_path / "train.sh")
    linter = Linter()
    first = linter.lint(path, text, 1).by_path
    assert any(d.code == "TL201" for d in first[path])  # the example's OOM: an estimate-based finding

    runs = _count_rule_runs(monkeypatch)
    # a line break at the end: every run the same, value and place; the findings are reused
    assert linter.lint(path, text + "\n", 2).by_path == first
    assert runs[0] == 0

    # fewer layers: the estimate and every finding that quotes it change
    fewer = re.sub(r"--num-layers(\s+|=)80\b", r"--num-layers\g<1>8", text)
    assert fewer != text
    edited = linter.lint(path, fewer, 3).by_path
    assert runs[0] > 0
    assert edited == _fresh(path, fewer)
    assert edited != first

    # and back: the same findings as the first time, made again for the run as it is now
    assert linter.lint(path, text, 4).by_path == first


def test_a_run_that_moved_gets_its_findings_at_the_new_place(tmp_path: Path):
    text = (EXAMPLES / "megatron_llama2_70b_oom.sh").read_text(encoding="utf-8")
    path = str(tmp_path / "train.sh")
    linter = Linter()
    before = linter.lint(path, text, 1).by_path
    # blanks before the values of one line: the same values, the same launch line, some columns further
    moved = text.replace("    --micro-batch-size 4 --global-batch-size 1024",
                         "    --micro-batch-size   4   --global-batch-size   1024")
    assert moved != text
    after = linter.lint(path, moved, 2).by_path
    assert after == _fresh(path, moved)
    assert {d.span for d in after[path]} != {d.span for d in before[path]}


def test_a_session_that_names_a_model_reads_it_on_every_lint(tmp_path: Path, monkeypatch):
    """A named model may be a config.json on disk that every estimate reads again: nothing is kept."""
    text = (EXAMPLES / "deepspeed_zero3_offload.json").read_text(encoding="utf-8")
    path = str(tmp_path / "ds_config.json")
    linter = Linter({"model": "llama2-7b"})
    linter.lint(path, text, 1)
    runs = _count_rule_runs(monkeypatch)
    linter.lint(path, text + "\n", 2)
    assert runs[0] == 1
    plain = Linter()
    plain.lint(path, text, 1)
    assert runs[0] == 2
    plain.lint(path, text + "\n", 2)
    assert runs[0] == 2  # the default session keeps them


def test_forget_memoised_empties_the_kept_findings_and_layout_searches(tmp_path: Path, monkeypatch):
    """What benchmarks/lsp_relint.py's after-a-value-edit figure relies on."""
    text = (EXAMPLES / "megatron_gpt_2.7b_network_bound.sh").read_text(encoding="utf-8")
    path = str(tmp_path / "train.sh")
    linter = Linter()
    first = linter.lint(path, text, 1)
    settings = first.session.settings
    assert settings.findings and settings.layout_advice.made.found  # TL301 asked for the best layout
    linter.forget_memoised()
    assert not settings.findings and not settings.layout_advice.made.found
    runs = _count_rule_runs(monkeypatch)
    assert linter.lint(path, text, 2).by_path == first.by_path
    assert runs[0] == 1
