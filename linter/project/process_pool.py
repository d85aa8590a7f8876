"""Checking many files on several processes.

Reading a config and running the rules on it is pure Python and independent of every other
file, so a directory of configs is split over worker processes, one per usable CPU, as ruff
and pylint ``-j`` do. A worker reads, lints and filters its files exactly as the serial path
does, and sends back only what the report needs (path, format, diagnostics, run members):
specs and parsed documents stay in the worker. Results come back in the serial order, so the
output is byte-for-byte the same with any number of jobs.

Workers are forked, so they start with the parent's plugins, settings and imported modules at
no cost. The parent checks the first chunk itself before it forks them: the rule, adapter and
catalog modules that chunk imports and the memos it fills are then the workers' too, shared
copy-on-write, instead of each worker importing and filling them again (that was ~0.5 G
instructions a worker, issue 33). The objects alive at the fork are frozen out of the collector
(``gc.freeze``) in the parent while it forks, so a worker's collections neither walk nor copy
the pages it inherited; the parent unfreezes its own once the workers exist. From then on the
parent only reports (a parent that also checked files grew its peak memory with both).

Where ``fork`` is not available (Windows) or not worth it (a few files), checking stays serial.
A worker that dies (killed, out of memory) does not hang the run: the files it had are checked
again in the parent.

(Counting the instructions of a forked run with callgrind: a forked child starts with the
counters of its parent, so the per-process totals count the parent's work before the fork once
more per worker; ``--dump-before='*fork'`` zeroes them at the fork, and the sum of the dumps is
the run's own count.)
"""

from __future__ import annotations

import os
from dataclasses import replace
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

from trainlint.core import interrupt
from trainlint.files.checker import FileTask
from trainlint.core.results import FileResult

MIN_FILES_PER_WORKER = 24
"""Below this many files per extra worker, forking and sending results back costs more than
it saves (measured: one file checks in ~2 ms, a fork and its first results ~15 ms)."""
CHUNK = 8
"""Files per message to a worker: small enough to balance slow Megatron scripts against fast
JSON files, large enough that the messages cost little."""

_T = TypeVar("_T")

# The work function of the current run, set in the parent before the fork: forked workers
# inherit it (a closure over the session, which holds plugins and cannot be pickled).
_WORK: Callable[[Sequence[Any]], list[FileResult]] | None = None


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

    return replace(result, specs=[], documents=[], target=target_of(result), comments=_comments(result))


def _comments(result: FileResult) -> tuple:
    """The suppression comments of each file of ``result`` that has any, parsed while its text is at
    hand (the unused-suppression report reads them in the parent: without them there, it would read
    every file a second time)."""
    if result.format is None:
        return ()
    from trainlint.project.engine import suppressions_of

    cache: dict = {}
    found = ((path, suppressions_of(path, result, cache)) for path in result.run or [result.path])
    return tuple((path, comments) for path, comments in found if comments.directives)


def run_tasks(tasks: Sequence[FileTask], work: Callable[[Sequence[FileTask]], list[FileResult]],
              jobs: int | None, on_chunk: Callable[[int], None] | None = None, *,
              streamed: bool = False) -> list[FileResult]:
    """``work`` over ``tasks`` (on chunks of them), in order, on up to ``jobs`` processes.
    ``work`` must return one result per task of its chunk. ``on_chunk(n)``: called in this process
    as a worker's chunk of ``n`` tasks comes back (progress); not called when no process is forked.
    ``streamed``: the caller needs only what a report needs (:func:`lean`), so the serial path too
    works chunk by chunk and keeps no file's specs and documents past its chunk (as with workers);
    otherwise the serial path returns ``work``'s full results. (:func:`iter_results` gives them one
    at a time.)"""
    if not streamed and workers_for(len(tasks), jobs) <= 1:
        return work(tasks)
    return list(iter_results(tasks, work, jobs, on_chunk))


def iter_results(tasks: Iterable[_T], work: Callable[[Sequence[_T]], list[FileResult]],
                 jobs: int | None, on_chunk: Callable[[int], None] | None = None, *,
                 count: int | None = None) -> Iterator[FileResult]:
    """What a report needs of ``work``'s result for each task (:func:`lean`), one at a time and in
    order, as :func:`run_tasks` with ``streamed``: the caller keeps what it needs of each and
    nothing more, so neither this process nor a worker holds more than a few chunks of results.
    ``tasks`` may be an iterator (read a chunk at a time, as the workers need them; then ``count``
    says how many it gives, which decides how many workers are worth forking)."""
    workers = workers_for(count if count is not None else len(tasks), jobs)  # type: ignore[arg-type]
    chunks = _chunks(iter(tasks))
    if workers <= 1:
        for chunk in chunks:
            for result in work(chunk):
                yield lean(result)
        return
    first = next(chunks, None)
    if first is None:
        return
    # the first chunk here, before the fork: what it imports and warms, every worker inherits
    yield from (lean(r) for r in work(first))
    global _WORK
    _WORK = work
    try:
        yield from _iter_forked(chunks, work, workers, on_chunk)
    finally:
        _WORK = None


