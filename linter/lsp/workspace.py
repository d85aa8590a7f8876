"""What the language server lints with, and the lint of one editor buffer. No LSP here: this
module is plain trainlint, so it is tested (and timed) without a client.

A :class:`Linter` keeps one :class:`~trainlint.project.session.Session` per project config,
found from the document's folder upwards exactly as ``trainlint check`` finds it. The config
lookup is cached per folder and re-done when any candidate file on the way up
(``.trainlint.toml``, ``pyproject.toml``) appears, disappears or changes; a session is rebuilt
when its config file changes. A config trainlint cannot use (the CLI exits 2 on it) is reported
once per version of the file, and the buffer is linted with the default settings meanwhile.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from trainlint.core.diagnostics import Diagnostic
from trainlint.core.input_codes import input_diagnostic
from trainlint.lsp import convert
from trainlint.lsp.convert import same_file
from trainlint.files.sources import MAX_FILE_BYTES, SourceText

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.project.session import SessionOptions

CONFIG_NAMES = (".trainlint.toml", "trainlint.toml", "pyproject.toml")


def session_options(options: Mapping[str, Any] | None = None) -> SessionOptions:
    """What ``trainlint check`` has when no flags are given (the project config decides), plus
    the context the editor's initialization options give (gpu, nodes, gpusPerNode, model,
    vocabSize) and the editor's trust (allowPlugins, workspaceTrusted)."""
    from trainlint.project.session import EstimateOptions, SessionOptions

    options = options or {}
    trusted = options.get("workspaceTrusted")
    return SessionOptions(
        estimate=EstimateOptions(gpu=options.get("gpu"), nodes=options.get("nodes"),
                                 gpus_per_node=options.get("gpusPerNode"), model=options.get("model"),
                                 vocab_size=options.get("vocabSize")),
        # local plugins: the same trust rule as the CLI (trainlint.files.trust), with the editor's
        # workspace trust on top and the workspace folder in place of the current directory
        allow_plugins=options.get("allowPlugins") is True,
        editor_trusted=trusted if isinstance(trusted, bool) else None)


def _key(path: str) -> str:
    try:
        return os.path.normcase(os.path.abspath(path))
    except (OSError, ValueError):
        return path


@dataclass
class SessionEntry:
    session: Any
    config: str | None
    mtime: int | None
    error: str | None = None
    """Why the project config cannot be used (the session is then the default one)."""


@dataclass
class Linted:
    """One lint of one buffer: what the server publishes and what hover reads."""

    path: str
    version: int | None
    text: str
    """The text trainlint linted (normalised: no BOM, ``\\n`` line breaks)."""
    result: Any
    """The FileResult after the rules ran; None when no adapter claims the buffer."""
    session: Any
    bom: bool = False
    by_path: dict[str, list[Diagnostic]] = field(default_factory=dict)
    """Every published diagnostic, by the file it is located in (the buffer's own path and,
    for a multi-file run or a referenced --deepspeed_config JSON, the other files)."""
    texts: dict[str, str] = field(default_factory=dict)
    """The text of each other file a diagnostic is located in, for converting its columns."""
    config_error: str | None = None
    config_path: str | None = None
    config_mtime: int | None = None
    seconds: float = 0.0
    estimates: dict[int, Any] = field(default_factory=dict)
    """Estimate (or MissingInputs) per spec index, made on the first hover that needs it."""

    @property
    def claimed(self) -> bool:
        return self.result is not None

    def estimate(self, spec) -> Any:
        """The estimate of one of this lint's specs, cached; None without an estimator."""
        estimator = getattr(getattr(self.session, "settings", None), "estimate", None)
        if estimator is None or self.result is None:
            return None
        index = next((i for i, s in enumerate(self.result.specs) if s is spec), None)
        if index is None:
            return estimator(spec)
        if index not in self.estimates:
            self.estimates[index] = estimator(spec)
        return self.estimates[index]


