"""The pieces of a report every reporter shares: a file's entry, the summary line, the fixable count
(a leaf: :mod:`trainlint.output.report` and the package both use them)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from trainlint.core.diagnostics import Diagnostic, Severity


@dataclass(frozen=True)
class FileEntry:
    """One file of a report: its path, the format it was read as, its findings."""

    path: str
    format: str | None
    diagnostics: list[Diagnostic]
    target: dict | None = None
    """The framework release or checkout the file was judged against (``FrameworkTarget.to_dict``
    with its ``statement``), once per file; None when its format has no target."""


def _same_file(path: str) -> str:
    """A key equal for every spelling of one file's path (relative or absolute, ``a/../b``); a
    pseudo-path (``<command line>``) is its own key."""
    if path.startswith("<"):
        return path
    return os.path.normcase(os.path.abspath(path))


def _identity(diag: Diagnostic) -> tuple:
    """What makes two diagnostics the same finding for a reader: code, severity, place, message."""
    span = diag.span
    return (diag.code, diag.severity, span.line, span.column, span.end_line, span.end_column, diag.message)


def summary_text(counts: Counter, checked: int, skipped: int) -> str:
    """``Found 3 problems (1 error, 2 warnings) in 10 files.``: ``checked`` files read as a config or
    with a finding (a multi-file run counts each of its files), ``skipped`` results neither."""
    total = sum(counts.values())
    parts = [f"{counts[s]} {s.value}{'s' if counts[s] != 1 and s is not Severity.INFO else ''}"
             for s in (Severity.ERROR, Severity.WARNING, Severity.INFO) if counts[s]]
    found = f"Found {total} problem{'s' if total != 1 else ''}" + (f" ({', '.join(parts)})" if parts else "")
    return f"{found} in {checked} file{'s' if checked != 1 else ''}" + (
        f"; {skipped} file{'s' if skipped != 1 else ''} not recognised as a config" if skipped else "") + "."


@dataclass(frozen=True)
class FixableCount:
    """How many reported findings ``check --fix`` would fix (as ruff counts them for its footer)."""

    fixable: int
    """Fixed by ``--fix`` (with ``--unsafe-fixes`` given, the unsafe fixes too)."""
    hidden: int
    """Fixed only with ``--unsafe-fixes`` (0 when it was given)."""
