"""Reporters: turn check results into text for people or JSON for tools."""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Sequence

from trainlint.core.diagnostics import Diagnostic, Severity  # noqa: F401 - re-exported
from trainlint.output.entries import FileEntry, FixableCount, _identity, _same_file, summary_text  # noqa: F401 - re-exported

if TYPE_CHECKING:  # pragma: no cover - the reading half (adapters, spec) is not needed to escape or render text
    from trainlint.core.results import FileResult


def file_entries(results: Sequence[FileResult]) -> list[FileEntry]:
    """One entry per file, each with the diagnostics located in it.

    A result can carry diagnostics for other files (a --deepspeed_config JSON read through a
    launch script, the second YAML of a NeoX run, a file of arguments several scripts source):
    those go to their own file's entry. One file is one entry however its path is spelled (the
    shell resolves ``$(dirname $0)/conf/args.sh`` to an absolute path while the user named the
    folder relatively): the spelling of the first result that is the file names it, else the
    first spelling met. A finding several results report alike (five scripts sourcing one file
    with an undecidable condition) is shown once. The entries are in order of first mention.
    (:class:`trainlint.output.report.Report` is the one implementation: ``check`` feeds it one
    result at a time.)"""
    from trainlint.output.report import as_report

    return list(as_report(results).entries())


def display_path(path: str, cwd: str | None = None) -> str:
    """A path as the text output names it: normalised (no ``./``, no ``a/../``), and relative to the
    current directory when the file lies under it (the shell resolves ``$(dirname $0)/args.sh`` to an
    absolute path while the user named the folder relatively). A file outside it is named by the
    shorter of its relative (``../shared/corpus/x.sh``, as the user named ``../shared/corpus``) and
    absolute spellings (``/etc/x.json`` rather than ``../../../etc/x.json``). A pseudo-path
    (``<command line>``) is kept."""
    if not path or path.startswith("<"):
        return path
    here = cwd if cwd is not None else os.getcwd()
    if not os.path.isabs(path):
        return os.path.normpath(path)
    normal = os.path.normpath(path)
    try:
        relative = os.path.relpath(normal, here)
    except ValueError:  # another drive (Windows)
        return normal
    if not relative.startswith(os.pardir) or len(relative) < len(normal):
        return relative
    return normal


def severity_counts(results: Sequence[FileResult]) -> Counter:
    """Findings by severity, as the report shows them (a finding several results share counted once)."""
    from trainlint.output.report import as_report

    return as_report(results).severity_counts()


def summary_line(results: Sequence[FileResult]) -> str:
    from trainlint.output.report import as_report

    return as_report(results).summary_line()


def fixable_count(results: Sequence[FileResult], unsafe: bool = False) -> FixableCount:
    """Over the findings as the report shows them (:func:`file_entries`): a hint without edits, or a
    display-only fix, counts for neither."""
    from trainlint.output.report import as_report

    return as_report(results).fixable_count(unsafe)


def fixable_line(count: FixableCount, unsafe: bool = False) -> str | None:
    """The footer after the summary: ``[*] 3 fixable with `--fix` (2 more with `--unsafe-fixes`).``;
    None when nothing is fixable either way."""
    if not count.fixable and not count.hidden:
        return None
    option = "`--fix --unsafe-fixes`" if unsafe else "`--fix`"
    if not count.fixable:
        return f"0 fixable with {option} ({count.hidden} with `--fix --unsafe-fixes`)."
    hidden = f" ({count.hidden} more with `--unsafe-fixes`)" if count.hidden else ""
    return f"[*] {count.fixable} fixable with {option}{hidden}."