class Linter:
    """Lints buffers with the project config of their folder; not thread-safe (the server runs
    every lint and hover in one worker thread)."""

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = session_options(options)
        self._configs: dict[str, tuple[tuple, Path | None]] = {}
        self._sessions: dict[str | None, SessionEntry] = {}
        self._seen: set[str] = set()
        """Documents linted once: after a document's first lint the heap is frozen (see :meth:`lint`)."""
        self._scripts: Any = None
        """What the launch-script reader keeps of each buffer between lints (its syntax tree, and each
        top-level statement's evaluation with what it read), so that an edit re-reads only the
        statements it changes (trainlint.adapters.megatron.shell_memo); made on the first lint."""

    # ------------------------------------------------------------------ project config

    def invalidate(self) -> None:
        """Forget every cached lookup and session (a config file changed on disk)."""
        from trainlint.files import containment

        self._configs.clear()
        self._sessions.clear()
        containment.forget()  # its source-roots may have changed
        if self._scripts is not None:
            self._scripts.forget()  # a sourced file or the containment roots may read differently now

    def forget_memoised(self) -> None:
        """Forget what is kept across lints for runs that stay the same: the rules' findings per
        run (LintSettings.reuse_findings) and the whole-layout searches (LayoutAdvice). The next
        lint of every document computes them again, as after an edit that changes every run."""
        for entry in self._sessions.values():
            entry.session.settings.findings.clear()
            forget = getattr(entry.session.settings.layout_advice, "forget", None)
            if forget is not None:
                forget()

    def config_for(self, directory: Path) -> Path | None:
        from trainlint.files.config_files import find_config

        signature = _signature(directory)
        key = str(directory)
        cached = self._configs.get(key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        found = find_config(directory)
        self._configs[key] = (signature, found)
        return found

    def session_for(self, path: str | None, folder: str | None = None) -> SessionEntry:
        """The session for a document: its folder's project config (or, for a buffer with no
        file, the workspace folder's)."""
        start = Path(path).parent if path and os.path.isabs(path) else (Path(folder) if folder else None)
        config = self.config_for(start) if start is not None else None
        name = str(config) if config else None
        mtime = _mtime(config) if config else None
        entry = self._sessions.get(name)
        if entry is not None and entry.mtime == mtime:
            return entry
        entry = self._open(name, mtime, start, folder)
        self._sessions[name] = entry
        return entry

    def _open(self, config: str | None, mtime: int | None, start: Path | None,
              folder: str | None = None) -> SessionEntry:
        from trainlint.files.config_files import ConfigError
        from trainlint.project.session import open_session

        # no workspace folder: nothing is trusted (the server's own directory is not a choice the
        # user made, and an editor may start it in the cloned repository)
        options = replace(self.options, config=config, config_is_users=False, isolated=config is None,
                          trust_roots=(folder,) if folder else ())
        from trainlint.files import containment

        containment.configure_trust(containment.TrustGiven(options.allow_plugins, options.trust_roots,
                                                           options.editor_trusted))
        try:
            session = open_session(options, start or Path.cwd())
            session.settings.reuse_findings = _findings_reusable(session)
            return SessionEntry(session, config, mtime)
        except (ValueError, ConfigError) as exc:
            if config is None:
                raise
            default = self._sessions.get(None)
            if default is None:
                default = self._open(None, None, start)
                self._sessions[None] = default
            return SessionEntry(default.session, config, mtime, error=str(exc))

    # ------------------------------------------------------------------ lint

    def lint(self, path: str, text: str, version: int | None = None, *, folder: str | None = None,
             open_texts: Mapping[str, str] | None = None, write_fixes: bool = False) -> Linted:
        """Lint a buffer as ``trainlint check`` lints the file; never raises (a bug in trainlint
        becomes one TL999 diagnostic on the buffer). ``write_fixes``: also have the run's adapter
        write the rules' layout fixes (Finding.changes) as edits, as ``check --diff`` does; the
        code actions ask for it, the lint on every keystroke does not (it costs a writer run and
        two re-reads per such finding)."""
        from trainlint.adapters.megatron import shell_memo

        started = time.perf_counter()
        normalized, bom = convert.normalize(text)
        if self._scripts is None:
            self._scripts = shell_memo.StatementMemo()
        try:
            with shell_memo.remembering(self._scripts):
                linted = self._lint(path, normalized, version, folder, open_texts or {}, write_fixes)
        except Exception as exc:  # noqa: BLE001 - contained: the server must answer the next request
            linted = Linted(path, version, normalized, None, None, by_path={path: [internal_error(path, exc)]})
        linted.bom = bom
        linted.seconds = time.perf_counter() - started
        if path not in self._seen:
            self._freeze_heap(path)
        return linted

    def _freeze_heap(self, path: str) -> None:
        """After the first lint of a document: move what the process holds now (sessions, plugins,
        schemas, framework catalogs, the modules its format needed) out of the cyclic garbage
        collector's reach (gc.freeze, O(1)). Those live as long as the server; without this every
        full collection walks them again, a pause of a re-lint's size in the middle of typing.
        A collection first, so that no garbage is frozen with them: it walks only what the last
        freeze left (all of the heap once, ~10 ms, at the first document's first lint)."""
        import gc

        if len(self._seen) > 10_000:
            self._seen.clear()
        self._seen.add(path)
        gc.collect()
        gc.freeze()

    def _lint(self, path: str, text: str, version: int | None, folder: str | None,
              open_texts: Mapping[str, str], write_fixes: bool = False) -> Linted:
        from trainlint.adapters.base import LoadContext
        from trainlint.files.checker import check_source
        from trainlint.core.results import FileResult

        entry = self.session_for(path, folder)
        session = entry.session
        adapters = session.registry.adapters
        linted = Linted(path, version, text, None, session, config_error=entry.error,
                        config_path=entry.config, config_mtime=entry.mtime)
        unreadable = _unreadable(path, text)
        if unreadable is not None:
            # what `trainlint check FILE` says of such a file; published only where a config could be
            if Path(path).suffix.lower() in {s for a in adapters for s in a.extensions}:
                linted.result = FileResult(path, None, [unreadable])
                linted.by_path = {path: [unreadable]}
            return linted
        buffers = {_key(p): t for p, t in open_texts.items()}
        buffers[_key(path)] = text
        read = _reader(buffers)
        run = next((r for r in session.runs if any(same_file(member, path) for member in r)), None)
        result = None
        if run is not None and len(run) > 1:
            # a member of a multi-file run is checked as the run, as the CLI checks it
            try:
                main = SourceText(path, text) if same_file(run[0], path) else read(run[0])
                result = check_source(main, adapters, LoadContext(extra_paths=list(run[1:]), read=read,
                                                                  environment=session.environment,
                                                                  frameworks=session.frameworks))
            except Exception:  # noqa: BLE001 - the first file cannot be read: lint the buffer alone
                result = None
        if result is None:
            result = check_source(SourceText(path, text), adapters,
                                  LoadContext(read=read, environment=session.environment, frameworks=session.frameworks))
        if result.format is None and not result.internal_error:
            return linted
        checked = session.lint([result], write_fixes=write_fixes)
        checked = as_check_reports(checked, session)
        failures = session.plugin_failures()
        linted.result = checked[0] if checked else result
        by_path: dict[str, list[Diagnostic]] = {path: []}
        for diag in [d for r in [*failures, *checked] for d in r.diagnostics]:
            where = diag.path or path
            key = path if same_file(where, path) else where
            by_path.setdefault(key, []).append(diag)
        for other in by_path:
            if other != path:
                linted.texts[other] = _text_of(other, buffers)
        linted.by_path = {p: sorted(ds, key=Diagnostic.sort_key) for p, ds in by_path.items()}
        return linted


def _findings_reusable(session: Any) -> bool:
    """Whether the rules' findings on a run may be reused while the run stays the same (see
    LintSettings.reuse_findings): they are functions of the run and the session, unless the
    session names a model (the editor's ``model`` option or the project's ``model``), which may be
    a config.json on disk that every estimate reads again."""
    return session.options.estimate.model is None and session.project.estimation.model is None


def internal_error(path: str, exc: BaseException) -> Diagnostic:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/linter/" in f.filename or "/adapters/" in f.filename
              or "trainlint" in f.filename]
    where = f" (in {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    reason = (str(exc).splitlines() or [""])[0]
    return input_diagnostic("TL999", f"internal error: {type(exc).__name__}: {reason}{where}", path=path)


