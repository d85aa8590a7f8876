"""Code actions of the language server: each finding's fix, "disable for this line" and "add to
baseline", applied by the editor as workspace edits.

* A finding with edits offers them: a safe fix as ``quickfix`` (preferred: what
  ``check --fix`` applies), an unsafe one as ``refactor.rewrite`` titled "(unsafe)", so that an
  editor's "fix all" never applies it. Display-only fixes stay in the message. As under
  ``check --fix``, a fix of the buffer is offered only when the buffer, read again by its adapter
  with the fix applied, changes no setting the fix does not name (:mod:`trainlint.project.fix_check`).
* "Disable CODE for this line": a ``# trainlint: disable=CODE`` comment at the end of the
  finding's line (added to the codes of one already there). Not offered in JSON (no comments), nor
  on a shell line continued with ``\\`` or inside such a command, where a comment would end the
  command; not in a YAML block scalar, where it would become text.
* "Add CODE to the baseline": when the project config names a ``baseline`` file, its new text
  with the finding recorded (the file is created when it does not exist yet).

The edits are computed from the lint the server published (the buffer's text), so their ranges
match the diagnostics the editor shows.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from trainlint.core.framework import framework_of
from trainlint.core.diagnostics import Applicability, Diagnostic
from trainlint.lsp import convert

UNSAFE_KIND = lsp.CodeActionKind.RefactorRewrite
KINDS = [lsp.CodeActionKind.QuickFix, UNSAFE_KIND]
_DIRECTIVE_AT_END = re.compile(r"#\s*trainlint:\s*disable(?:-line)?\s*=\s*(?P<codes>[A-Za-z0-9_,\s-]+?)\s*$")


def _range(span, lines: list[str], bom: bool) -> lsp.Range:
    (sl, sc), (el, ec) = convert.span_to_range(span, lines, bom)
    return lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec))


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    start_a, end_a = (a.start.line, a.start.character), (a.end.line, a.end.character)
    start_b, end_b = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return start_a <= end_b and start_b <= end_a


def code_actions(linted, uri: str, requested: lsp.Range, uri_for, to_lsp) -> list[lsp.CodeAction]:
    """The actions for the findings of ``linted`` (a :class:`~trainlint.lsp.workspace.Linted`)
    in the buffer ``uri`` whose range meets ``requested``."""
    if linted is None or linted.result is None:
        return []
    path = linted.path
    lines = convert.split_lines(linted.text)
    actions: list[lsp.CodeAction] = []
    for diag in linted.by_path.get(path, []):
        where = _range(diag.span, lines, linted.bom)
        if not _overlaps(where, requested):
            continue
        shown = to_lsp(diag, lines, uri, bom=linted.bom)
        fix = _fix_action(diag, linted, uri, uri_for, shown)
        if fix is not None:
            actions.append(fix)
        disable = _disable_action(diag, linted, uri, lines, shown)
        if disable is not None:
            actions.append(disable)
        baseline = _baseline_action(diag, linted, shown, uri_for)
        if baseline is not None:
            actions.append(baseline)
    return actions


def _lines_of(target: str, linted) -> tuple[list[str], bool]:
    if os.path.abspath(target) == os.path.abspath(linted.path):
        return convert.split_lines(linted.text), linted.bom
    return convert.split_lines(linted.texts.get(target, "")), False


def _fix_action(diag: Diagnostic, linted, uri: str, uri_for, shown: lsp.Diagnostic) -> lsp.CodeAction | None:
    if not diag.edits or diag.applicability not in (Applicability.SAFE, Applicability.UNSAFE):
        return None
    if _refused(diag, linted):
        return None
    changes: dict[str, list[lsp.TextEdit]] = {}
    for edit in diag.edits:
        target = edit.path or diag.path or linted.path
        target_uri = uri if os.path.abspath(target) == os.path.abspath(linted.path) else uri_for(target)
        lines, bom = _lines_of(target, linted)
        changes.setdefault(target_uri, []).append(lsp.TextEdit(range=_range(edit.span, lines, bom), new_text=edit.content))
    safe = diag.applicability is Applicability.SAFE
    return lsp.CodeAction(
        title=f"Fix {diag.code}: {diag.fix or 'apply the fix'}" + ("" if safe else " (unsafe)"),
        kind=lsp.CodeActionKind.QuickFix if safe else UNSAFE_KIND,
        diagnostics=[shown], is_preferred=safe, edit=lsp.WorkspaceEdit(changes=changes))


def _refused(diag: Diagnostic, linted) -> bool:
    """Whether the fix, applied to the buffer, changes a setting it does not name (the check of
    ``check --fix``). Fixes with edits in other files are checked by ``check --fix`` only."""
    from trainlint.project import fix_check
    from trainlint.project.fixes import EditOutsideText, Fix, apply

    path = linted.path
    if any(os.path.abspath(edit.path or diag.path or path) != os.path.abspath(path) for edit in diag.edits):
        return False
    session = linted.session
    try:
        after = apply(linted.text, [Fix(path, diag, diag.edits)])
    except EditOutsideText:
        return True
    refusal = fix_check.check_edits([linted.result], path, linted.text, after, diag.edits,
                                    getattr(session, "adapters", []), dict(getattr(session, "environment", {}) or {}))
    return refusal is not None


def _disable_action(diag: Diagnostic, linted, uri: str, lines: list[str], shown: lsp.Diagnostic) -> lsp.CodeAction | None:
    from trainlint.project.selection import UNSUPPRESSIBLE

    path = linted.path
    if diag.code in UNSUPPRESSIBLE or path.lower().endswith((".json", ".jsonc")) or diag.code == "TL020":
        return None
    row = diag.span.line - 1
    if not 0 <= row < len(lines) or not _comment_is_safe(lines, row, linted.result.format):
        return None
    line = lines[row]
    existing = _DIRECTIVE_AT_END.search(line)
    if existing:
        codes = [c.strip() for c in existing.group("codes").split(",") if c.strip()]
        if diag.code in codes:
            return None
        start, end = existing.start("codes"), existing.end("codes")
        new_text = ",".join([*codes, diag.code])
    else:
        start = end = len(line.rstrip())
        new_text = f"  # trainlint: disable={diag.code}"
    shift = 1 if linted.bom and row == 0 else 0
    edit_range = lsp.Range(lsp.Position(row, convert.column_to_utf16(line, start + 1) + shift),
                           lsp.Position(row, convert.column_to_utf16(line, end + 1) + shift))
    return lsp.CodeAction(
        title=f"Disable {diag.code} for this line", kind=lsp.CodeActionKind.QuickFix, diagnostics=[shown],
        edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=edit_range, new_text=new_text)]}))


_BLOCK_SCALAR = re.compile(r":\s*[|>][+-]?\d*\s*(#.*)?$")


def _comment_is_safe(lines: list[str], row: int, fmt: str | None) -> bool:
    """Whether a comment at the end of ``lines[row]`` is a comment and changes nothing else."""
    line = lines[row]
    if line.rstrip().endswith("\\") or (row > 0 and lines[row - 1].rstrip().endswith("\\")):
        return False  # continued shell lines are one command: a comment would end it
    if fmt and framework_of(fmt).shell_syntax():
        # not inside a quoted string spanning lines (checked on the line itself: balanced quotes)
        return line.count('"') % 2 == 0 and line.count("'") % 2 == 0
    # YAML: not a line of a block scalar (indented under `key: |`), where it would become text
    indent = len(line) - len(line.lstrip())
    for above in range(row - 1, -1, -1):
        text = lines[above]
        if text.strip() and len(text) - len(text.lstrip()) < indent:
            return not _BLOCK_SCALAR.search(text)
    return True


async def handle(ls, params: lsp.CodeActionParams, uri_for, to_lsp) -> list[lsp.CodeAction]:
    """The server's textDocument/codeAction: from the last lint of the buffer, or a fresh one
    when the buffer changed since (so that ranges are current). ``uri_for`` and ``to_lsp``: the
    server's (as :func:`code_actions` takes them)."""
    import asyncio
    from functools import partial

    from pygls.uris import to_fs_path

    uri = params.text_document.uri
    doc = ls.workspace.text_documents.get(uri)
    if doc is None or ls.shutting_down:
        return []
    linted = ls.linted.get(uri)
    path = to_fs_path(uri) or uri
    if linted is None or linted.version != doc.version:
        linted, _ = await asyncio.get_running_loop().run_in_executor(
            ls.executor, ls.lint_for_request, uri, path, doc.source, doc.version, ls.open_texts())
    if _layout_fix_unwritten(linted):
        # the published lint leaves layout fixes unwritten (a writer run per finding on every
        # keystroke); written now, once per version of the buffer, when their actions are asked for
        cached = ls.linted_with_fixes.get(uri)
        if cached is None or cached.version != linted.version:
            cached = await asyncio.get_running_loop().run_in_executor(
                ls.executor, partial(ls.linter.lint, path, linted.text, linted.version, folder=ls.folder(),
                                     open_texts=ls.open_texts(), write_fixes=True))
            ls.linted_with_fixes[uri] = cached
        linted = cached
    return code_actions(linted, uri, params.range, uri_for, partial(to_lsp, docs_url=ls.docs_url))


