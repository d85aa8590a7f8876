"""``trainlint check --fix`` and ``--diff``: apply (or show) the findings' fixes, then report.

``--diff`` prints the change each file would get as a unified diff, writes nothing, and exits 1
when anything would change (0 when nothing would; 2 when a file cannot be read back).

Before anything is shown or written, each file's fixes are checked by reading the fixed text again
with the file's adapter (:mod:`trainlint.project.fix_check`): every setting no fix names must keep its value,
spelling and place. When the fixes of a file together change something else, each is checked alone;
those that change something else alone are refused (said on stderr, with what they would change) and
the rest are checked together again; if they still change something else, the file gets no fix.

``--fix`` writes each file once through :mod:`trainlint.files.safe_write`, then checks everything
again: a fix whose finding is still reported is reverted (the file is written back without it),
and the report shows what remains. Messages about the fixing go to stderr, so that
``--format json`` / ``sarif`` output stays one document.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Callable

from trainlint.core.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS


@dataclass
class _Change:
    path: str
    original: str
    original_hash: str
    new: str
    fixes: list
    data: bytes = b""
    """The file's bytes as read (its line ends and BOM, for ``--diff``)."""


def fix_then_report(args: argparse.Namespace, session, lint_all: Callable[[], list], report) -> int:
    """``lint_all()`` checks every task; ``report(results)`` renders and returns the exit code."""
    from trainlint.project import fixes as fixing

    linted = lint_all()
    plans = fixing.collect(linted, getattr(args, "unsafe_fixes", False))
    read_as = {doc.path: doc.text for result in linted for doc in result.documents}
    def verify(path: str, text: str, fixes: list) -> tuple[list, list[str]]:
        return _verified(path, text, fixes, linted, session)

    changes, failures = _changes(plans, read_as, verify)
    for message in failures:
        print(f"trainlint: error: {message}", file=sys.stderr)
    if args.diff:
        return _show_diff(changes, plans, failures)
    written, write_failures = _write(changes)
    for message in write_failures:  # a file not written says why (a full disk, a read-only file, ...)
        print(f"trainlint: error: {message}", file=sys.stderr)
    failures += write_failures
    after = lint_all() if written else linted
    reverted: list = []
    if written:
        after, reverted = _revert_persisting(written, linted, after, lint_all)
    applied = sum(len(c.fixes) for c in written)
    files = sum(1 for c in written if c.fixes)
    summary = f"Fixed {applied} finding{'s' if applied != 1 else ''} in {files} file{'s' if files != 1 else ''}"
    if reverted:
        summary += (f"; {len(reverted)} fix{'es' if len(reverted) != 1 else ''} reverted because "
                    f"{'they' if len(reverted) != 1 else 'it'} did not remove the finding: "
                    + ", ".join(f"{f.diagnostic.code} at {f.path}:{f.diagnostic.line}" for f in reverted))
    print(summary + ".", file=sys.stderr)
    _, code = report(after)
    return EXIT_ERROR if failures else code


def _verified(path: str, text: str, fixes: list, linted: list, session) -> tuple[list, list[str]]:
    """The fixes of ``path`` that change only the settings they name (see the module's docstring),
    and a message for each one refused."""
    from trainlint.project import fix_check
    from trainlint.project import fixes as fixing

    def refusal(chosen: list):
        edits = [edit for fix in chosen for edit in fix.edits]
        return fix_check.check_edits(linted, path, text, fixing.apply(text, chosen), edits,
                                     session.adapters, dict(session.environment))

    if refusal(fixes) is None:
        return fixes, []
    kept, messages = [], []
    for fix in fixes:
        alone = refusal([fix])
        if alone is None:
            kept.append(fix)
            continue
        d = fix.diagnostic
        messages.append(f"refused the fix of {d.code} at {path}:{d.line}:{d.column}: {alone}")
    if kept and refusal(kept) is not None:
        codes = ", ".join(f"{f.diagnostic.code} at line {f.diagnostic.line}" for f in kept)
        messages.append(f"refused the fixes of {path} ({codes}): together they change settings they do not name: "
                        f"{refusal(kept)}")
        kept = []
    return kept, messages


def _changes(plans: dict, read_as: dict[str, str], verify=None) -> tuple[list[_Change], list[str]]:
    from trainlint.project import fixes as fixing
    from trainlint.files.safe_write import WriteBackError, snapshot, text_hash

    changes, failures = [], []
    for path, file_plan in plans.items():
        if not file_plan.fixes:
            continue
        try:
            snap = snapshot(path)
        except WriteBackError as exc:
            failures.append(str(exc))
            continue
        if path in read_as and text_hash(read_as[path]) != snap.hash:
            failures.append(f"{path} changed since trainlint checked it; not fixed (run again)")
            continue
        try:
            new = fixing.apply(snap.text, file_plan.fixes)
        except fixing.EditOutsideText as exc:
            failures.append(f"{path}: a fix does not fit the file ({exc}); not fixed")
            continue
        kept = list(file_plan.fixes)
        if verify is not None and new != snap.text:
            kept, refused = verify(path, snap.text, kept)
            for message in refused:
                print(f"trainlint: warning: {message}", file=sys.stderr)
            new = fixing.apply(snap.text, kept) if kept else snap.text
        if new != snap.text:
            changes.append(_Change(path, snap.text, snap.hash, new, kept, snap.data))
    return changes, failures