def _unreadable(path: str, text: str) -> Diagnostic | None:
    """TL001 for a buffer ``trainlint check`` would not read: too large, or binary."""
    if len(text) * 4 > MAX_FILE_BYTES:  # cheap bound first: a code point is at most 4 bytes
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_FILE_BYTES:
            return input_diagnostic("TL001", f"file is {size / 1e6:.1f} MB, over the {MAX_FILE_BYTES / 1e6:.0f} MB "
                                             "limit for a config", path=path)
    if "\x00" in text[:8192]:
        return input_diagnostic("TL001", "binary file (NUL bytes): not a config", path=path)
    return None


def _reader(buffers: Mapping[str, str]) -> Callable[[str], SourceText]:
    """How the adapters read a referenced file: the editor's buffer when it is open, else the disk."""
    from trainlint.files.sources import read_source

    def read(name: str) -> SourceText:
        text = buffers.get(_key(str(name)))
        if text is not None:
            return SourceText(str(name), convert.normalize(text)[0])
        return read_source(name)

    return read


def _text_of(path: str, buffers: Mapping[str, str]) -> str:
    text = buffers.get(_key(path))
    if text is not None:
        return convert.normalize(text)[0]
    try:
        from trainlint.files.sources import read_source

        return read_source(path).text
    except Exception:  # noqa: BLE001 - unreadable: columns are then taken as they are
        return ""


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _signature(directory: Path) -> tuple:
    """The state of every file the config lookup from ``directory`` would read."""
    out: list[int | None] = []
    try:
        resolved = directory.resolve()
        folders = [resolved, *resolved.parents]
    except OSError:
        folders = [directory]
    for folder in folders:
        base = str(folder)
        for name in CONFIG_NAMES:
            try:
                out.append(os.stat(os.path.join(base, name)).st_mtime_ns)
            except OSError:
                out.append(None)
    return tuple(out)


def as_check_reports(checked: list, session) -> list:
    """What ``trainlint check`` adds after the rules, for the editor too: TL020 for the buffer's
    unused disables, and the project's baseline left out."""
    from trainlint.project import baseline as baselines
    from trainlint.project.unused_suppressions import report_unused

    checked = report_unused(checked, session.settings.selection, session.project)
    configured = session.project.baseline
    if configured:
        try:
            checked, _ = baselines.apply(checked, baselines.load(str(Path(session.project.root or ".") / configured)))
        except baselines.BaselineError:
            pass  # `trainlint check` says what is wrong with it; the editor shows every finding
    return checked
