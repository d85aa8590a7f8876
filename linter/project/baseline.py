"""A baseline: today's findings, recorded so that a repository adopting trainlint gates only new ones.

``check --write-baseline FILE`` records every reported finding; ``check --baseline FILE`` (or
``baseline = "..."`` in the project config) then reports only the findings not in it, and says
how many recorded ones no longer occur.

A finding is recorded by its code, its file (relative to the baseline file's folder, so the
baseline can be committed) and a fingerprint that survives edits elsewhere in the file, as the
SARIF fingerprints do: the text the finding points at (the key or flag, whitespace collapsed),
never its line number, and the kind of message (its words, with the numbers left out, so that a
re-estimated 84.1 GiB is still the same finding). Equal fingerprints are counted: a second copy
of a recorded finding is new.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from trainlint.core.diagnostics import Diagnostic

FORMAT_VERSION = 1
MAX_BASELINE_BYTES = 64 * 1024 * 1024
"""A baseline of ~200,000 findings; a larger file (or /dev/zero) is not read."""
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class BaselineError(Exception):
    """A baseline file that cannot be read or written; the CLI exits 2 with this message."""


def message_kind(message: str) -> str:
    """The message with its numbers left out: what kind of finding it is."""
    return _NUMBER.sub("#", message)


def _anchor(diagnostic: Diagnostic, lines: Sequence[str]) -> str:
    """The text the finding points at (its first line), whitespace collapsed; the whole line
    when the span is empty (a point before a token)."""
    span = diagnostic.span
    if not 0 < span.line <= len(lines):
        return ""
    line = lines[span.line - 1]
    if span.end_line == span.line and span.end_column > span.column:
        text = line[span.column - 1:span.end_column - 1]
    elif span.end_line > span.line:
        text = line[span.column - 1:]
    else:
        text = line
    return " ".join(text.split())[:200]


def relative(path: str, root: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (as given when outside it)."""
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return Path(os.path.abspath(path)).as_posix()


@dataclass(frozen=True)
class Entry:
    code: str
    path: str
    fingerprint: str
    message: str = ""
    """For a person reading the file; not compared."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.code, self.path, self.fingerprint)


class _Lines:
    """Each file's lines, read once: from the checked documents, else from disk."""

    def __init__(self, results: Iterable) -> None:
        self.cache: dict[str, list[str]] = {}
        for result in results:
            for doc in result.documents:
                self.cache.setdefault(os.path.abspath(doc.path), doc.text.split("\n"))

    def __call__(self, path: str) -> list[str]:
        key = os.path.abspath(path)
        if key not in self.cache:
            from trainlint.files.sources import read_text_lenient

            text = read_text_lenient(key)
            self.cache[key] = text.split("\n") if text is not None else []
        return self.cache[key]


def entries(results: Sequence, root: Path) -> list[tuple[Entry, object, Diagnostic]]:
    """Every finding of ``results`` as (entry, its result, the diagnostic)."""
    lines = _Lines(results)
    out = []
    for result in results:
        for diagnostic in result.diagnostics:
            path = diagnostic.path or result.path
            digest = hashlib.sha256("\0".join((
                diagnostic.code, relative(path, root), _anchor(diagnostic, lines(path)),
                message_kind(diagnostic.message))).encode("utf-8", "surrogatepass")).hexdigest()[:20]
            out.append((Entry(diagnostic.code, relative(path, root), digest, diagnostic.message), result, diagnostic))
    return out


def render(results: Sequence, baseline_path: str) -> str:
    """The baseline file's text for ``results``."""
    root = Path(os.path.abspath(baseline_path)).parent
    found = sorted((e for e, _, _ in entries(results, root)), key=lambda e: (e.path, e.code, e.fingerprint))
    return json.dumps({
        "tool": "trainlint", "version": FORMAT_VERSION,
        "findings": [{"code": e.code, "path": e.path, "fingerprint": e.fingerprint, "message": e.message}
                     for e in found],
    }, indent=2, ensure_ascii=False) + "\n"


