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

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.files.checker import FileTask
    from trainlint.project.session import Session, SessionOptions


@dataclass
class Plan:
    """Every task to check, in order, each with the session of its config."""

    tasks: list[FileTask] = field(default_factory=list)
    owners: list[Session] = field(default_factory=list)
    """``owners[i]`` checks, lints and reports ``tasks[i]``."""
    first: Session | None = None
    """The session of the first path: it reports when no task has one (an empty folder)."""

    @property
    def sessions(self) -> list[Session]:
        """The distinct sessions, in the order they first govern a task (the first one when none does)."""
        out: list[Session] = [] if self.owners or self.first is None else [self.first]
        for session in self.owners:
            if not any(session is s for s in out):
                out.append(session)
        return out

    def add(self, task: FileTask, session: Session) -> None:
        self.tasks.append(task)
        self.owners.append(session)


class _Sessions:
    """One session per project config (None: no config above the file), opened on first use."""

    def __init__(self, options: SessionOptions, opener: Callable[[SessionOptions, Path], Session]) -> None:
        self.options = options
        self.opener = opener
        self.by_config: dict[str | None, Session] = {}
        self.config_of_folder: dict[str, str | None] = {}
        self.resolved: dict[str, str] = {}
        """Each folder resolved once (``_key``'s memo; a walk meets each folder for many files)."""

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
    from trainlint.files.checker import FileTask, _key, plan_files
    from trainlint.project.session import open_session

    opener = opener or open_session
    first = paths[0] if paths else runs[0][0] if runs else "."
    if options.config is not None or options.isolated:
        session = opener(options, Path(first))
        whole = Plan(first=session)
        for task in session.plan_files(paths):
            whole.add(task, session)
        return whole
    sessions = _Sessions(replace(options, runs=()), opener)
    files: list[tuple[FileTask, Session]] = []
    run_tasks: list[tuple[FileTask, Session]] = []
    governing: list[Session] = []

    def govern(path: str) -> Session:
        session = sessions.session(sessions.config_for(path), path)
        if not any(session is s for s in governing):
            governing.append(session)
            run_tasks.extend((FileTask(run[0], tuple(run[1:])), session) for run in session.project.runs)
        return session

    for run in runs:
        owner = govern(run[0])
        run_tasks.append((FileTask(run[0], tuple(run[1:])), owner))
    for path in paths:
        walker = govern(path)
        for task in plan_files([path], walker.adapters):
            files.append((task, govern(task.path)))
    if not governing:
        govern(first)
    out, done = Plan(first=governing[0]), set[str]()
    folders = sessions.resolved
    for task, session in run_tasks:
        if _key(task.path, folders) in done:
            continue
        done.update(_key(p, folders) for p in (task.path, *task.extra_paths))
        out.add(task, session)
    for task, session in files:
        key = _key(task.path, folders)
        if key in done:
            continue
        done.add(key)
        out.add(task, session)
    return out