def _chunks(tasks: Iterator[_T]) -> Iterator[list[_T]]:
    while chunk := list(islice(tasks, CHUNK)):
        # a safe point of the serial and the forked path: a Ctrl-C that Python dropped stops here
        interrupt.stop_if_received()
        yield chunk


AHEAD = 4
"""Chunks per worker sent ahead of the one the report waits for: enough to keep every worker busy,
few enough that the results waiting to be reported (and the tasks waiting to be sent) stay a
handful of chunks, whatever the number of files."""


def _iter_forked(chunks: Iterator[Sequence[_T]], work: Callable[[Sequence[_T]], list[FileResult]],
                 workers: int, on_chunk: Callable[[int], None] | None = None) -> Iterator[FileResult]:
    """The lean results of every chunk in order, as the workers send them back; a chunk whose
    worker failed (died, or sent what cannot be pickled) is checked again here."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_ignore_sigint)
    except (OSError, BrokenProcessPool):  # pragma: no cover - cannot make the pool's queues
        for chunk in chunks:
            yield from (lean(r) for r in work(chunk))
        return
    pending: deque = deque()  # (chunk, its future, or None once the pool is broken)
    broken = False
    finished = False
    forked = False

    def send() -> None:
        nonlocal broken, forked
        while len(pending) < workers * AHEAD:
            chunk = next(chunks, None)
            if chunk is None:
                return
            future = None
            if not broken:
                try:
                    if forked:
                        future = _submit_without_sigint(pool, chunk)
                    else:
                        future = _first_submit(pool, chunk)  # forks the workers
                        forked = True
                except (OSError, RuntimeError, BrokenProcessPool):  # cannot fork (process limit), or a worker died
                    broken = True
            pending.append((chunk, future))

    try:
        send()
        while pending:
            chunk, future = pending.popleft()
            done: list[FileResult] | None = None
            if future is not None and not broken:
                try:
                    done = future.result()
                    if on_chunk is not None:
                        on_chunk(len(chunk))
                except BrokenProcessPool:
                    broken = True  # a worker died: this chunk and the rest are checked here
                except Exception:  # noqa: BLE001 - e.g. a plugin's finding that cannot be pickled: redone here
                    pass
            future = None  # its results are the caller's now
            send()
            yield from (done if done is not None else (lean(r) for r in work(chunk)))
        finished = True
    except KeyboardInterrupt:
        # Ctrl-C: the workers ignore it (no traceback from each); stop them, and let the CLI end with 130
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()
        raise
    finally:
        # wait=True: the executor's manager thread sees ended workers and closes its wake-up pipe
        # itself (with wait=False the interpreter's exit hook later writes to the closed pipe and
        # prints an OSError traceback after a quiet 130). A caller that stopped early (an error)
        # cancels the chunks not started.
        try:
            pool.shutdown(wait=True, cancel_futures=not finished)
        except (OSError, BrokenProcessPool):
            pass


def _first_submit(pool: Any, chunk: Sequence[Any]) -> Any:
    """The first ``pool.submit``, which forks every worker (``fork`` start method: the pool starts all
    of them at once), with the objects alive now frozen out of the collector: a worker's collections
    then never walk (and so never copy) the pages it shares with this process. This process
    unfreezes its own right after: its objects are collected as before."""
    import gc

    gc.freeze()
    try:
        return _submit_without_sigint(pool, chunk)
    finally:
        gc.unfreeze()


def _submit_without_sigint(pool: Any, chunk: Sequence[Any]) -> Any:
    """``pool.submit`` with SIGINT held back until it returns. The first submit forks the workers, and a
    Ctrl-C that lands inside the fork is raised in an at-fork handler (logging's), where Python prints
    "Exception ignored" and drops it: the check would carry on and end 0. Held back, it is delivered
    when the submit returns, where the caller stops the workers and the CLI ends with 130. The workers
    inherit the mask and unblock it once they ignore SIGINT (:func:`_ignore_sigint`)."""
    import signal

    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return pool.submit(_work_in_child, chunk)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _ignore_sigint() -> None:
    """In a worker: Ctrl-C goes to the whole process group; the parent alone handles it. A worker is
    forked with SIGINT blocked (:func:`_submit_without_sigint`); one held back is dropped here."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _work_in_child(chunk: Sequence[Any]) -> list[FileResult]:
    assert _WORK is not None, "the work function is set before the workers are forked"
    return [lean(r) for r in _WORK(chunk)]
