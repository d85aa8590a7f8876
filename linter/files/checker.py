"""Reading files into specs: detection, loading, and containment of trainlint's own bugs.

Reading a file with the adapters gives a :class:`trainlint.core.results.FileResult`; it knows formats
only through the ``Adapter`` interface, and sits in the formats layer with them, so the launch
reader (``trainlint run``) and the write-back's round trip read a file the same way as ``check``,
the engine, the estimator and the language server. A bug while handling one file
becomes a TL999 diagnostic for that file; the other files are still checked.
"""

from __future__ import annotations

import os

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from trainlint.core import cancel
from trainlint.adapters.base import Adapter, LoadContext, NOT_MINE
from trainlint.core.diagnostics import Diagnostic
from trainlint.files.discovery import iter_files
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.results import FileResult
from trainlint.files.sources import SourceText, Unreadable, UnreadableSource, read_source

if TYPE_CHECKING:
    from trainlint.frameworks.locate import FrameworkSettings


def detect(adapters: Sequence[Adapter], path: str, text: str) -> Adapter | None:
    """The adapter with the highest sniff score; ties go to the earlier adapter."""
    best, best_score = None, NOT_MINE
    for adapter in adapters:
        try:
            score = adapter.sniff(path, text)
        except Exception:  # noqa: BLE001 - a sniffer must not take the whole run down
            score = NOT_MINE
        if score > best_score:
            best, best_score = adapter, score
    return best


def check_source(
    source: SourceText,
    adapters: Sequence[Adapter],
    context: LoadContext | None = None,
    *,
    force_format: str | None = None,
) -> FileResult:
    """Detect and load one text (a file on disk or an editor buffer)."""
    context = context or LoadContext()
    cancel.check()  # between files (a lint the language server no longer wants stops here)
    try:
        if force_format:
            adapter = next((a for a in adapters if a.name == force_format), None)
        else:
            adapter = detect(adapters, source.path, source.text)
        if adapter is None:
            return FileResult(source.path, None)
        loaded = adapter.load(source, context)
        diagnostics = [d if d.path else _with_path(d, source.path) for d in loaded.diagnostics]
        return FileResult(source.path, adapter.name, diagnostics, loaded.specs, loaded.documents,
                          [source.path, *context.extra_paths] if context.extra_paths else [],
                          frameworks=context.frameworks)
    except RecursionError:
        return _internal(source.path, "input nested too deeply for trainlint (RecursionError)", None)
    except Exception as exc:  # noqa: BLE001 - contained and reported as TL999
        return _internal(source.path, f"{type(exc).__name__}: {exc}", exc)


def check_file(
    path: str,
    adapters: Sequence[Adapter],
    context: LoadContext | None = None,
    *,
    explicit: bool = True,
) -> FileResult:
    if not explicit and os.path.basename(path).lower() in NEVER_CONFIGS:
        return FileResult(path, None)  # skipped by name before any read, however large
    escape = _link_out_of_checkout(path)
    if escape is not None:
        return FileResult(path, None, [input_diagnostic(
            "TL001", f"a symlink to {escape}, outside its git checkout: not read (name the target itself to check it)",
            path=path)])
    try:
        source = read_source(path)
    except UnreadableSource as unreadable:
        # A file met while walking a directory that cannot be read is not necessarily a
        # config: report it only when the user named it.
        if not explicit and unreadable.reason is Unreadable.BINARY:
            return FileResult(path, None)
        if not explicit and unreadable.reason is Unreadable.TOO_LARGE and not _head_claimed(path, adapters):
            return FileResult(path, None)  # too large, and its start is nothing an adapter reads: not a config
        return FileResult(path, None, [_with_path(unreadable.diagnostic, path)])
    except Exception as exc:  # noqa: BLE001
        return _internal(path, f"{type(exc).__name__}: {exc}", exc)
    result = check_source(source, adapters, context)
    if explicit and result.format is None and not result.diagnostics:
        # named by the user, and no adapter claims it: say so, or `check FILE` would pass a config
        # that trainlint did not read at all (issue 29, G3); a walk passes such files by quietly
        result.diagnostics.append(input_diagnostic(
            "TL016", "not a DeepSpeed, Megatron-LM or GPT-NeoX config as far as trainlint can tell (no adapter "
            "claims it), so nothing in it was checked; leave it out of the paths given (or `--ignore TL016`) if it is "
            "not a config", path=path))
    return result


def _link_out_of_checkout(path: str) -> str | None:
    """Where a symlink inside a git checkout points when that is outside the checkout (None
    otherwise). Changed-files CI passes the paths of a pull request's diff explicitly: a link
    ``x.json -> /etc/cluster/secrets.json`` it adds must not get the target read and quoted."""
    if not os.path.islink(path):
        return None
    from trainlint.files.containment import checkout_of, contained

    try:
        folder = Path(os.path.abspath(path)).parent.resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    checkout = checkout_of(folder)
    if checkout is None or contained(path, (str(checkout),)):
        return None
    return os.path.realpath(path)


