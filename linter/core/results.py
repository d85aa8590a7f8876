"""What reading one file gave (:class:`FileResult`): the core model's record of a checked file.

The checker (``checker.py``) makes one per file or multi-file run; the engine adds findings and
the suppressions it used; the writers, the launch-command reader and the output formats read it.
It lives with the other core types (spec, diagnostics, documents) so that each of those layers
can speak it without importing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainlint.core.diagnostics import Diagnostic
from trainlint.core.document import Document
from trainlint.core.spec import TrainingSpec


@dataclass
class FileResult:
    """What reading one file (or multi-file run) gave: the format, input diagnostics, specs and documents."""

    path: str
    format: str | None
    """The adapter that claimed the file, or None when no adapter did (skipped)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    specs: list[TrainingSpec] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    run: list[str] = field(default_factory=list)
    """For a multi-file run (NeoX): every file of it, the first being ``path``."""
    used_suppressions: frozenset = frozenset()
    """What suppressed a finding of this result (set by the rule engine): ``("inline", path,
    directive line, selector)`` and ``("per-file", pattern, selector)``; the unused-suppression
    report (TL020) is what no result used."""
    target: dict | None = None
    """What the runs were judged against, as reports give it (:func:`trainlint.frameworks.target.target_of`),
    kept when the specs are dropped (``check -j N`` sends results back without them)."""
    comments: tuple | None = None
    """Set when the documents are dropped (``process_pool.lean``): (path, its parsed suppression
    comments) for each file of the result that has any, so that the unused-suppression report
    need not read the files again; None: not reduced (read them from ``documents``)."""
    frameworks: Any = None
    """The session's framework settings the file was read with (``LoadContext.frameworks``): reading
    it again (write-back's round trip) resolves the same targets."""

    @property
    def internal_error(self) -> bool:
        return any(d.code == "TL999" for d in self.diagnostics)
