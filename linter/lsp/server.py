"""The trainlint language server: diagnostics on open, change (debounced) and save, cleared on
close; hover shows what a key means and contributes to the estimate.

Linting runs in-process on the editor's buffer (not the file on disk), with the project config
found from the document's folder exactly as ``trainlint check`` finds it, so codes and
positions match the CLI (:mod:`trainlint.lsp.workspace`). Every lint runs in one worker
thread (hover in another), so the event loop keeps reading messages while a large file is
linted; a lint whose document changed meanwhile is dropped, and one still queued when a newer
change comes is cancelled. Any exception while linting becomes one
TL999 diagnostic: the server never dies on a document.

Diagnostics located in another file (the other YAMLs of a NeoX run, the ``--deepspeed_config``
JSON of a launch script) are published to that file's URI; each file's list is the union of
what every open document's last lint located there.

Initialization options (all optional): ``debounce`` (seconds to wait after the last change,
default 0.3), ``docsUrl`` (the rules page each diagnostic links to, default the project's
docs/rules.md), and the estimate context ``gpu``, ``nodes``, ``gpusPerNode``, ``model`` (as the
CLI flags; the project config still applies where these are not given).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Mapping

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from trainlint import __version__
from trainlint.core import cancel
from trainlint.core.diagnostics import Diagnostic, Severity
from trainlint.lsp import convert, hover
from trainlint.lsp.convert import same_file
from trainlint.lsp.workspace import Linted, Linter, internal_error, session_options
from trainlint.core.numbers import long_numbers, shorten_numbers
from trainlint.core.escape import printable

log = logging.getLogger("trainlint.lsp")

DOCS_URL = "https://github.com/trainlint/trainlint/blob/main/docs/rules.md"
DEFAULT_DEBOUNCE = 0.3
DEFAULT_LINT_BUDGET = 10.0
"""Seconds a document's lint may take before the server stops waiting for it: the document gets
one diagnostic saying so, and the other documents are linted on a fresh worker (the abandoned
lint ends on its own; every reader is bounded)."""
CONFIG_FILES = ("pyproject.toml", ".trainlint.toml", "trainlint.toml")
_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}

__all__ = ["DOCS_URL", "TrainlintServer", "create_server", "main", "session_options", "to_lsp"]


def _range(span, lines: list[str], bom: bool = False) -> lsp.Range:
    (sl, sc), (el, ec) = convert.span_to_range(span, lines, bom)
    return lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec))


def uri_for(path: str) -> str:
    return from_fs_path(os.path.abspath(path)) or path


def to_lsp(diag: Diagnostic, lines: list[str], uri: str, *, bom: bool = False, docs_url: str = DOCS_URL,
           texts: Mapping[str, list[str]] | None = None) -> lsp.Diagnostic:
    """A trainlint diagnostic as an LSP one. ``lines`` are the lines of the file it is located
    in; ``texts`` the lines of other files its related locations point into."""
    # the message quotes keys and values of the file: shown with every control and bidi character
    # escaped, as on the command line (an editor may render it in a terminal or a tooltip)
    message = printable(diag.message) + (f"\nfix: {printable(diag.fix)}" if diag.fix else "")
    related = []
    for rel in diag.related:
        if rel.path is None or same_file(rel.path, diag.path):
            rel_uri, rel_lines, rel_bom = uri, lines, bom
        else:
            rel_uri, rel_lines, rel_bom = uri_for(rel.path), (texts or {}).get(rel.path, []), False
        related.append(lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=rel_uri, range=_range(rel.span, rel_lines, rel_bom)), message=printable(rel.message)))
    anchor = diag.code.lower() + (f"-{diag.name}" if diag.name else "")
    data = {"name": diag.name, **({"fix": printable(diag.fix)} if diag.fix else {})}
    return lsp.Diagnostic(
        range=_range(diag.span, lines, bom),
        message=message,
        severity=_SEVERITY.get(diag.severity, lsp.DiagnosticSeverity.Warning),
        code=diag.code,
        code_description=lsp.CodeDescription(href=f"{docs_url}#{anchor}") if docs_url else None,
        source="trainlint",
        related_information=related or None,
        data=data,
    )


def _key(diag: lsp.Diagnostic) -> tuple:
    r = diag.range
    return (r.start.line, r.start.character, r.end.line, r.end.character, str(diag.code), diag.message)


class TrainlintProtocol(LanguageServerProtocol):
    """pygls 2.1.1's protocol with two fixes:

    * a notification handled by a generator (every plain handler is run as one) leaves its
      Future in ``_request_futures`` for ever (only responses pop it): ~1.9 KB per ``didChange``,
      measured by benchmarks/lsp_memory.py. The entry is dropped when the handler is done.
    * a request whose params do not match the method's type is logged and never answered; JSON-RPC
      requires an InvalidParams (-32602) error response, which is sent here."""

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        if callback == self._check_handler_result:  # a notification: nobody will pop its future
            future = self._request_futures.get(msg_id)
            if future is not None:
                if future.done():
                    self._request_futures.pop(msg_id, None)
                else:
                    future.add_done_callback(lambda _f: self._request_futures.pop(msg_id, None))

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcInvalidParams as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], error=lsp.ResponseError(
                    code=exc.code, message=f"invalid params for {str(data.get('method'))[:80]}"))
            return None

    def handle_message(self, message):
        if message is None:  # answered above with InvalidParams
            return
        super().handle_message(message)


class TrainlintServer(LanguageServer):
    def __init__(self) -> None:
        # Full sync: pygls applies incremental edits over str.splitlines(), which also breaks
        # lines at \x0b, \x85 and \u2028; a config is small, the whole text is cheap to send.
        super().__init__("trainlint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
                         protocol_cls=TrainlintProtocol)
        self.lint_budget = DEFAULT_LINT_BUDGET
        self.options: dict = {}
        self.linter = Linter()
        self.debounce = DEFAULT_DEBOUNCE
        self.docs_url = DOCS_URL
        self.pending: dict[str, asyncio.Task] = {}
        self.linted: dict[str, Linted] = {}
        self.linted_with_fixes: dict[str, Linted] = {}
        """Per document: its lint with the layout fixes written, made when code actions ask for them."""
        self.published: dict[str, dict[str, list[lsp.Diagnostic]]] = {}
        """Target URI -> source URI -> what the source's last lint located in the target."""
        self.reported_config_errors: set[tuple] = set()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainlint-lint")
        # hover reads a finished lint (and makes its estimate) in its own thread, so that it is
        # not queued behind the lint of another, large file
        self.hover_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainlint-hover")
        self.live: set[cancel.Token] = set()
        """The tokens of the lints running or queued (cancelled at shutdown)."""
        self.last_start = float("-inf")
        """When (event-loop time) the current worker last started a lint."""
        self.warming: tuple[ThreadPoolExecutor, Future[None], float] | None = None
        """The worker the session's warm-up was queued on, its future and when (see :meth:`warm_up`)."""
        self.shutting_down = False
        self.exit_code: int | None = None  # set by the exit notification (0 after shutdown, else 1)
        self.startup_errors: list[str] = []

    # ------------------------------------------------------------------ options

    def configure(self, options: Any) -> None:
        if not isinstance(options, dict):
            return
        debounce = options.get("debounce")
        if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and 0 <= debounce <= 60:
            self.debounce = float(debounce)
        budget = options.get("lintBudget")
        if isinstance(budget, (int, float)) and not isinstance(budget, bool) and 0 < budget <= 3600:
            self.lint_budget = float(budget)
        if isinstance(options.get("docsUrl"), str):
            self.docs_url = options["docsUrl"].rstrip("#")
        context = {k: options[k] for k in ("gpu", "nodes", "gpusPerNode", "model", "allowPlugins", "workspaceTrusted")
                   if options.get(k) is not None}
        if context:
            linter = Linter(context)
            try:
                # an unknown GPU or model fails here, once, not on every lint; in the workspace folder's
                # project (its trusted plugins may add the GPU), as the lints will be
                linter.session_for(None, self._folder_if_known())
            except Exception as exc:  # noqa: BLE001
                self.startup_errors.append(f"trainlint: initialization options {context}: {exc}; ignored")
            else:
                self.linter = linter
                self.options = context

    # ------------------------------------------------------------------ linting

    def _folder_if_known(self) -> str | None:
        try:
            return self.folder()
        except Exception:  # noqa: BLE001 - no workspace yet (initialize not handled by pygls yet)
            return None

    def folder(self) -> str | None:
        folders = list(self.workspace.folders.values())
        return to_fs_path(folders[0].uri) if folders else (self.workspace.root_path or None)

    def open_texts(self) -> dict[str, str]:
        out = {}
        for uri, doc in self.workspace.text_documents.items():
            path = to_fs_path(uri)
            if path:
                out[path] = doc.source
        return out

    def _lint_blocking(self, uri: str, path: str, text: str, version: int | None, open_texts: dict[str, str],
                       token: cancel.Token | None = None, on_start: Callable[[], None] | None = None,
                       ) -> tuple[Linted, dict[str, list[lsp.Diagnostic]]] | None:
        """In the worker thread: lint, and convert every diagnostic to its file's LSP positions.

        None when ``token`` was cancelled (superseded by a newer change, over budget, shutdown):
        the lint stops at its next safe point (see :mod:`trainlint.core.cancel`) and frees the worker.
        ``on_start``: called as the lint leaves the queue (its budget starts then)."""
        token = token or cancel.Token()
        try:
            with cancel.scope(token):
                token.check()  # cancelled while it waited in the queue
                if on_start is not None:
                    on_start()
                log.debug("linting %s (version %s)", uri, version)
                return self._lint_and_convert(uri, path, text, version, open_texts)
        except cancel.Cancelled as stop:
            # checks_at_cancel: the safe points passed when it was cancelled; the one that raised
            # is the next, so the work done after the cancel is token.checks - checks_at_cancel - 1
            after = max(0, token.checks - (token.checks_at_cancel or 0) - 1)
            log.debug("lint of %s (version %s) stopped (%s): %d safe points passed after the cancel, %.3f s after it",
                      uri, version, stop, after, cancel_delay(token))
            return None
        finally:
            self.live.discard(token)

    def lint_for_request(self, uri: str, path: str, text: str, version: int | None,
                         open_texts: dict[str, str]) -> tuple[Linted, dict[str, list[lsp.Diagnostic]]]:
        """In the worker thread, for a hover or a code action that needs the current text linted:
        a lint nothing cancels (the request waits for it)."""
        done = self._lint_blocking(uri, path, text, version, open_texts)
        assert done is not None  # None only when its token is cancelled, and this token is nobody's
        return done

    def _lint_and_convert(self, uri: str, path: str, text: str, version: int | None,
                          open_texts: dict[str, str]) -> tuple[Linted, dict[str, list[lsp.Diagnostic]]]:
        linted = self.linter.lint(path, text, version, folder=self.folder(), open_texts=open_texts)
        try:
            out: dict[str, list[lsp.Diagnostic]] = {uri: []}
            texts = {p: convert.split_lines(t) for p, t in linted.texts.items()}
            texts[path] = convert.split_lines(linted.text)
            for where, diags in linted.by_path.items():
                if where == path:
                    target, lines, bom = uri, convert.split_lines(linted.text), linted.bom
                else:
                    target, lines, bom = uri_for(where), convert.split_lines(linted.texts.get(where, "")), False
                out.setdefault(target, []).extend(
                    to_lsp(d, lines, target, bom=bom, docs_url=self.docs_url, texts=texts) for d in diags)
        except Exception as exc:
            log.exception("converting diagnostics of %s failed", uri)
            out = {uri: [to_lsp(internal_error(path, exc), [], uri, docs_url=self.docs_url)]}
        log.debug("linted %s (version %s) in %.1f ms", uri, version, linted.seconds * 1e3)
        return linted, out

    async def lint_and_publish(self, uri: str) -> None:
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return
        version, text = doc.version, doc.source
        path = to_fs_path(uri) or uri
        loop = asyncio.get_running_loop()
        token = cancel.Token()
        try:
            for attempt in range(QUEUED_ATTEMPTS):
                executor = self.executor
                token = cancel.Token()
                self.live.add(token)
                started: asyncio.Future[None] = loop.create_future()
                running = loop.run_in_executor(executor, self._lint_blocking, uri, path, text, version,
                                               self.open_texts(), token, self._on_start(loop, started))
                # The budget is this document's own lint, timed from its start on the worker: the
                # time it waits behind another document (stopped at that one's budget) or behind
                # the session's warm-up is not its cost.
                while True:
                    await asyncio.wait((started, running), timeout=self.lint_budget + STOP_GRACE,
                                       return_when=asyncio.FIRST_COMPLETED)
                    if started.done() or running.done() or not self._moving(executor, loop.time()):
                        break
                if not started.done() and not running.done():
                    # the work ahead of it neither finished nor stopped within a budget and its grace
                    # (a superseded lint with no safe point): leave that worker, queue again on a fresh one
                    token.cancel("queued behind a lint over budget")
                    self._abandon(executor)
                    if attempt < QUEUED_ATTEMPTS - 1:
                        continue
                    linted, out = self._over_budget(uri, path, text, version)
                    break
                try:
                    done = await asyncio.wait_for(asyncio.shield(running), self.lint_budget)
                except asyncio.TimeoutError:  # this document's own lint is over budget
                    token.cancel(f"over the {self.lint_budget:g} s budget")
                    await self._stop_or_abandon(executor, running)
                    linted, out = self._over_budget(uri, path, text, version)
                    break
                if done is None:  # cancelled at shutdown
                    return
                linted, out = done
                break
        except asyncio.CancelledError:
            # superseded (a newer change or a close cancelled this task): the lint in the worker
            # stops at its next safe point instead of running to its end
            token.cancel("superseded")
            raise
        except Exception as exc:  # e.g. the executor is shut down
            log.exception("lint of %s failed", uri)
            linted = Linted(path, version, text, None, None)
            out = {uri: [to_lsp(internal_error(path, exc), [], uri, docs_url=self.docs_url)]}
        current = self.workspace.text_documents.get(uri)
        if current is None or current.version != version:
            return  # closed or changed meanwhile: a newer lint is on its way
        self.linted[uri] = linted
        self._report_config_error(linted)
        self._publish_from(uri, out, version)

    def _publish_from(self, source: str, out: dict[str, list[lsp.Diagnostic]], version: int | None) -> None:
        stale = [t for t, by_source in self.published.items() if source in by_source and t not in out]
        for target in stale:
            del self.published[target][source]
            self._publish(target)
        for target, diags in out.items():
            self.published.setdefault(target, {})[source] = diags
            self._publish(target, version if target == source else None)

    def _publish(self, target: str, version: int | None = None) -> None:
        seen: set[tuple] = set()
        merged: list[lsp.Diagnostic] = []
        for diags in self.published.get(target, {}).values():
            for diag in diags:
                if _key(diag) not in seen:
                    seen.add(_key(diag))
                    merged.append(diag)
        if version is None and target in self.linted:
            version = self.linted[target].version
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=target, diagnostics=merged, version=version))

    def _report_config_error(self, linted: Linted) -> None:
        if not linted.config_error:
            return
        key = (linted.config_path, linted.config_mtime)
        if key in self.reported_config_errors:
            return
        self.reported_config_errors.add(key)
        message = printable(f"trainlint: {linted.config_error} (linting with the default settings until it is fixed)")
        log.warning(message)
        self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=message))

    async def _stop_or_abandon(self, executor: ThreadPoolExecutor, running: asyncio.Future) -> None:
        """After cancelling the lint on ``executor``: wait a moment for it to reach a safe point
        and stop (the worker and its warm Linter are then kept); when it does not (a step that
        has no safe point inside), abandon the worker."""
        try:
            await asyncio.wait_for(asyncio.shield(running), STOP_GRACE)
        except asyncio.TimeoutError:
            self._abandon(executor)
        except Exception:  # noqa: BLE001 - the lint failed on its way out: the worker is free
            pass

    def _abandon(self, executor: ThreadPoolExecutor) -> None:
        """A lint ran over budget on ``executor``: later lints go to a fresh worker thread and a
        fresh Linter (the old thread finishes what it has on its own, its results dropped; the
        documents queued there are linted again by their own waiting coroutines)."""
        if self.executor is not executor or self.shutting_down:
            return
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainlint-lint")
        self.linter = Linter(self.options)
        self.last_start = float("-inf")  # nothing has started on the fresh worker yet
        executor.shutdown(wait=False)
        log.warning("a lint took over %.1f s; linting continues on a fresh worker", self.lint_budget)

    def _over_budget(self, uri: str, path: str, text: str, version: int | None,
                     ) -> tuple[Linted, dict[str, list[lsp.Diagnostic]]]:
        """What a document whose lint did not finish within the budget publishes: one TL012."""
        return (Linted(path, version, text, None, None),
                {uri: [to_lsp(over_budget(path, self.lint_budget), [], uri, docs_url=self.docs_url)]})

    def warm_up(self) -> None:
        """Queue the session's warm-up on the worker (see :data:`WARM_UP_DOCUMENTS`): what every
        first lint pays once (imports, schemas, catalogs: ~0.4 s idle, seconds on a busy machine)
        is then not charged to the first document's budget."""
        token = cancel.Token()
        self.live.add(token)
        linter, folder = Linter(self.options), self._folder_if_known()

        def warm() -> None:
            started = time.perf_counter()
            try:
                with cancel.scope(token):
                    for name, text in WARM_UP_DOCUMENTS:
                        token.check()
                        linter.lint(os.path.join(folder or os.getcwd(), name), text, folder=folder)
            except cancel.Cancelled:
                return
            except Exception:  # a warm-up only: the first lint loads what it needs
                log.warning("the session's warm-up failed", exc_info=True)
                return
            finally:
                self.live.discard(token)
            log.debug("session warmed up in %.1f ms", (time.perf_counter() - started) * 1e3)

        self.warming = (self.executor, self.executor.submit(warm), time.monotonic())

    def _warming(self, executor: ThreadPoolExecutor) -> bool:
        """Whether ``executor`` is still running (or about to run) the session's warm-up, and has
        for less than :data:`WARM_UP_LIMIT` (a warm-up that hangs, in a project's plugin say, is
        left behind like any stuck lint)."""
        if self.warming is None:
            return False
        worker, future, queued = self.warming
        return worker is executor and not future.done() and time.monotonic() - queued < WARM_UP_LIMIT

    def _moving(self, executor: ThreadPoolExecutor, now: float) -> bool:
        """Whether a lint queued on ``executor`` should go on waiting: the worker is still the
        current one and is running the session's warm-up, or started a lint within the last budget
        and grace (documents opened together are linted one after another, each within its own
        budget: the last of them waits longer than one budget without anything being stuck)."""
        if executor is not self.executor:
            return False  # left behind by another lint: queue again on the fresh one
        return self._warming(executor) or now - self.last_start < self.lint_budget + STOP_GRACE

    def _on_start(self, loop: asyncio.AbstractEventLoop, started: asyncio.Future[None]) -> Callable[[], None]:
        """A callable for the worker thread, called as a lint leaves the queue: resolves
        ``started`` and notes the time on the event loop."""
        def mark() -> None:
            self.last_start = loop.time()
            if not started.done():
                started.set_result(None)

        def signal() -> None:
            loop.call_soon_threadsafe(mark)
        return signal

    def cancel_pending(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None and not task.done():
            task.cancel()

    def schedule(self, uri: str, delay: float | None = None) -> None:
        """Lint after ``delay`` (the debounce by default); a newer call for the URI cancels this one."""
        self.cancel_pending(uri)
        if self.shutting_down:
            return
        delay = self.debounce if delay is None else delay

        async def later() -> None:
            try:
                if delay > 0:
                    await asyncio.sleep(delay)
                await self.lint_and_publish(uri)
            except asyncio.CancelledError:
                pass
            except Exception:  # logged; the next change lints again
                log.exception("lint of %s failed", uri)
            finally:
                if self.pending.get(uri) is task:
                    del self.pending[uri]

        task = asyncio.get_running_loop().create_task(later())
        self.pending[uri] = task

    def close(self, uri: str) -> None:
        """Clear the closed file, and take what its lints located elsewhere off those files."""
        self.cancel_pending(uri)
        self.linted.pop(uri, None)
        self.linted_with_fixes.pop(uri, None)
        self.published.pop(uri, None)
        for target, by_source in self.published.items():
            if by_source.pop(uri, None) is not None:
                self._publish(target)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def relint_all(self) -> None:
        self.linter.invalidate()
        for uri in list(self.workspace.text_documents):
            self.schedule(uri, 0)

    # ------------------------------------------------------------------ hover

    def _hover_blocking(self, uri: str, linted: Linted, position: lsp.Position) -> lsp.Hover | None:
        path = linted.path
        lines = convert.split_lines(linted.text)
        line, column = convert.position_to_point(position.line, position.character, lines, linted.bom)
        target = hover.target_at(linted.result, path, line, column)
        if target is None:
            return self._target_hover(linted, line)
        partial = any(d.code in ("TL001", "TL002") for d in linted.result.diagnostics)
        with long_numbers():  # a hover quotes config values and their products (numbers.long_numbers)
            text = hover.render_target(target, linted.estimate, partial=partial)
        if not text:
            return None
        text = shorten_numbers(text)
        (sl, sc), (el, ec) = convert.span_to_range(target.region, lines, linted.bom)
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=printable(text, keep="\n")),
                         range=lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec)))

    @staticmethod
    def _target_hover(linted: Linted, line: int) -> lsp.Hover | None:
        """On line 1, where no key is hovered: which framework release or checkout the file is
        judged against (the statement the other outputs give once per file)."""
        if line != 1 or linted.result is None:
            return None
        from trainlint.frameworks.target import target_of

        target = target_of(linted.result)
        if target is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=target["statement"]))

    async def hover_at(self, uri: str, position: lsp.Position) -> lsp.Hover | None:
        doc = self.workspace.text_documents.get(uri)
        if doc is None or self.shutting_down:
            return None
        loop = asyncio.get_running_loop()
        linted = self.linted.get(uri)
        if linted is None or linted.version != doc.version:
            # typed since the last lint (the debounce has not fired): positions must be current
            path = to_fs_path(uri) or uri
            fresh: tuple[Linted, dict] = await loop.run_in_executor(self.executor, self.lint_for_request, uri, path,
                                                                     doc.source, doc.version, self.open_texts())
            linted = fresh[0]
        if linted.result is None:
            return None
        return await loop.run_in_executor(self.hover_executor, self._hover_blocking, uri, linted, position)


