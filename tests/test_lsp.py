"""End-to-end tests of ``trainlint lsp`` through a real LSP client over stdio (pytest-lsp)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs the lsp extra: pip install 'trainlint[lsp]'")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BAD_JSON = '{"train_batch_size": 8, "zero_optimization": {"stage": "two"}}\n'
FIXED_JSON = '{"train_batch_size": 8, "zero_optimization": {"stage": 2}}\n'


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "trainlint", "lsp"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    params = lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(),
        root_uri=tmp_path.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")],
        initialization_options={"debounce": 0.05},
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def open_doc(client: LanguageClient, path: Path, text: str, language: str = "json") -> list[lsp.Diagnostic]:
    path.write_text(text, encoding="utf-8")
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=path.as_uri(), language_id=language, version=1, text=text)))
    await client.wait_for_notification("textDocument/publishDiagnostics")
    return list(client.diagnostics[path.as_uri()])


async def change_doc(client: LanguageClient, path: Path, text: str, version: int) -> list[lsp.Diagnostic]:
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
    await client.wait_for_notification("textDocument/publishDiagnostics")
    return list(client.diagnostics[path.as_uri()])


def cli_positions(path: Path) -> list[tuple[str, int, int, int, int]]:
    out = subprocess.run([sys.executable, "-m", "trainlint", "check", "--format", "json", str(path)],
                         capture_output=True, text=True, check=False).stdout
    diags = json.loads(out)["files"][0]["diagnostics"]
    return sorted((d["code"], d["line"] - 1, d["column"] - 1, d["end_line"] - 1, d["end_column"] - 1) for d in diags)


def lsp_positions(diags: list[lsp.Diagnostic]) -> list[tuple[str, int, int, int, int]]:
    return sorted((d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
                  for d in diags)


@pytest.mark.asyncio
async def test_diagnostics_match_cli_then_change_and_close(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "ds_config.json"
    diags = await open_doc(client, path, BAD_JSON)
    assert "TL005" in {d.code for d in diags}
    assert lsp_positions(diags) == cli_positions(path)
    tl005 = next(d for d in diags if d.code == "TL005")
    assert tl005.source == "trainlint"
    assert tl005.severity == lsp.DiagnosticSeverity.Error
    assert tl005.code_description.href.endswith("docs/rules.md#tl005-wrong-type")

    diags = await change_doc(client, path, FIXED_JSON, 2)
    assert not [d for d in diags if d.severity == lsp.DiagnosticSeverity.Error]

    client.text_document_did_close(lsp.DidCloseTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri())))
    await client.wait_for_notification("textDocument/publishDiagnostics")
    assert list(client.diagnostics[path.as_uri()]) == []


@pytest.mark.asyncio
async def test_rapid_changes_are_debounced_to_the_last(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "ds_config.json"
    await open_doc(client, path, FIXED_JSON)
    for version in range(2, 6):  # each change cancels the pending lint
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=BAD_JSON)]))
    await client.wait_for_notification("textDocument/publishDiagnostics")
    assert "TL005" in {d.code for d in client.diagnostics[path.as_uri()]}


@pytest.mark.asyncio
async def test_malformed_json_reports_tl002_and_server_survives(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "ds_config.json"
    text = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2,,}\n}\n'
    diags = await open_doc(client, path, text)
    tl002 = [d for d in diags if d.code == "TL002"]
    assert tl002 and tl002[0].range.start.line == 2
    assert lsp_positions(diags) == cli_positions(path)

    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), position=lsp.Position(line=1, character=5)))
    assert hover is None  # answered (no estimate for a broken file), not crashed


@pytest.mark.asyncio
async def test_astral_characters_use_utf16_columns(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "ds_config.json"
    text = '{"comment_\U0001F600": 1, "zero_optimization": {"stage": "two"}}\n'
    diags = await open_doc(client, path, text)
    tl005 = next(d for d in diags if d.code == "TL005")
    # the CLI counts code points; LSP counts UTF-16 units: one more for the emoji
    cli = next(p for p in cli_positions(path) if p[0] == "TL005")
    assert tl005.range.start.character == cli[2] + 1


@pytest.mark.asyncio
async def test_hover_on_micro_batch_shows_activation_memory(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.sh"
    text = (EXAMPLES / "megatron_gpt_2.7b_network_bound.sh").read_text(encoding="utf-8")
    await open_doc(client, path, text, "shellscript")
    line_no, line = next((i, ln) for i, ln in enumerate(text.splitlines()) if "--micro-batch-size" in ln)
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()),
        position=lsp.Position(line=line_no, character=line.index("--micro-batch-size") + 3)))
    assert hover is not None and "activation" in hover.contents.value


@pytest.mark.asyncio
async def test_hover_says_what_is_missing(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.sh"
    text = (EXAMPLES / "megatron_gpt_8b.sh").read_text(encoding="utf-8")
    await open_doc(client, path, text, "shellscript")
    line_no, line = next((i, ln) for i, ln in enumerate(text.splitlines()) if "--micro-batch-size" in ln)
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()),
        position=lsp.Position(line=line_no, character=line.index("--micro-batch-size") + 3)))
    assert hover is not None and "missing" in hover.contents.value and "vocab" in hover.contents.value


@pytest.mark.asyncio
async def test_workspace_project_config_is_used(client: LanguageClient, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL900", "TL005"]\n', encoding="utf-8")
    path = tmp_path / "ds_config.json"
    diags = await open_doc(client, path, BAD_JSON)
    assert diags == []


@pytest.mark.asyncio
async def test_unclaimed_file_gets_no_diagnostics(client: LanguageClient, tmp_path: Path):
    diags = await open_doc(client, tmp_path / "notes.txt", "hello\n", "plaintext")
    assert diags == []


def test_convert_astral_and_round_trip():
    from trainlint.lsp import convert
    from trainlint.positions import Span

    lines = convert.split_lines('a\U0001F600b = "x"\nnext')
    assert convert.span_to_range(Span(1, 3, 1, 4), lines) == ((0, 3), (0, 4))  # "b" after a 2-unit emoji
    assert convert.position_to_point(0, 3, lines) == (1, 3)
    assert convert.position_to_point(1, 0, lines) == (2, 1)


def test_lsp_without_pygls_says_how_to_install():
    code = ("import sys; sys.modules['pygls'] = None; sys.modules['pygls.lsp.server'] = None; "
            "from trainlint.cli import main; sys.exit(main(['lsp']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "pip install 'trainlint[lsp]'" in proc.stderr
