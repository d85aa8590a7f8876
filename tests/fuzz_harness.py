"""What a fuzzer feeds a text through: every way trainlint consumes a config.

Shared by the hypothesis tests (tests/test_fuzz.py) and the atheris target run by hand
(fuzz/atheris_check.py). ``exercise`` raises on anything that is not a clean outcome: an
exception escaping, a TL998/TL999 (trainlint's own bug, contained), or a hang (a watchdog).
"""

from __future__ import annotations

import json
import os
import signal
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from trainlint.adapters.base import LoadContext
from trainlint.files.checker import check_source
from trainlint.core.results import FileResult
from trainlint.project.config import ProjectConfig
from trainlint.project.engine import lint, settings_from
from trainlint.estimator import build_context, estimate
from trainlint.estimator.render import render_json, render_text
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.files.sources import SourceText

REPO = Path(__file__).resolve().parents[1]
# TRAINLINT_NO_SHARED=1 hides ../shared as in a fresh clone (as tests/conftest.py does; this module
# is also imported by fuzz/atheris_check.py, outside pytest, so it reads the switch itself)
CORPUS = (REPO.parent / "shared" / "corpus") if os.environ.get("TRAINLINT_NO_SHARED", "") in ("", "0") \
    else REPO.parent / "shared (hidden by TRAINLINT_NO_SHARED)" / "corpus"
HANG_SECONDS = 20
"""Far above anything a config takes (milliseconds); only a hang or a blow-up reaches it."""


class FuzzFailure(AssertionError):
    pass


@lru_cache(maxsize=1)
def registry():
    return build_registry(create_host([], None))


def _estimator(spec):
    return estimate(spec, build_context(spec, nodes=2, gpus_per_node=8))


def _settings():
    settings = settings_from(ProjectConfig())
    settings.estimate = _estimator
    return settings


@contextmanager
def watchdog(seconds: int = HANG_SECONDS) -> Iterator[None]:
    """Raise in the main thread when the body runs longer than ``seconds`` (POSIX only)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum, frame):
        raise FuzzFailure(f"no result after {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _no_internal_errors(results: list[FileResult], name: str) -> None:
    for result in results:
        for diag in result.diagnostics:
            if diag.code in ("TL998", "TL999"):
                raise FuzzFailure(f"{name}: {diag.code} {diag.message}")
            if diag.span.line < 1 or diag.span.column < 1:
                raise FuzzFailure(f"{name}: {diag.code} at an impossible position {diag.span}")


EXTRA_STEPS: list[Callable[[FileResult], None]] = []
"""Further consumers of a loaded result (suggest, the language server's conversions) register here."""


def exercise(name: str, text: str) -> list[FileResult]:
    """check -> rules (with estimates) -> estimate rendering -> suggest for one text; raise on a bad outcome."""
    with watchdog():
        loaded = check_source(SourceText(name, text), registry().adapters, LoadContext())
        results = lint([loaded], registry(), _settings())
        _no_internal_errors(results, name)
        outputs = []
        for spec in loaded.specs:
            est = _estimator(spec)
            render_text(est)
            outputs.append((name, est))
        if outputs:
            json.loads(render_json(outputs))
        for spec in loaded.specs:
            _suggest(spec)
        _language_server(name, text, loaded, results)
        for step in EXTRA_STEPS:
            step(loaded)
    return results


def _suggest(spec) -> None:
    """``trainlint suggest`` on the spec (small bounds: the point is the code paths, not the answer)."""
    from trainlint.layout.search import SearchError, SearchOptions, search

    ctx = build_context(spec, nodes=2, gpus_per_node=8)
    try:
        found = search(spec, ctx, SearchOptions(top=2, max_checked=10, max_structures=500, max_evaluated=5000))
    except SearchError:
        return  # a stated refusal (a run the estimator does not model)
    for suggestion in found.suggestions:
        if not suggestion.estimate.fits and suggestion.estimate.worst_stage.total > suggestion.estimate.capacity_bytes:
            raise FuzzFailure(f"suggested a layout over capacity: {suggestion.layout}")


def seed_files(limit_per_kind: int | None = None) -> list[Path]:
    """The examples, and the corpus configs when ../shared is present."""
    seeds = sorted(p for p in (REPO / "examples").iterdir() if p.is_file())
    if CORPUS.is_dir():
        corpus = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".json", ".yml", ".yaml", ".sh"))
        seeds += corpus[:limit_per_kind] if limit_per_kind else corpus
    return seeds


