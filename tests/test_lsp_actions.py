"""Editor quick fixes through a real LSP client over stdio (pytest-lsp): each finding's fix as a
code action (safe ones as ``quickfix``), "disable for this line" and "add to baseline", applied
as workspace edits; the buffer re-linted after the edit no longer has the finding."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs the lsp extra: pip install 'trainlint[lsp]'")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from trainlint.lsp import convert  # noqa: E402
from trainlint.lsp.actions import UNSAFE_KIND  # noqa: E402

from test_lsp import _start, change, mark, open_doc, published  # noqa: E402

e2e = pytest.mark.asyncio(loop_scope="module")
SERVER = [sys.executable, "-m", "trainlint", "lsp"]

DS = '{\n  "train_batch_size": 8,\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimisation": {"stage": 1}\n}\n'
NEOX = ("num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\nmax_position_embeddings: 128\n"
        "train_micro_batch_size_per_gpu: 1\nzero_optimisation: {stage: 1}  # ZeRO\nlr: 6e-4\n")
MEGATRON = """#!/bin/bash
torchrun --nproc_per_node 1 pretrain_gpt.py \\
    --num-layers 2 --hidden-size 64 --num-attention-heads 4 \\
    --seq-length 128 --max-position-embeddings 128 --batch-size 1 \\
    --global-batch-size 8
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lsp-actions")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module")
async def client(lsp_client: LanguageClient, workspace: Path):
    await _start(lsp_client, workspace, {"debounce": 0.05})
    yield
    await lsp_client.shutdown_session()


async def actions_at(client: LanguageClient, path: Path, diag: lsp.Diagnostic) -> list[lsp.CodeAction]:
    return await asyncio.wait_for(client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), range=diag.range,
        context=lsp.CodeActionContext(diagnostics=[diag]))), 15)


