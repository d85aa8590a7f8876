"""The trainlint language server: diagnostics on open/change/save, cleared on close; hover
shows what a value contributes to the estimate.

Linting runs in-process on the editor's buffer (not the file on disk), with the project
config found from the document's directory exactly as ``trainlint check`` finds it, so codes
and positions match the CLI. Any exception while linting becomes one TL999 diagnostic: the
server never dies on a document.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import traceback
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from trainlint import __version__
from trainlint.diagnostics import Severity
from trainlint.lsp import convert, hover

log = logging.getLogger(__name__)

DOCS_URL = "https://github.com/trainlint/trainlint/blob/main/docs/rules.md"
DEFAULT_DEBOUNCE = 0.3
_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}


def session_args() -> argparse.Namespace:
    """The flags ``trainlint check`` would have with none given: the project config decides."""
    return argparse.Namespace(select=None, extend_select=[], ignore=[], gpu=None, nodes=None, gpus_per_node=None,
                              model=None, config=None, isolated=False, env=[], run=[])


@dataclass
class Linted:
    """The last lint of a document: what hover needs."""

    text: str
    result: object  # FileResult after the rules ran
    session: object


class Linter:
    """Lints buffers; one LintSession per project config (re-read when the config file changes)."""

    def __init__(self) -> None:
        self.args = session_args()
        self._sessions: dict[tuple, object] = {}

    def session_for(self, path: str):
        from trainlint.commands.check import open_session
        from trainlint.config import find_config

        start = Path(path).parent
        config = find_config(start)
        mtime = os.stat(config).st_mtime_ns if config else None
        key = (str(config) if config else None, mtime)
        if key not in self._sessions:
            self._sessions[key] = open_session(self.args, start)
        return self._sessions[key]

    def lint(self, path: str, text: str) -> Linted:
        """Load and lint one buffer; the results of the rules (one FileResult, or None when no
        adapter claims the file)."""
        from trainlint.adapters.base import LoadContext
        from trainlint.checker import check_source
        from trainlint.commands.check import declare_cluster
        from trainlint.engine import lint
        from trainlint.sources import SourceText

        session = self.session_for(path)
        result = check_source(SourceText(path, text), session.registry.adapters,
                              LoadContext(environment=session.environment))
        if result.format is None:
            return Linted(text, None, session)
        results = [result]
        declare_cluster(results, self.args, session.project)
        linted = lint(results, session.registry, session.settings)
        return Linted(text, linted[0] if linted else None, session)


def _same_file(a: str | None, b: str) -> bool:
    if a is None:
        return True
    try:
        return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))
    except (OSError, ValueError):
        return False


def to_lsp(diag, lines: list[str], uri: str) -> lsp.Diagnostic:
    (sl, sc), (el, ec) = convert.span_to_range(diag.span, lines)
    message = diag.message + (f"\nfix: {diag.fix}" if diag.fix else "")
    related = []
    for rel in diag.related:
        rel_uri = from_fs_path(os.path.abspath(rel.path)) if rel.path else uri
        rel_lines = lines if rel_uri == uri else []
        (rsl, rsc), (rel_, rec) = convert.span_to_range(rel.span, rel_lines)
        related.append(lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=rel_uri or uri, range=lsp.Range(lsp.Position(rsl, rsc), lsp.Position(rel_, rec))),
            message=rel.message))
    anchor = diag.code.lower() + (f"-{diag.name}" if diag.name else "")
    return lsp.Diagnostic(
        range=lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec)),
        message=message,
        severity=_SEVERITY.get(diag.severity, lsp.DiagnosticSeverity.Warning),
        code=diag.code,
        code_description=lsp.CodeDescription(href=f"{DOCS_URL}#{anchor}"),
        source="trainlint",
        related_information=related or None,
    )


def internal_error(exc: BaseException) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
        message=f"trainlint internal error: {type(exc).__name__}: {exc}",
        severity=lsp.DiagnosticSeverity.Error, code="TL999", source="trainlint",
        code_description=lsp.CodeDescription(href=f"{DOCS_URL}#tl999-internal-error"))


class TrainlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("trainlint", __version__)
        self.linter = Linter()
        self.debounce = DEFAULT_DEBOUNCE
        self.pending: dict[str, asyncio.Task] = {}
        self.linted: dict[str, Linted] = {}

    def lint_and_publish(self, uri: str) -> None:
        try:
            document = self.workspace.get_text_document(uri)
            text = document.source
        except Exception as exc:  # noqa: BLE001
            self._publish(uri, [internal_error(exc)], None)
            return
        path = to_fs_path(uri) or uri
        lines = convert.split_lines(text)
        try:
            linted = self.linter.lint(path, text)
            if linted.result is None:
                self._publish(uri, [], document.version)
                self.linted.pop(uri, None)
                return
            diagnostics = [to_lsp(d, lines, uri) for d in sorted(linted.result.diagnostics, key=lambda d: d.sort_key())
                           if _same_file(d.path, path)]
            self.linted[uri] = linted
        except Exception as exc:  # noqa: BLE001 - an editor buffer must never kill the server
            log.error("lint failed for %s:\n%s", uri, traceback.format_exc())
            diagnostics = [internal_error(exc)]
        self._publish(uri, diagnostics, document.version)

    def _publish(self, uri: str, diagnostics: list, version: int | None) -> None:
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def cancel_pending(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None and not task.done():
            task.cancel()

    def schedule(self, uri: str) -> None:
        """Lint after the debounce delay; a newer change cancels this one."""
        self.cancel_pending(uri)

        async def later() -> None:
            await asyncio.sleep(self.debounce)
            self.pending.pop(uri, None)
            self.lint_and_publish(uri)

        self.pending[uri] = asyncio.get_running_loop().create_task(later())

    def hover_at(self, uri: str, position: lsp.Position) -> lsp.Hover | None:
        linted = self.linted.get(uri)
        if linted is None or linted.result is None:
            return None
        path = to_fs_path(uri) or uri
        lines = convert.split_lines(linted.text)
        line, column = convert.position_to_point(position.line, position.character, lines)
        found = hover.field_at(linted.result, path, line, column)
        if found is None:
            return None
        spec, field_name = found
        text = hover.render(spec, field_name, linted.session.settings.estimate)
        if text is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))


def create_server() -> TrainlintServer:
    server = TrainlintServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: TrainlintServer, params: lsp.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("debounce"), (int, float)) \
                and not isinstance(options.get("debounce"), bool) and options["debounce"] >= 0:
            ls.debounce = float(options["debounce"])

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TrainlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.cancel_pending(params.text_document.uri)
        ls.lint_and_publish(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TrainlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TrainlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.cancel_pending(params.text_document.uri)
        ls.lint_and_publish(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TrainlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.cancel_pending(uri)
        ls.linted.pop(uri, None)
        ls._publish(uri, [], None)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: TrainlintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        try:
            return ls.hover_at(params.text_document.uri, params.position)
        except Exception:  # noqa: BLE001 - no hover rather than a failed request
            log.error("hover failed:\n%s", traceback.format_exc())
            return None

    return server


def main() -> int:
    create_server().start_io()
    return 0
