"""Checking many files on several processes.

Reading a config and running the rules on it is pure Python and independent of every other
file, so a directory of configs is split over worker processes, one per usable CPU, as ruff
and pylint ``-j`` do. A worker reads, lints and filters its files exactly as the serial path
does, and sends back only what the report needs (path, format, diagnostics, run members):
specs and parsed documents stay in the worker. Results come back in the serial order, so the
output is byte-for-byte the same with any number of jobs.

Workers are forked, so they start with the parent's plugins, settings and imported modules at
no cost. Where ``fork`` is not available (Windows) or not worth it (a few files), checking
stays serial. A worker that dies (killed, out of memory) does not hang the run: the files it
had are checked again in the parent.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable, Sequence, TypeVar

from trainlint.checker import FileTask
from trainlint.results import FileResult

MIN_FILES_PER_WORKER = 24
"""Below this many files per extra worker, forking and sending results back costs more than
it saves (measured: one file checks in ~2 ms, a fork and its first results ~15 ms)."""
CHUNK = 8
"""Files per message to a worker: small enough to balance slow Megatron scripts against fast
JSON files, large enough that the messages cost little."""

_T = TypeVar("_T")

# The work function of the current run, set in the parent before the fork: forked workers
# inherit it (a closure over the session, which holds plugins and cannot be pickled).
_WORK: Callable[[Sequence[FileTask]], list[FileResult]] | None = None


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def workers_for(files: int, jobs: int | None) -> int:
    """How many processes to use for ``files`` files: ``jobs`` (None or 0: one per usable CPU),
    fewer when there are not enough files to keep them busy; 1 means serial."""
    wanted = jobs if jobs and jobs > 0 else usable_cpus()
    workers = min(wanted, files // MIN_FILES_PER_WORKER)
    if workers <= 1 or not _can_fork():  # checked last: it imports multiprocessing
        return 1
    return workers


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def lean(result: FileResult) -> FileResult:
    """What a report needs of a linted result (specs and documents are big and not needed)."""
    from trainlint.frameworks.target import target_of

    return replace(result, specs=[], documents=[], target=target_of(result))


def run_tasks(tasks: Sequence[FileTask], work: Callable[[Sequence[FileTask]], list[FileResult]],
              jobs: int | None, on_chunk: Callable[[int], None] | None = None, *,
              streamed: bool = False) -> list[FileResult]:
    """``work`` over ``tasks`` (on chunks of them), in order, on up to ``jobs`` processes.
    ``work`` must return one result per task of its chunk. ``on_chunk(n)``: called in this process
    as a worker's chunk of ``n`` tasks comes back (progress); not called when no process is forked.
    ``streamed``: the caller needs only what a report needs (:func:`lean`), so the serial path too
    works chunk by chunk and keeps no file's specs and documents past its chunk (memory flat in the
    number of files, as with workers); otherwise the serial path returns ``work``'s full results."""
    workers = workers_for(len(tasks), jobs)
    chunks = [tasks[i:i + CHUNK] for i in range(0, len(tasks), CHUNK)]
    if workers <= 1:
        if not streamed:
            return work(tasks)
        return [lean(result) for chunk in chunks for result in work(chunk)]
    global _WORK
    _WORK = work
    try:
        return _run_forked(chunks, work, workers, on_chunk)
    finally:
        _WORK = None


def _run_forked(chunks: list[Sequence[FileTask]], work: Callable[[Sequence[FileTask]], list[FileResult]],
                workers: int, on_chunk: Callable[[int], None] | None = None) -> list[FileResult]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    results: list[list[FileResult] | None] = [None] * len(chunks)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_ignore_sigint) as pool:
            futures = [pool.submit(_work_in_child, chunk) for chunk in chunks]
            try:
                for index, future in enumerate(futures):
                    try:
                        results[index] = future.result()
                        if on_chunk is not None:
                            on_chunk(len(chunks[index]))
                    except BrokenProcessPool:
                        break  # a worker died: the rest are redone below
                    except Exception:  # noqa: BLE001 - e.g. a plugin's finding that cannot be pickled: redone below
                        continue
            except KeyboardInterrupt:
                # Ctrl-C: the workers ignore it (no traceback from each); stop them, and let the
                # CLI end with 130
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.terminate()
                # wait=True: the executor's manager thread sees the terminated workers and closes its
                # wake-up pipe itself; with wait=False the interpreter's exit hook later writes to the
                # closed pipe and prints an OSError traceback after the quiet 130.
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    except (OSError, BrokenProcessPool):  # cannot fork (process limit), or the pool broke on shutdown
        pass
    out: list[FileResult] = []
    for index, chunk in enumerate(chunks):
        done = results[index]
        out.extend(done if done is not None else work(chunk))
    return out


def _ignore_sigint() -> None:
    """In a worker: Ctrl-C goes to the whole process group; the parent alone handles it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _work_in_child(chunk: Sequence[FileTask]) -> list[FileResult]:
    assert _WORK is not None, "the work function is set before the workers are forked"
    return [lean(r) for r in _WORK(chunk)]