def apply_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP text edits (UTF-16 positions) as an editor does."""
    lines = convert.split_lines(text)

    def offset(position: lsp.Position) -> int:
        before = sum(len(line) + 1 for line in lines[:position.line])
        column = convert.utf16_to_column(lines[position.line], position.character) - 1
        return before + column

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


async def relint(client: LanguageClient, path: Path, text: str, version: int) -> list[lsp.Diagnostic]:
    start = mark(client)
    change(client, path, text, version)
    return await published(client, path.as_uri(), start)


@e2e
async def test_safe_fix_is_a_preferred_quickfix_and_removes_the_finding(client: LanguageClient, workspace: Path):
    path = workspace / "ds" / "ds_config.json"
    diags = await open_doc(client, path, DS)
    tl004 = next(d for d in diags if d.code == "TL004")
    actions = await actions_at(client, path, tl004)
    (fix,) = [a for a in actions if a.title.startswith("Fix TL004")]
    assert fix.kind == lsp.CodeActionKind.QuickFix and fix.is_preferred
    assert [d.code for d in fix.diagnostics] == ["TL004"]
    (edit,) = fix.edit.changes[path.as_uri()]
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.character, edit.new_text) == \
        (3, 2, 21, '"zero_optimization"')
    # JSON has no comments: no "disable for this line"; no baseline configured: no "add to baseline"
    assert not any(a.title.startswith(("Disable", "Add")) for a in actions)
    fixed = apply_edits(DS, [edit])
    assert fixed == DS.replace("zero_optimisation", "zero_optimization")
    assert not any(d.code == "TL004" for d in await relint(client, path, fixed, 2))


@e2e
async def test_unsafe_fix_is_offered_apart(client: LanguageClient, workspace: Path):
    path = workspace / "unsafe" / "ds_config.json"
    text = '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_clip": 1.0}\n'
    diags = await open_doc(client, path, text)
    tl004 = next(d for d in diags if d.code == "TL004")
    (fix,) = [a for a in await actions_at(client, path, tl004) if a.title.startswith("Fix")]
    assert fix.kind == lsp.CodeActionKind.RefactorRewrite and fix.title.endswith("(unsafe)") and not fix.is_preferred


@e2e
async def test_disable_for_this_line_in_yaml(client: LanguageClient, workspace: Path):
    path = workspace / "neox" / "neox.yml"
    diags = await open_doc(client, path, NEOX, "yaml")
    tl004 = next(d for d in diags if d.code == "TL004")
    actions = await actions_at(client, path, tl004)
    (disable,) = [a for a in actions if a.title == "Disable TL004 for this line"]
    (edit,) = disable.edit.changes[path.as_uri()]
    disabled = apply_edits(NEOX, [edit])
    assert disabled.split("\n")[6] == "zero_optimisation: {stage: 1}  # ZeRO  # trainlint: disable=TL004"
    after = await relint(client, path, disabled, 2)
    assert not any(d.code in ("TL004", "TL020") for d in after)  # suppressed, and the comment is used
    # a second code on the same line joins the existing comment
    tl009_text = disabled.replace("lr: 6e-4", "lr: 6e-4  # trainlint: disable=TL900")
    after = await relint(client, path, tl009_text, 3)
    tl009 = next(d for d in after if d.code == "TL009")
    (join,) = [a for a in await actions_at(client, path, tl009) if a.title.startswith("Disable")]
    joined = apply_edits(tl009_text, join.edit.changes[path.as_uri()])
    assert joined.split("\n")[7] == "lr: 6e-4  # trainlint: disable=TL900,TL009"


@e2e
async def test_megatron_fix_on_a_continuation_line_and_no_disable_there(client: LanguageClient, workspace: Path):
    path = workspace / "megatron" / "train.sh"
    diags = await open_doc(client, path, MEGATRON, "shellscript")
    tl008 = next(d for d in diags if d.code == "TL008")
    actions = await actions_at(client, path, tl008)
    assert not any(a.title.startswith("Disable") for a in actions)  # a comment would end the command
    (fix,) = [a for a in actions if a.title.startswith("Fix TL008")]
    fixed = apply_edits(MEGATRON, fix.edit.changes[path.as_uri()])
    assert fixed == MEGATRON.replace("--batch-size 1", "--micro-batch-size 1")
    assert not any(d.code == "TL008" for d in await relint(client, path, fixed, 2))


@e2e
async def test_add_to_baseline(client: LanguageClient, workspace: Path):
    folder = workspace / "adopting"
    folder.mkdir()
    (folder / ".trainlint.toml").write_text('baseline = "trainlint-baseline.json"\n')
    path = folder / "ds_config.json"
    diags = await open_doc(client, path, DS)
    tl004 = next(d for d in diags if d.code == "TL004")
    (add,) = [a for a in await actions_at(client, path, tl004) if a.title.startswith("Add TL004")]
    baseline = folder / "trainlint-baseline.json"
    create, text_edit = add.edit.document_changes
    assert create.kind == "create" and create.uri == baseline.as_uri()
    baseline.write_text(text_edit.edits[0].new_text, encoding="utf-8")  # what the editor does with the edit
    recorded = json.loads(baseline.read_text())["findings"]
    assert [(r["code"], r["path"]) for r in recorded] == [("TL004", "ds_config.json")]
    # the editor and the CLI now both leave it out
    assert not any(d.code == "TL004" for d in await relint(client, path, DS, 2))
    import subprocess

    done = subprocess.run([sys.executable, "-m", "trainlint", "check", "--format", "json", str(path)],
                          capture_output=True, text=True, cwd=folder, timeout=120)
    cli = [d["code"] for f in json.loads(done.stdout)["files"] for d in f["diagnostics"]]
    assert "TL004" not in cli and "1 finding in the baseline" in done.stderr, (cli, done.stderr)
    # a second finding is added to the existing file (a whole-file replacement)
    more = DS.replace('"train_batch_size": 8', '"train_batch_size": 8,\n  "gradient_clippin": 1.0')
    after = await relint(client, path, more, 3)
    second = next(d for d in after if d.code == "TL004")
    (add,) = [a for a in await actions_at(client, path, second) if a.title.startswith("Add TL004")]
    (edit,) = add.edit.changes[baseline.as_uri()]
    assert edit.range.start == lsp.Position(0, 0)
    assert len(json.loads(edit.new_text)["findings"]) == 2


@e2e
async def test_layout_fix_is_the_adapter_written_edit_as_check_diff_shows_it(client: LanguageClient, workspace: Path,
                                                                            tmp_path_factory):
    """TL201's fix is a layout change (Finding.changes): the editor offers the edits the run's
    adapter writes (its writer, the round trip verified), the same as ``check --fix
    --unsafe-fixes`` writes, as an unsafe action (never preferred)."""
    from test_lsp import LLAMA

    from trainlint.cli import main

    path = workspace / "layout" / "llama.sh"
    diags = await open_doc(client, path, LLAMA, "shellscript")
    tl201 = next(d for d in diags if d.code == "TL201")
    (fix,) = [a for a in await actions_at(client, path, tl201) if a.title.startswith("Fix TL201")]
    assert fix.kind == UNSAFE_KIND and not fix.is_preferred and fix.title.endswith("(unsafe)")
    fixed = apply_edits(LLAMA, fix.edit.changes[path.as_uri()])
    copy = tmp_path_factory.mktemp("cli-fix") / "llama.sh"
    copy.write_text(LLAMA, encoding="utf-8")
    main(["check", "--isolated", "--fix", "--unsafe-fixes", "--select", "TL201", str(copy)])
    assert fixed == copy.read_text(encoding="utf-8") != LLAMA
    assert "TL201" not in {d.code for d in await relint(client, path, fixed, 2)}


BRIDGE_LAUNCH = """#!/bin/bash
torchrun --nproc_per_node=8 scripts/training/run_recipe.py \\
    --recipe llama3_8b_pretrain_2gpu_h100_bf16_config \\
    'train.micro_batch_size=4' 'train.global_batch_size=256' 'dataset.seq_length=8192'
