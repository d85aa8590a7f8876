"""Where flag and key findings point, and what fixes change, over real configs (issue 27).

    .venv/bin/python benchmarks/fix_positions.py                     # ../shared/corpus (forks included)
    .venv/bin/python benchmarks/fix_positions.py PATH... [--skip-copy] [--show N]

Prints three figures, each with its count:

1. **findings at their word**: of the flag/key findings (TL004, TL005, TL006, TL008, TL011), how
   many have a span whose text is the flag or key the message names (its first `...`, in any
   ``-``/``_`` spelling, quoted or not, or ``--flag=value``; a dotted key path names its last
   key; words the message shortens with "..." are matched by their start), or a value it names
   (another `...` or "..." of the message). Target: all.
2. **fixes that change another setting**: every finding with a fix ``check --fix --unsafe-fixes``
   would apply (its edits as the finding gives them, before any refusal), applied alone to its
   file's text; the file's runs are read again by their adapter and compared with
   :mod:`trainlint.project.fix_check` (every value the file writes that the fix does not name keeps its
   value, spelling and moved place). Target: 0.
3. **files changed outside their fixes by ``check --fix --unsafe-fixes``**: the corpus copied to a
   temporary folder, ``trainlint check --fix --unsafe-fixes --isolated`` run on the copy, every run
   read before and after, each changed file compared as in 2 with the edits being the file's diff
   (what was actually written). Target: 0.

Exit status 2 on an internal error (a TL999, a crash of the fix command), else 0.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
CODES = ("TL004", "TL005", "TL006", "TL008", "TL011")
_NAMED = re.compile(r"`([^`]+)`|\"([^\"]+)\"")


def _norm(word: str) -> str:
    return word.strip().strip("\"'").lstrip("-").replace("-", "_").lower()


def span_text(text: str, diag) -> str | None:
    from trainlint.files.key_edits import span_text as single_line

    return single_line(text, diag.span)


def at_word(text: str, diag) -> bool:
    """Whether ``diag``'s span holds the flag or key its message names, or a value it names."""
    got = span_text(text, diag)
    if not got:
        return False
    named = [a or b for a, b in _NAMED.findall(diag.message)]
    if not named:
        return False
    first = named[0].split("=", 1)[0]
    if got.startswith(first + "=") or _norm(got) in (_norm(first), _norm(first.rsplit(".", 1)[-1])):
        return True  # the flag, or the key (a dotted JSON/YAML path names its last key)
    for other in named[1:]:
        if _norm(got) == _norm(other):
            return True  # the value the message names
    # several words named by their start (`2.4B:320 4.8B:624 ...`): the span holds them
    return named[0].endswith("...") and len(named[0]) > 4 and got.startswith(named[0][:-3].rstrip())


def open_session(paths: list[str]):
    from trainlint.project.session import SessionOptions, open_session as opening

    return opening(SessionOptions(isolated=True), Path(paths[0]))


def lint(paths: list[str]):
    session = open_session(paths)
    session.settings.write_fixes = True  # as `check --fix`: layout changes become edits the adapter writes
    return session, session.lint(session.check_paths(paths))


def texts_of(results) -> dict[str, str]:
    out: dict[str, str] = {}
    for result in results:
        for doc in result.documents:
            out.setdefault(doc.path, doc.text)
    return out


def positions(results, texts: dict[str, str], show: int) -> tuple[int, int, list[str]]:
    total = good = 0
    bad: list[str] = []
    for result in results:
        for d in result.diagnostics:
            if d.code not in CODES:
                continue
            path = d.path or result.path
            text = texts.get(path)
            if text is None:
                try:
                    text = Path(path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = ""
            total += 1
            if at_word(text, d):
                good += 1
            elif len(bad) < show:
                bad.append(f"{path}:{d.span} {d.code} {span_text(text, d)!r:.60} <- {d.message[:90]}")
    return good, total, bad


def fixable(results):
    """(path, diagnostic) for every finding ``--fix --unsafe-fixes`` would apply, once each: the
    fixes ``check --fix`` plans, those it defers for overlapping another included (each is applied alone here)."""
    from trainlint.project.fixes import collect

    for plan in collect(results, True).values():
        for fix in plan.fixes + plan.deferred:
            yield fix.path, fix.diagnostic


def fixes_alone(session, results, texts: dict[str, str], show: int) -> tuple[int, int, list[str]]:
    from trainlint.project.fix_check import check_edits
    from trainlint.project.fixes import EditOutsideText, Fix, apply

    total = changed = 0
    bad: list[str] = []
    for path, d in fixable(results):
        before = texts.get(path)
        if before is None:
            before = Path(path).read_text(encoding="utf-8")
        try:
            after = apply(before, [Fix(path, d, d.edits)])
        except EditOutsideText:
            continue
        total += 1
        refusal = check_edits(results, path, before, after, d.edits, session.adapters, dict(session.environment))
        if refusal is not None:
            changed += 1
            if len(bad) < show:
                bad.append(f"{path}:{d.span} {d.code}: {refusal}")
    return changed, total, bad


def _writable(root: Path) -> None:
    """Give the owner write access to a copied tree (copies keep the source's mode bits)."""
    for dirpath, dirnames, names in os.walk(root):
        for name in [*dirnames, *names]:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, os.stat(full).st_mode | 0o200)
    if not root.is_symlink():
        os.chmod(root, os.stat(root).st_mode | 0o200)


