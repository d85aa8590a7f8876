"""Which project config governs each file: the nearest one above the file itself, as ruff resolves
it, never the one of whichever path came first on the command line.

With explicit paths (pre-commit, a changed-files CI job) a run checks files of several folders at
once; a pull request adding ``aaa/.trainlint.toml`` with ``ignore = ["ALL"]`` must silence the
files of ``aaa/`` only, not every file of the commit. :func:`plan` opens one
:class:`~trainlint.project.session.Session` per distinct config (the same options, so the command line's
flags override each) and gives every file the session of its own config. ``--config FILE`` and
``--isolated`` keep one session for every file, as before.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.files.checker import FileTask
    from trainlint.project.session import Session, SessionOptions


@dataclass
class Plan:
    """Every task to check, in order, each with the session of its config.

    A plan is kept as its paths, not as a list of its files: :func:`plan` walks the paths once to
    open the session of every config that governs a file (a config error is a usage error before
    anything is checked), to count the files and to note the few met twice (a symlink, overlapping
    paths, a run's file); :meth:`items` walks them again as the check goes, so a check holds no
    list of its files (memory flat in the number of files, issue 33)."""

    runs: list[tuple[FileTask, Session]] = field(default_factory=list)
    """The runs (``--run``, then the governing configs' ``runs``), checked first."""
    first: Session | None = None
    """The session of the first path: it reports when no task has one (an empty folder)."""
    count: int = 0
    """How many tasks :meth:`items` gives."""
    governing: list[Session] = field(default_factory=list)
    """The sessions of the configs met, in the order they were met (a path's own too)."""
    owning: list[Session] = field(default_factory=list)
    """The distinct sessions of the tasks, in the order of their first task."""
    _walk: Callable[[Callable[[str, int], bool]], Iterator[tuple[str, FileTask, Session]]] | None = None
    _twice: set[int] = field(default_factory=set)
    """Hashes of the keys met more than once by the first walk (the others are not remembered)."""
    _twice_in_path: set[int] = field(default_factory=set)
    """Of those, the ones met twice under one path (skipped before their config is looked up)."""

    @property
    def sessions(self) -> list[Session]:
        """The distinct sessions, in the order they first govern a task (the first one when none does)."""
        if self.owning or self.first is None:
            return list(self.owning)
        return [self.first]

    def items(self) -> Iterator[tuple[FileTask, Session]]:
        """(task, its session) in check order, each file once (the first time it is met)."""
        yield from self.runs
        if self._walk is None:
            return
        from trainlint.files.checker import _key

        done: set[str] = {_key(p) for task, _ in self.runs for p in (task.path, *task.extra_paths)}
        in_path: set[str] = set()
        current = [-1]

        def new_in_path(key: str, index: int) -> bool:
            if hash(key) not in self._twice_in_path:
                return True
            if index != current[0]:
                current[0] = index
                in_path.clear()
            if key in in_path:
                return False
            in_path.add(key)
            return True

        for key, task, session in self._walk(new_in_path):
            if hash(key) in self._twice:
                if key in done:
                    continue
                done.add(key)
            yield task, session

    @property
    def tasks(self) -> list[FileTask]:
        """Every task as a list (a face that keeps every result anyway: ``estimate``, ``--fix``)."""
        return [task for task, _ in self.items()]

    @property
    def owners(self) -> list[Session]:
        """``owners[i]`` checks, lints and reports ``tasks[i]``."""
        return [session for _, session in self.items()]


class _Sessions:
    """One session per project config (None: no config above the file), opened on first use."""

    def __init__(self, options: SessionOptions, opener: Callable[[SessionOptions, Path], Session],
                 resolved: dict[str, str]) -> None:
        self.options = options
        self.opener = opener
        self.by_config: dict[str | None, Session] = {}
        self.config_of_folder: dict[str, str | None] = {}
        self.resolved = resolved
        """Each folder resolved once (``_key``'s memo, the plan's: a walk meets each folder for many files)."""

    def config_for(self, path: str) -> str | None:
        from trainlint.files.checker import _key
        from trainlint.files.config_files import find_config

        p = Path(path)
        folder = p if p.is_dir() else p.parent
        try:
            key = _key(str(folder), self.resolved)
        except (RuntimeError, ValueError):
            key = str(folder)
        if key not in self.config_of_folder:
            found = find_config(Path(key))
            self.config_of_folder[key] = str(found) if found is not None else None
        return self.config_of_folder[key]

    def session(self, config: str | None, start: str) -> Session:
        if config not in self.by_config:
            self.by_config[config] = self.opener(self.options, Path(config).parent if config else Path(start))
        return self.by_config[config]


def plan(options: SessionOptions, paths: Sequence[str], runs: Sequence[Sequence[str]],
         opener: Callable[[SessionOptions, Path], Session] | None = None) -> Plan:
    """The files under ``paths`` and the ``runs`` (``--run``), each with the session of the nearest
    project config above it; the runs of every config that governs a file are checked first, as a
    single project's are. Raises what :func:`trainlint.project.session.open_session` raises (a config error
    in any governing config is a usage error, exit 2)."""
    from trainlint.files.checker import FileTask, _key
    from trainlint.project.session import open_session

    opener = opener or open_session
    first = paths[0] if paths else runs[0][0] if runs else "."
    out = Plan()
    folders: dict[str, str] = {}  # each folder resolved once for the plan (a walk meets a folder per file)
    paths = list(paths)
    if options.config is not None or options.isolated:
        session = opener(options, Path(first))
        out.first = session
        out.governing.append(session)
        # one project: its runs and the --run ones, as Session.plan_files lists them
        out.runs = [(FileTask(run[0], tuple(run[1:])), session) for run in session.runs]

        def walk(new_in_path: Callable[[str, int], bool]) -> Iterator[tuple[str, FileTask, Session]]:
            # one walk over every path, as Session.plan_files lists them
            for task in _walked(paths, session.adapters):
                if new_in_path(key := _key(task.path, folders), 0):
                    yield key, task, session

        hashes, twice_in_path, walked_owners = _first_walk(walk)
    else:
        sessions = _Sessions(replace(options, runs=()), opener, folders)
        run_tasks: list[tuple[FileTask, Session]] = []

        def govern(path: str) -> Session:
            session = sessions.session(sessions.config_for(path), path)
            if not any(session is s for s in out.governing):
                out.governing.append(session)
                run_tasks.extend((FileTask(run[0], tuple(run[1:])), session) for run in session.project.runs)
            return session

        for run in runs:
            owner = govern(run[0])
            run_tasks.append((FileTask(run[0], tuple(run[1:])), owner))

        def walk(new_in_path: Callable[[str, int], bool]) -> Iterator[tuple[str, FileTask, Session]]:
            # each path walked on its own: a file met twice under one path is dropped before its
            # config is looked up, one met again under another path after (it governs as before)
            for index, path in enumerate(paths):
                walker = govern(path)
                for task in _walked([path], walker.adapters):
                    if new_in_path(key := _key(task.path, folders), index):
                        yield key, task, govern(task.path)

        hashes, twice_in_path, walked_owners = _first_walk(walk)  # governs every file: each config's runs are known after it
        if not out.governing:
            govern(first)
        out.first = out.governing[0]
        done: set[str] = set()
        for task, session in run_tasks:
            if _key(task.path, folders) in done:
                continue
            done.update(_key(p, folders) for p in (task.path, *task.extra_paths))
            out.runs.append((task, session))
    out._walk = walk
    out._twice_in_path = twice_in_path
    seen: set[int] = {hash(_key(p, folders)) for task, _ in out.runs for p in (task.path, *task.extra_paths)}
    for hashed in hashes:
        if hashed in seen:
            out._twice.add(hashed)
        seen.add(hashed)
    if out._twice:  # some files are met twice: which is checked is known by walking as the check will
        owners = [session for _, session in out.items()]
        out.count = len(owners)
    else:
        owners = [session for _, session in out.runs] + walked_owners
        out.count = len(out.runs) + len(hashes)
    for session in owners:
        if not any(session is s for s in out.owning):
            out.owning.append(session)
    return out


def _first_walk(walk: Callable[[Callable[[str, int], bool]], Iterator[tuple[str, FileTask, Session]]]
                ) -> tuple[array, set[int], list[Session]]:
    """The hash of each walked file's key in order (8 bytes a file, dropped once the plan is made),
    the hashes of the keys met twice under one path (those are skipped, as the next walk will), the
    distinct sessions of the files in order."""
    in_path: set[str] = set()
    current = [-1]
    twice: set[int] = set()
    owning: list[Session] = []

    def new_in_path(key: str, index: int) -> bool:
        if index != current[0]:
            current[0] = index
            in_path.clear()
        if key in in_path:
            twice.add(hash(key))
            return False
        in_path.add(key)
        return True

    hashes = array("q")
    for key, _, session in walk(new_in_path):
        hashes.append(hash(key))
        if not any(session is s for s in owning):
            owning.append(session)
    return hashes, twice, owning


def _walked(paths: Sequence[str], adapters: Sequence) -> Iterator[FileTask]:
    """The files under ``paths`` as :func:`trainlint.files.checker.plan_files` finds them (without its
    runs and without remembering them: :class:`Plan` skips a file met twice)."""
    from trainlint.files.checker import FileTask
    from trainlint.files.discovery import iter_files

    suffixes = {s for a in adapters for s in a.extensions}
    for path, explicit in iter_files(paths, suffixes):
        yield FileTask(path, explicit=explicit)