"""


@e2e
async def test_layout_fix_on_a_bridge_launch_line(client: LanguageClient, workspace: Path, tmp_path_factory):
    """A Megatron-Bridge recipe launch line: TL201's layout fix is the Bridge writer's edit (overrides
    replaced and appended in the line's quoting), the same as ``check --fix --unsafe-fixes`` writes."""
    from trainlint.cli import main

    path = workspace / "bridge" / "train.sh"
    diags = await open_doc(client, path, BRIDGE_LAUNCH, "shellscript")
    tl201 = next(d for d in diags if d.code == "TL201")
    (fix,) = [a for a in await actions_at(client, path, tl201) if a.title.startswith("Fix TL201")]
    fixed = apply_edits(BRIDGE_LAUNCH, fix.edit.changes[path.as_uri()])
    copy = tmp_path_factory.mktemp("cli-fix-bridge") / "train.sh"
    copy.write_text(BRIDGE_LAUNCH, encoding="utf-8")
    main(["check", "--isolated", "--fix", "--unsafe-fixes", "--select", "TL201", str(copy)])
    assert fixed == copy.read_text(encoding="utf-8") != BRIDGE_LAUNCH
    assert "'model.tensor_model_parallel_size=2'" in fixed  # an override appended in the line's quoting


CONTINUED = """GPT_ARGS=" \\
    --num-layers 24 \\
    --hiden-size 1024 \\
    --num-attention-heads 16 \\
    --checkpoint-activations \\
    --fp16"
torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS
"""


@e2e
async def test_continued_string_findings_at_their_words_and_quick_fixes_edit_only_them(client: LanguageClient,
                                                                                       workspace: Path):
    """Issue 27: in a backslash-continued string each finding is on its flag, its quick fix edits
    that flag only (the same edit as `check --fix`), and the use site `$GPT_ARGS` is related."""
    path = workspace / "continued" / "run.sh"
    diags = await open_doc(client, path, CONTINUED, "shellscript")
    # TL008's rename is unsafe while the release is assumed (older releases read the old flag:
    # issue 28), so the editor offers it, but not as the preferred quick fix
    for code, line, old, new, safe in (("TL004", 2, "--hiden-size", "--hidden-size", True),
                                       ("TL008", 4, "--checkpoint-activations", "--recompute-activations", False)):
        diag = next(d for d in diags if d.code == code)
        assert (diag.range.start.line, diag.range.start.character, diag.range.end.character) == (line, 4, 4 + len(old))
        (use,) = diag.related_information
        assert (use.location.range.start.line, use.location.range.start.character) == (6, 44)
        (fix,) = [a for a in await actions_at(client, path, diag) if a.title.startswith(f"Fix {code}")]
        assert bool(fix.is_preferred) is safe
        assert fix.kind == (lsp.CodeActionKind.QuickFix if safe else lsp.CodeActionKind.RefactorRewrite)
        (edit,) = fix.edit.changes[path.as_uri()]
        assert (edit.range.start.line, edit.range.start.character, edit.range.end.line, edit.range.end.character,
                edit.new_text) == (line, 4, line, 4 + len(old), new)
        assert apply_edits(CONTINUED, [edit]) == CONTINUED.replace(old, new)