def whole_copy(paths: list[str], show: int) -> tuple[int, int, list[str], int]:
    """Returns (files changed outside their fixes, files changed, examples, fix command exit code)."""
    from trainlint.cli import main
    from trainlint.project.fix_check import compare, file_edits, written_values
    from trainlint.project.fixes import edits_between

    with tempfile.TemporaryDirectory(prefix="fixpos-") as tmp:
        copies = []
        for i, p in enumerate(paths):
            dest = Path(tmp) / f"{i}-{Path(p).name}"
            if Path(p).is_dir():
                shutil.copytree(p, dest, symlinks=True)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, dest)
            copies.append(str(dest))
            _writable(dest)  # ../shared is read-only, and --fix refuses a read-only file
        session = open_session(copies)
        before_results = session.check_paths(copies)
        before_texts = {}
        for root in copies:
            for dirpath, _, names in os.walk(root):
                for name in names:
                    full = os.path.join(dirpath, name)
                    try:
                        before_texts[full] = Path(full).read_text(encoding="utf-8")
                    except (OSError, UnicodeDecodeError):
                        pass
        sink = io.StringIO()
        with redirect_stdout(sink), redirect_stderr(sink):
            code = main(["check", "--fix", "--unsafe-fixes", "--isolated", "--exit-zero", "--format", "json", *copies])
        after_results = session.check_paths(copies)
        after_by = {r.path: r for r in after_results}
        changed_files = {}
        for path, old in before_texts.items():
            try:
                new = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if new != old:
                changed_files[os.path.abspath(path)] = file_edits(path, old, new, edits_between(old, new))
        wrong = 0
        bad: list[str] = []
        counted = set()
        for result in before_results:
            reads = {os.path.abspath(p) for p in (result.path, *result.run, *(d.path for d in result.documents))}
            touched = [changed_files[p] for p in reads if p in changed_files]
            if not touched or result.path not in after_by:
                continue
            problems = compare(written_values([result]), written_values([after_by[result.path]]), touched)
            if problems:
                for t in touched:
                    if t.path not in counted:
                        counted.add(t.path)
                        wrong += 1
                if len(bad) < show:
                    bad.append(f"{result.path}: {'; '.join(problems)[:300]}")
        return wrong, len(changed_files), bad, code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(CORPUS)])
    parser.add_argument("--skip-copy", action="store_true", help="leave out figure 3 (the whole-copy --fix run)")
    parser.add_argument("--show", type=int, default=5, help="examples printed under each figure")
    args = parser.parse_args(argv)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"fix_positions: no such path: {', '.join(missing)}", file=sys.stderr)
        return 2
    session, results = lint(args.paths)
    internal = [r.path for r in results if r.internal_error]
    texts = texts_of(results)
    good, total, bad = positions(results, texts, args.show)
    share = f"{100 * good / total:.1f}%" if total else "n/a"
    print(f"flag/key findings at their word: {good}/{total} ({share})")
    for line in bad:
        print(f"    {line}")
    changed, fixes, bad = fixes_alone(session, results, texts, args.show)
    print(f"fixable findings whose fix, applied alone, changes any other setting: {changed} (of {fixes} fixes)")
    for line in bad:
        print(f"    {line}")
    status = 0
    if not args.skip_copy:
        wrong, files, bad, code = whole_copy(args.paths, args.show)
        print(f"files whose spec changes outside the fixed settings after check --fix --unsafe-fixes: {wrong} "
              f"(of {files} files changed)")
        for line in bad:
            print(f"    {line}")
        if code not in (0, 1):
            print(f"fix_positions: `check --fix --unsafe-fixes` exited {code}", file=sys.stderr)
            status = 2
    if internal:
        print(f"fix_positions: internal errors (TL999) in {len(internal)} files: {', '.join(internal[:5])}", file=sys.stderr)
        status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