NEVER_CONFIGS = frozenset({
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "added_tokens.json",
    "model.safetensors.index.json", "pytorch_model.bin.index.json", "trainer_state.json", "merges.txt",
    "package.json", "package-lock.json",
})
"""Files a walk passes by unread: model/tokenizer artefacts and tool files no adapter claims."""

_HEAD_BYTES = 256 * 1024


def _head_claimed(path: str, adapters: Sequence[Adapter]) -> bool:
    """Whether an adapter would claim a too-large file by its name and first 256 KB."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            head = os.read(fd, _HEAD_BYTES).decode("utf-8", errors="replace")
        finally:
            os.close(fd)
    except OSError:
        return True  # unreadable: let the TL001 stand
    return detect(adapters, path, head) is not None


@dataclass(frozen=True)
class FileTask:
    """One unit of checking: a file (or a multi-file run, ``extra_paths`` being its other
    members), and whether the user named it (a walked file that is binary is skipped quietly)."""

    path: str
    extra_paths: tuple[str, ...] = ()
    explicit: bool = True


def plan_files(paths: Iterable[str], adapters: Sequence[Adapter], runs: Sequence[Sequence[str]] = ()) -> list[FileTask]:
    """What :func:`check_paths` will check, in order: the runs first, then every other file
    found under ``paths``, each once."""
    suffixes = {s for a in adapters for s in a.extensions}
    tasks: list[FileTask] = []
    done: set[str] = set()
    folders: dict[str, str] = {}
    for run in runs:
        tasks.append(FileTask(run[0], tuple(run[1:])))
        done.update(_key(p, folders) for p in run)
    for path, explicit in iter_files(paths, suffixes):
        key = _key(path, folders)
        if key in done:
            continue
        done.add(key)
        tasks.append(FileTask(path, explicit=explicit))
    return tasks


def check_task(task: FileTask, adapters: Sequence[Adapter], environment: dict[str, str] | None = None,
               frameworks: FrameworkSettings | None = None) -> FileResult:
    context = LoadContext(extra_paths=list(task.extra_paths), environment=environment or {}, frameworks=frameworks,
                          named=task.explicit)
    return check_file(task.path, adapters, context, explicit=task.explicit)


def check_paths(
    paths: Iterable[str],
    adapters: Sequence[Adapter],
    *,
    runs: Sequence[Sequence[str]] = (),
    environment: dict[str, str] | None = None,
    frameworks: FrameworkSettings | None = None,
) -> list[FileResult]:
    """Check files and directories. ``runs`` lists multi-file runs (NeoX: several YAMLs for one
    run, merged in order); their files are checked together, once, as the run. ``frameworks``: the
    project's framework settings (None: none)."""
    return [check_task(task, adapters, environment, frameworks) for task in plan_files(paths, adapters, runs)]


FOLDERS_KEPT = 1024
"""Resolved folders a plan remembers (:func:`_key`) before it forgets them all: two strings per folder
kept for the whole check made its memory grow with the folders (issue 33)."""


def _key(path: str, folders: dict[str, str] | None = None) -> str:
    """The path with every link resolved: what says two paths name one file. ``folders`` (a dict kept
    for one plan) holds each folder resolved once: a file that is not a link, written without ``..``,
    is its resolved folder and its name (a walk of 10,000 files resolved every component of each)."""
    try:
        if folders is not None and ".." not in path.replace("\\", "/").split("/"):
            parent, name = os.path.split(os.path.abspath(path))
            if name and not os.path.islink(path):
                folder = folders.get(parent)
                if folder is None:
                    if len(folders) >= FOLDERS_KEPT:
                        folders.clear()  # a memo: a walk is depth first, the folders met again are recent ones
                    folder = folders[parent] = str(Path(parent).resolve())
                return os.path.join(folder, name)
        return str(Path(path).resolve())
    except OSError:
        return path


def _with_path(diagnostic: Diagnostic, path: str) -> Diagnostic:
    from dataclasses import replace

    return replace(diagnostic, path=path)


def _internal(path: str, reason: str, exc: BaseException | None) -> FileResult:
    where = ""
    if exc is not None:
        import traceback  # only on trainlint's own bugs

        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if "trainlint" in f.filename or "/linter/" in f.filename or "/adapters/" in f.filename]
        if frames:
            last = frames[-1]
            where = f" (in {Path(last.filename).name}:{last.lineno})"
    reason = reason.splitlines()[0] if reason else "unknown error"
    return FileResult(path, None, [input_diagnostic("TL999", f"internal error: {reason}{where}", path=path)])
