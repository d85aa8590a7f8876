"""Checking on several processes gives the same report as checking on one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.project import process_pool
from trainlint.files.checker import FileTask, check_task, plan_files
from trainlint.core.results import FileResult
from trainlint.adapters import builtin_adapters
from trainlint.cli import main

from conftest import CORPUS, REPO

pytestmark = pytest.mark.skipif(not process_pool._can_fork(), reason="needs the fork start method")


@pytest.fixture(scope="module")
def many_configs(tmp_path_factory) -> Path:
    """~120 configs: the examples several times over, and corpus files when present."""
    root = tmp_path_factory.mktemp("many")
    for copy in range(12):
        shutil.copytree(REPO / "examples", root / f"examples_{copy}")
    if CORPUS.is_dir():
        for index, path in enumerate(sorted(p for p in CORPUS.rglob("*") if p.is_file())[:60]):
            shutil.copyfile(path, root / f"corpus_{index:03d}_{path.name}")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_report_is_the_same_with_any_number_of_jobs(many_configs, fmt):
    def report(jobs: str) -> tuple[int, str]:
        done = subprocess.run([sys.executable, "-m", "trainlint", "check", "--isolated", "--format", fmt,
                               "--jobs", jobs, str(many_configs)], capture_output=True, text=True, timeout=300)
        return done.returncode, done.stdout

    serial = report("1")
    assert serial[0] in (0, 1) and serial[1]
    assert report("2") == serial
    assert report("3") == serial


def test_workers_for_keeps_small_runs_serial(monkeypatch):
    monkeypatch.setattr(process_pool, "usable_cpus", lambda: 8)
    assert process_pool.workers_for(10, None) == 1
    assert process_pool.workers_for(10, 4) == 1
    assert process_pool.workers_for(process_pool.MIN_FILES_PER_WORKER * 2, None) == 2
    assert process_pool.workers_for(10_000, None) == 8
    assert process_pool.workers_for(10_000, 3) == 3
    assert process_pool.workers_for(10_000, 1) == 1


def _tasks(root: Path) -> list[FileTask]:
    tasks = plan_files([str(root)], builtin_adapters())
    assert len(tasks) >= 2 * process_pool.MIN_FILES_PER_WORKER
    return tasks


def test_a_worker_that_dies_does_not_lose_files(many_configs):
    """A worker killed mid-run (out of memory, a signal): its files are checked in the parent."""
    parent = os.getpid()
    adapters = builtin_adapters()
    tasks = _tasks(many_configs)
    victim = tasks[len(tasks) // 2].path

    def work(chunk):
        if os.getpid() != parent and any(t.path == victim for t in chunk):
            os._exit(9)
        return [check_task(t, adapters) for t in chunk]

    results = process_pool.run_tasks(tasks, work, 2)
    assert [r.path for r in results] == [t.path for t in tasks]
    assert all(isinstance(r, FileResult) for r in results)


def test_a_result_that_cannot_be_sent_back_is_redone_in_the_parent(many_configs):
    parent = os.getpid()
    adapters = builtin_adapters()
    tasks = _tasks(many_configs)

    def work(chunk):
        results = [check_task(t, adapters) for t in chunk]
        if os.getpid() != parent:
            results[0].diagnostics.append(lambda: None)  # not picklable
        return results

    results = process_pool.run_tasks(tasks, work, 2)
    assert [r.path for r in results] == [t.path for t in tasks]
    assert not any(callable(d) for r in results for d in r.diagnostics)


def test_the_parent_checks_the_first_chunk_and_the_workers_inherit_what_it_warmed(many_configs, monkeypatch):
    """Issue 33: the workers are forked after the parent checked the first chunk, so what that chunk
    imported and memoised is theirs without importing it again; the parent's own objects stay
    collectable (frozen only while it forks)."""
    import gc

    parent = os.getpid()
    adapters = builtin_adapters()
    tasks = _tasks(many_configs)
    warmed: dict[str, int] = {}

    def work(chunk):
        if os.getpid() == parent and not warmed:
            warmed["value"] = len(chunk)  # a memo filled by the first chunk
        return [(os.getpid(), warmed.get("value"), check_task(t, adapters).path) for t in chunk]

    frozen_before = gc.get_freeze_count()
    monkeypatch.setattr(process_pool, "lean", lambda result: result)  # work gives (pid, memo, path)
    done = list(process_pool.iter_results(tasks, work, 2, count=len(tasks)))
    assert [path for _, _, path in done] == [t.path for t in tasks]
    first = done[:process_pool.CHUNK]
    assert {pid for pid, _, _ in first} == {parent}
    rest = done[process_pool.CHUNK:]
    assert rest and all(pid != parent for pid, _, _ in rest)
    assert all(value == process_pool.CHUNK for _, value, _ in rest)  # inherited, not filled again
    assert gc.get_freeze_count() == frozen_before


@pytest.mark.parametrize("bad", ["-1", "two"])
def test_jobs_must_be_a_count(bad, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["check", "--jobs", bad, str(REPO / "examples")])
    assert stop.value.code == 2
    assert "--jobs" in capsys.readouterr().err


def test_a_streamed_serial_run_keeps_no_specs_past_a_chunk(many_configs):
    """--jobs 1 (issue 33): the serial path reduces each chunk's results to what the report needs as
    the chunk finishes (memory flat in the number of files), and asks ``work`` for a chunk at a time."""
    adapters = builtin_adapters()
    tasks = _tasks(many_configs)
    sizes: list[int] = []

    def work(chunk):
        sizes.append(len(chunk))
        return [check_task(t, adapters) for t in chunk]

    streamed = process_pool.run_tasks(tasks, work, 1, streamed=True)
    assert max(sizes) <= process_pool.CHUNK and sum(sizes) == len(tasks)
    assert [r.path for r in streamed] == [t.path for t in tasks]
    assert not any(r.specs or r.documents for r in streamed)
    assert any(r.target for r in streamed)  # what the report says of the target is kept
    sizes.clear()
    full = process_pool.run_tasks(tasks, work, 1)
    assert sizes == [len(tasks)] and any(r.specs for r in full)
    assert [r.diagnostics for r in full] == [r.diagnostics for r in streamed]


CTRL_C_IN_FORK = """
import os, signal, sys
from trainlint.project import process_pool