def _show_diff(changes: list[_Change], plans: dict, failures: list[str]) -> int:
    from trainlint.project import fixes as fixing
    from trainlint.files.safe_write import WriteBackError, check_writable, texts_as_written

    shown = []
    for change in changes:  # not a file behind a symlink out of the checkout: --fix refuses it, and says so
        try:
            check_writable(change.path, mode=False)
        except WriteBackError as exc:
            print(f"trainlint: error: {exc}", file=sys.stderr)
            failures.append(str(exc))
            continue
        shown.append(change)
    changes = shown
    # the texts as the files hold them: a CRLF or BOM file's diff applies with git apply and patch
    out = "".join(fixing.unified_diff(c.path, *texts_as_written(c.path, c.data, c.new)) for c in changes)
    sys.stdout.write(out)
    count = sum(len(c.fixes) for c in changes)
    print(f"Would fix {count} finding{'s' if count != 1 else ''} in {len(changes)} "
          f"file{'s' if len(changes) != 1 else ''}.", file=sys.stderr)
    if failures:
        return EXIT_ERROR
    return EXIT_FINDINGS if changes else EXIT_CLEAN


def _write(changes: list[_Change]) -> tuple[list[_Change], list[str]]:
    from trainlint.files.safe_write import WriteBackError, write_back

    written, failures = [], []
    for change in changes:
        try:
            write_back(change.path, change.new, change.original_hash)
        except WriteBackError as exc:
            failures.append(str(exc))
            continue
        written.append(change)
    return written, failures


def _revert_persisting(written: list[_Change], before: list, after: list, lint_all) -> tuple[list, list]:
    """Write each file again from its original text with only the fixes whose finding went
    away; when one of those then still leaves its finding (fixes that only worked together),
    the file gets its original text back. Returns the final results and the reverted fixes."""
    from trainlint.project import fixes as fixing

    reverted: list = []
    bad = fixing.persisting([f for c in written for f in c.fixes], before, after)
    if not bad:
        return after, reverted
    for change in written:
        wrong = [f for f in change.fixes if f in bad]
        if wrong:
            keep = [f for f in change.fixes if f not in bad]
            if _rewrite(change, fixing.apply(change.original, keep) if keep else change.original):
                reverted.extend(wrong)
                change.fixes = keep
    after = lint_all()
    still = fixing.persisting([f for c in written for f in c.fixes], before, after)
    if still:
        for change in written:
            if any(f in still for f in change.fixes) and _rewrite(change, change.original):
                reverted.extend(change.fixes)
                change.fixes = []
        after = lint_all()
    return after, reverted


def _rewrite(change: _Change, text: str) -> bool:
    from trainlint.files.safe_write import WriteBackError, text_hash, write_back

    try:
        write_back(change.path, text, text_hash(change.new))
    except WriteBackError as exc:
        print(f"trainlint: error: could not revert a fix in {change.path}: {exc}", file=sys.stderr)
        return False
    change.new = text
    return True


def honest_marks(linted: list, session) -> list:
    """The results with every fix that carries edits being one ``--fix`` would apply (for SARIF,
    whose ``fixes`` another tool may apply; the language server checks each quick fix the same
    way): each fix is checked alone by reading the fixed file again, as ``--fix`` checks it
    (:func:`_verified`). A fix ``--fix`` would refuse (it changes a setting it does not
    name), and a fix over several files (``--fix`` never applies one piecemeal), keeps its text with
    the reason appended and loses its edits, so no face offers it."""
    from dataclasses import replace

    from trainlint.project import fix_check
    from trainlint.project import fixes as fixing
    from trainlint.core.diagnostics import Applicability

    read_as = {doc.path: doc.text for result in linted for doc in result.documents}
    refused: dict[int, str] = {}
    for result in linted:
        for d in result.diagnostics:
            home = d.path or result.path
            if d.applies(True) and len({edit.path or home for edit in d.edits}) != 1:
                refused[id(d)] = "its edits span several files, which --fix does not apply piecemeal"
    for path, plan in fixing.collect(linted, True).items():
        text = read_as.get(path)
        if text is None:
            continue
        for fix in plan.fixes:
            why = fix_check.check_edits(linted, path, text, fixing.apply(text, [fix]), fix.edits,
                                        session.adapters, dict(session.environment))
            if why is not None:
                refused[id(fix.diagnostic)] = f"it would also change {why}"
    if not refused:
        return linted
    for result in linted:
        result.diagnostics = [
            replace(d, edits=(), applicability=Applicability.DISPLAY,
                    fix=f"{d.fix or 'a fix'} (not applied by --fix: {refused[id(d)]})") if id(d) in refused else d
            for d in result.diagnostics]
    return linted