WATCHERS = [lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_FILES]


STOP_GRACE = 0.5
"""Seconds a cancelled lint gets to reach a safe point before its worker is abandoned."""


WARM_UP_LIMIT = 60.0
"""Seconds lints queued behind the session's warm-up wait for it before they leave its worker."""

QUEUED_ATTEMPTS = 3
"""How many times a lint is queued again after the work ahead of it neither finished nor stopped."""

WARM_UP_DOCUMENTS = (
    ("trainlint-warm-up.json", '{"train_micro_batch_size_per_gpu": 1, "warm_up_key": 1}\n'),
    ("trainlint-warm-up.yml", "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\n"),
    ("trainlint-warm-up.sh", "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 \\\n"
                             "    --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1\n"),
)
"""What the session's warm-up lints (in memory, never written): one document of each format, a
DeepSpeed key that does not exist among them (the did-you-mean catalog), so that the modules,
schemas and catalogs a first lint loads are loaded before the first document's budget starts."""


def cancel_delay(token: cancel.Token) -> float:
    return time.perf_counter() - token.cancelled_at if token.cancelled_at is not None else 0.0


def over_budget(path: str, budget: float) -> Diagnostic:
    from trainlint.core.input_codes import input_diagnostic

    return input_diagnostic(
        "TL012", f"this document took longer than {budget:g} s to lint, so the editor shows no findings for it "
        "(run `trainlint check` on it; lintBudget in the initialization options raises the limit)",
        path=path, severity=Severity.WARNING)