def _layout_fix_unwritten(linted) -> bool:
    """Whether a finding of this lint has a fix the run's adapter has not written yet."""
    return any(d.fix and not d.edits and d.applicability in (None, Applicability.UNSAFE)
               for diags in (linted.by_path or {}).values() for d in diags)


def _baseline_action(diag: Diagnostic, linted, shown: lsp.Diagnostic, uri_for) -> lsp.CodeAction | None:
    from trainlint.project.selection import UNSUPPRESSIBLE

    session = linted.session
    project = getattr(session, "project", None)
    configured = project.baseline if project is not None else None
    if project is None or not configured or diag.code in UNSUPPRESSIBLE:
        return None
    baseline_path = str(Path(project.root or ".") / configured)
    from trainlint.files.containment import contained, project_root

    if project.path and not contained(baseline_path, (str(project_root(project.path)),)):
        return None  # never a write outside the checkout (the session refuses such a config already)
    new_text, existed, old_text = _baseline_text(diag, linted, baseline_path)
    if new_text is None:
        return None
    target = uri_for(baseline_path)
    if existed:
        lines = convert.split_lines(old_text)
        end = lsp.Position(len(lines) - 1, convert.utf16_len(lines[-1])) if lines else lsp.Position(0, 0)
        edit = lsp.WorkspaceEdit(changes={target: [lsp.TextEdit(range=lsp.Range(lsp.Position(0, 0), end),
                                                                new_text=new_text)]})
    else:
        edit = lsp.WorkspaceEdit(document_changes=[
            lsp.CreateFile(uri=target, options=lsp.CreateFileOptions(ignore_if_exists=True)),
            lsp.TextDocumentEdit(text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=target, version=None),
                                 edits=[lsp.TextEdit(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
                                                     new_text=new_text)])])
    return lsp.CodeAction(title=f"Add {diag.code} to the baseline {configured}", kind=lsp.CodeActionKind.QuickFix,
                          diagnostics=[shown], edit=edit)


def _baseline_text(diag: Diagnostic, linted, baseline_path: str) -> tuple[str | None, bool, str]:
    """The baseline file's text with ``diag`` recorded (None when it cannot be read as one)."""
    from trainlint.project import baseline as baselines

    root = Path(os.path.abspath(baseline_path)).parent
    ((entry, _, _),) = baselines.entries([replace(linted.result, diagnostics=[diag])], root)
    existed = os.path.isfile(baseline_path)
    old_text = ""
    rows: list[Any] = []
    if existed:
        try:
            from trainlint.files.sources import read_bounded

            old_text = read_bounded(baseline_path, baselines.MAX_BASELINE_BYTES).decode("utf-8")
            data = json.loads(old_text)
            rows = list(data["findings"])
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
            return None, existed, old_text
    rows.append({"code": entry.code, "path": entry.path, "fingerprint": entry.fingerprint, "message": entry.message})
    rows.sort(key=lambda r: (str(r.get("path")), str(r.get("code")), str(r.get("fingerprint"))))
    text = json.dumps({"tool": "trainlint", "version": baselines.FORMAT_VERSION, "findings": rows},
                      indent=2, ensure_ascii=False) + "\n"
    return text, existed, old_text