def _language_server(name: str, text: str, loaded: FileResult, results: list[FileResult]) -> None:
    """What the language server adds to a lint: LSP ranges for every diagnostic, and hovers
    over every line (skipped when pygls, an optional extra, is not installed)."""
    try:
        from trainlint.lsp import convert, hover
        from trainlint.lsp.server import to_lsp
    except ImportError:
        return
    lines = convert.split_lines(text)
    for result in results:
        for diag in result.diagnostics:
            converted = to_lsp(diag, lines, "file:///fuzz/" + name)
            start, end = converted.range.start, converted.range.end
            if (start.line, start.character) > (end.line, end.character) or start.line < 0 or start.character < 0:
                raise FuzzFailure(f"{name}: {diag.code} converts to a backwards range {converted.range}")
    for line_number in range(1, min(len(lines), 60) + 1):
        found = hover.field_at(loaded, name, line_number, 1 + len(lines[line_number - 1]) // 2)
        if found is not None:
            hover.render(found[0], found[1], _estimator)


# ============================================================== write-back and language server

ENCODINGS = {"utf-8": b"", "utf-8-sig": b"\xef\xbb\xbf", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff",
             "utf-32-le": b"\xff\xfe\x00\x00"}


def exercise_write_back(lines: list[str], ends: list[str], encoding: str, new_text: str, fail: str | None) -> None:
    """One file written back through trainlint.files.safe_write, checked: the new text lands with the
    file's encoding, BOM and line ends; a failure (``fail``: an os function that raises) leaves
    the old bytes and no temporary file. Raises AssertionError on any broken promise."""
    import errno
    import os
    import tempfile
    from unittest import mock

    from trainlint.files import safe_write

    raw = "".join(line + end for line, end in zip(lines, ends))
    codec = encoding.replace("-sig", "") if encoding != "utf-8-sig" else "utf-8"
    data = ENCODINGS[encoding] + raw.encode(codec, "surrogatepass")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.yml")
        with open(path, "wb") as handle:
            handle.write(data)
        snap = safe_write.snapshot(path)
        assert snap.text == raw.replace("\r\n", "\n").replace("\r", "\n")
        if fail is not None:
            def boom(*a, **kw):
                raise OSError(errno.ENOSPC, "No space left on device")
            with mock.patch.object(safe_write.os, fail, boom):
                try:
                    safe_write.write_back(path, new_text, snap.hash)
                except safe_write.WriteBackError:
                    pass
            with open(path, "rb") as handle:
                assert handle.read() == data
            assert [n for n in os.listdir(tmp) if n.startswith(".trainlint-")] == []
            return
        try:
            result = safe_write.write_back(path, new_text, snap.hash)
        except safe_write.WriteBackError as exc:
            assert "cannot encode" in str(exc), exc  # a lone surrogate in the new text
            with open(path, "rb") as handle:
                assert handle.read() == data
            return
        with open(path, "rb") as handle:
            written = handle.read()
        assert written.startswith(ENCODINGS[encoding]) or encoding == "utf-8"
        body = written[len(ENCODINGS[encoding]):].decode(codec)
        assert body.replace("\r\n", "\n").replace("\r", "\n") == new_text
        styles = {e for e in ends if e}
        if len(styles) == 1 and "\n" in new_text:
            style = styles.pop()
            assert body == new_text.replace("\n", style)
        if new_text == snap.text:
            assert written == data and not result.written


LSP_METHODS = ["initialize", "initialized", "textDocument/didOpen", "textDocument/didChange", "textDocument/didSave",
               "textDocument/didClose", "textDocument/hover", "textDocument/codeAction", "workspace/didChangeWatchedFiles",
               "$/cancelRequest", "shutdown", "no/such/method"]


def exercise_lsp(messages: list[dict]) -> None:
    """JSON-RPC messages (valid or not) into the server's protocol in-process: no exception
    escapes, and every request (a message with an id and a method) gets exactly one answer."""
    import asyncio
    import json

    from trainlint.lsp.server import create_server

    server = create_server()
    protocol = server.protocol
    sent: list[dict] = []

    class Sink:
        def write(self, data) -> None:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            sent.append(json.loads(text.split("\r\n\r\n", 1)[-1]))

        def close(self) -> None:
            pass

    protocol.writer = Sink()

    async def run() -> None:
        for message in messages:
            try:
                structured = json.loads(json.dumps(message), object_hook=protocol.structure_message)
            except Exception:  # noqa: BLE001 - pygls's reader logs and drops what it cannot parse
                continue
            protocol.handle_message(structured)
            await asyncio.sleep(0)
        for _ in range(50):
            await asyncio.sleep(0.01)
            if not protocol._request_futures:
                break
        for task in list(server.pending.values()):
            task.cancel()
        await asyncio.sleep(0)

    asyncio.run(run())
    server.executor.shutdown(wait=True, cancel_futures=True)
    server.hover_executor.shutdown(wait=True, cancel_futures=True)
    # requests to request methods (an id on a notification method, e.g. `initialized`, is not checked)
    request_methods = {"initialize", "textDocument/hover", "textDocument/codeAction", "shutdown", "no/such/method"}
    requests = [m["id"] for m in messages if "id" in m and m.get("method") in request_methods
                and isinstance(m.get("id"), (int, str)) and not isinstance(m.get("id"), bool)]
    # every message with an id is a request to JSON-RPC, also one to a notification method (it is
    # answered, with an error): an id the client used twice is answered twice, rightly
    ids = [m["id"] for m in messages if "id" in m]
    answered = [m.get("id") for m in sent if "method" not in m]
    for msg_id in set(requests):
        if ids.count(msg_id) == 1 and not protocol._shutdown:
            assert answered.count(msg_id) == 1, (msg_id, messages, sent)
