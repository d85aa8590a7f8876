"""Reporters: turn check results into text for people or JSON for tools."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from trainlint.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # pragma: no cover - the reading half (adapters, spec) is not needed to escape or render text
    from trainlint.checker import FileResult


@dataclass(frozen=True)
class FileEntry:
    """One file of a report: its path, the format it was read as, its findings."""

    path: str
    format: str | None
    diagnostics: list[Diagnostic]


def file_entries(results: Sequence[FileResult]) -> list[FileEntry]:
    """One entry per file, each with the diagnostics located in it.

    A result can carry diagnostics for other files (a --deepspeed_config JSON read through a
    launch script, the second YAML of a NeoX run): those go to their own file's entry."""
    order: list[str] = []
    formats: dict[str, str | None] = {}
    by_path: dict[str, list[Diagnostic]] = {}
    for result in results:
        members = result.run or [result.path]
        for member in members:
            if member not in formats:
                order.append(member)
                formats[member] = result.format
                by_path[member] = []
        for diag in result.diagnostics:
            path = diag.path or result.path
            if path not in formats:
                order.append(path)
                formats[path] = result.format
                by_path[path] = []
            by_path[path].append(diag)
    return [FileEntry(p, formats[p], sorted(by_path[p], key=Diagnostic.sort_key)) for p in order]


def severity_counts(results: Sequence[FileResult]) -> Counter:
    return Counter(d.severity for r in results for d in r.diagnostics)


def summary_line(results: Sequence[FileResult]) -> str:
    counts = severity_counts(results)
    # files, not results: a multi-file run is one result holding several files
    checked = len({p for r in results if r.format or r.diagnostics for p in (r.run or [r.path])})
    skipped = sum(1 for r in results if not (r.format or r.diagnostics))
    total = sum(counts.values())
    parts = [f"{counts[s]} {s.value}{'s' if counts[s] != 1 and s is not Severity.INFO else ''}"
             for s in (Severity.ERROR, Severity.WARNING, Severity.INFO) if counts[s]]
    found = f"Found {total} problem{'s' if total != 1 else ''}" + (f" ({', '.join(parts)})" if parts else "")
    return f"{found} in {checked} file{'s' if checked != 1 else ''}" + (
        f"; {skipped} file{'s' if skipped != 1 else ''} not recognised as a config" if skipped else "") + "."