def create_server() -> TrainlintServer:
    server = TrainlintServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: TrainlintServer, params: lsp.InitializeParams) -> None:
        ls.configure(params.initialization_options)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: TrainlintServer, params: lsp.InitializedParams) -> None:
        ls.warm_up()
        for message in ls.startup_errors:
            log.warning(message)
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=message))
        caps = ls.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps else None
        if watched is not None and watched.dynamic_registration:
            try:
                await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[lsp.Registration(
                    id="trainlint-config-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=WATCHERS))]))
            except Exception:  # the mtime check still notices changes on the next lint
                log.warning("could not register file watchers for the project config", exc_info=True)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TrainlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TrainlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TrainlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if os.path.basename(to_fs_path(uri) or "") in CONFIG_FILES:
            ls.relint_all()
        else:
            ls.schedule(uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TrainlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TrainlintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        if any(os.path.basename(to_fs_path(change.uri) or "") in CONFIG_FILES for change in params.changes):
            ls.relint_all()

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: TrainlintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        try:
            return await ls.hover_at(params.text_document.uri, params.position)
        except Exception:  # no hover rather than a failed request
            log.exception("hover failed")
            return None

    from trainlint.lsp import actions

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=actions.KINDS))
    async def on_code_action(ls: TrainlintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        try:
            return await actions.handle(ls, params, uri_for, to_lsp)
        except Exception:  # no actions rather than a failed request
            log.exception("code actions failed")
            return []

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: TrainlintServer, params: None) -> None:
        ls.shutting_down = True
        for uri in list(ls.pending):
            ls.cancel_pending(uri)
        for token in list(ls.live):
            token.cancel("shutdown")
        ls.executor.shutdown(wait=False, cancel_futures=True)
        ls.hover_executor.shutdown(wait=False, cancel_futures=True)

    @server.feature(lsp.EXIT)
    def on_exit(ls: TrainlintServer, params: None) -> None:
        # The LSP spec: exit code 0 if a shutdown request came first, else 1. pygls computes it but its
        # stdio loop swallows the SystemExit, so main() returns the code recorded here.
        ls.exit_code = 0 if ls.shutting_down else 1

    return server


class _OneLineDeserializeErrors(logging.Filter):
    """pygls logs a message it cannot read (bad params, already answered with InvalidParams) with
    its whole traceback; the editor's log gets one line: what pygls said and the error itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text.startswith("Unable to deserialize message") and "Traceback" in text:
            lines = [line.strip(" |+-") for line in text.splitlines()]
            errors = [line for line in lines if line and not line.startswith(("File ", "Traceback", "^", "~"))
                      and ("Error" in line or "Exception" in line) and ":" in line]
            record.msg = "Unable to deserialize message: " + (errors[-1] if errors else "invalid message")
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


def main(verbose: bool = False) -> int:
    # stderr is the editor's server log; pygls's own message tracing stays off even with -v
    logging.basicConfig(level=logging.WARNING, format="trainlint lsp: %(levelname)s %(message)s")
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_OneLineDeserializeErrors())
    log.setLevel(logging.DEBUG if verbose else logging.WARNING)
    server = create_server()
    server.start_io()
    # None: the input ended without an exit notification (the editor went away), a clean end too
    return server.exit_code or 0