def write(results: Sequence, baseline_path: str) -> int:
    """Write the baseline (replacing an existing one through trainlint's safe write-back; an
    existing file that is not a baseline, such as ``pyproject.toml``, is refused); returns the
    number of findings recorded."""
    from trainlint.files.safe_write import WriteBackError, snapshot, write_back

    text = render(results, baseline_path)
    try:
        if os.path.lexists(baseline_path):
            existing = snapshot(baseline_path)
            if existing.text.strip() and not _is_baseline(existing.text):
                raise BaselineError(f"cannot write the baseline {baseline_path}: the file exists and is not a trainlint "
                                    "baseline (no JSON object with \"tool\": \"trainlint\" and \"findings\"); "
                                    "not overwritten (name a new file)")
            write_back(baseline_path, text, existing.hash)
        else:
            # a new file: nothing to lose; "x" refuses to follow a file created meanwhile
            with open(baseline_path, "x", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
    except (WriteBackError, OSError) as exc:
        raise BaselineError(f"cannot write the baseline {baseline_path}: {getattr(exc, 'strerror', None) or exc}") from None
    return len(json.loads(text)["findings"])


def _is_baseline(text: str) -> bool:
    """Whether ``text`` is a baseline --write-baseline wrote (so replacing it loses nothing else)."""
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("tool") == "trainlint" and isinstance(data.get("findings"), list)


@dataclass
class Baseline:
    path: str
    recorded: Counter = field(default_factory=Counter)
    """(code, path, fingerprint) -> how many times recorded."""

    @property
    def root(self) -> Path:
        return Path(os.path.abspath(self.path)).parent


def load(baseline_path: str) -> Baseline:
    from trainlint.files.sources import read_bounded

    try:
        data = json.loads(read_bounded(baseline_path, MAX_BASELINE_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"baseline file not found: {baseline_path} (create it with --write-baseline)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read the baseline {baseline_path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{baseline_path}: not a trainlint baseline (invalid JSON: {exc})") from None
    rows = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("code", "path", "fingerprint")) for r in rows):
        raise BaselineError(f"{baseline_path}: not a trainlint baseline (expected {{\"findings\": [{{code, path, "
                            "fingerprint}}, ...]}}, as --write-baseline writes)")
    return Baseline(baseline_path, Counter((r["code"], r["path"], r["fingerprint"]) for r in rows))


@dataclass(frozen=True)
class Outcome:
    suppressed: int
    """Findings left out because the baseline has them."""
    stale: int
    """Baseline entries, of the files checked, that no longer occur."""


class Matcher:
    """Leaves out the recorded findings one result at a time, in run order (a recorded finding
    matches its first occurrences, as many as recorded), so that a check need not keep its results;
    :meth:`outcome` says how many were left out and how many recorded ones, of the files checked,
    no longer occur."""

    def __init__(self, baseline: Baseline) -> None:
        self.root = baseline.root
        self.left = Counter(baseline.recorded)
        self.recorded_paths = {path for (_, path, _) in self.left}
        self.checked: set[str] = set()
        """The files checked that the baseline names (the others cannot hold a stale finding: none is kept)."""
        self.suppressed = 0

    def filter(self, result: Any) -> Any:
        """``result`` without its recorded findings (the same object when it has none)."""
        from dataclasses import replace

        gone: set[int] = set()
        for entry, _, diagnostic in entries([result], self.root):
            if entry.path in self.recorded_paths:
                self.checked.add(entry.path)
            if self.left.get(entry.key, 0) > 0:
                self.left[entry.key] -= 1
                gone.add(id(diagnostic))
        for member in result.run or [result.path]:
            path = relative(member, self.root)
            if path in self.recorded_paths:
                self.checked.add(path)
        self.suppressed += len(gone)
        return replace(result, diagnostics=[d for d in result.diagnostics if id(d) not in gone]) if gone else result

    def outcome(self) -> Outcome:
        stale = sum(n for (code, path, _), n in self.left.items() if n > 0 and path in self.checked)
        return Outcome(self.suppressed, stale)


def apply(results: list, baseline: Baseline) -> tuple[list, Outcome]:
    """``results`` without the findings the baseline records (as many of each as recorded)."""
    matcher = Matcher(baseline)
    out = [matcher.filter(result) for result in results]
    return out, matcher.outcome()


def describe(outcome: Outcome, baseline_path: str) -> str:
    parts = [f"{outcome.suppressed} finding{'s' if outcome.suppressed != 1 else ''} in the baseline {baseline_path} "
             "not reported"]
    if outcome.stale:
        parts.append(f"{outcome.stale} baseline entr{'ies' if outcome.stale != 1 else 'y'} no longer occur"
                     f"{'' if outcome.stale != 1 else 's'} (write the baseline again with --write-baseline to drop "
                     f"{'them' if outcome.stale != 1 else 'it'})")
    return "; ".join(parts) + "."