def work(chunk):
    return []

# A Ctrl-C that lands as the pool forks its workers: raised in an at-fork handler, Python drops it
# ("Exception ignored") unless SIGINT is held back around the fork.
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))
try:
    for _ in process_pool.iter_results(list(range(100)), work, 2, count=100):
        pass
except KeyboardInterrupt:
    print("interrupted")
    sys.exit(130)
print("carried on")
"""


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="no fork here")
def test_ctrl_c_while_the_workers_are_forked_stops_the_check():
    # in a child process: an at-fork handler cannot be removed once registered
    done = subprocess.run([sys.executable, "-c", CTRL_C_IN_FORK], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (130, "interrupted"), done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr


def test_a_lean_result_keeps_its_files_suppression_comments(tmp_path):
    """What the unused-suppression report needs of a file is parsed while the file's text is at hand
    (``lean``), so the parent reads no file again; a file without a comment costs nothing."""
    from trainlint.core.document import Document

    text = "train_micro_batch_size_per_gpu: 4  # trainlint: disable=TL101\n"
    a, b = str(tmp_path / "a.yml"), str(tmp_path / "b.yml")
    with_comment = FileResult(a, "neox", documents=[Document(a, "neox", text, {})], run=[a, b])
    lean = process_pool.lean(with_comment)
    assert not lean.documents
    assert [path for path, _ in lean.comments] == [a]  # b.yml: no document, no file, no comment
    assert [d.codes for d in lean.comments[0][1].directives] == [("TL101",)]
    plain = FileResult("c.yml", "neox", documents=[Document("c.yml", "neox", "a: 1\n", {})])
    assert process_pool.lean(plain).comments == ()
    assert process_pool.lean(FileResult("d.txt", None)).comments == ()
