"""Re-derive ``spec.engine`` after a spec was changed in memory (a suggested layout, a candidate fix):
the same framework rules each adapter applies when it reads the file, asked of the run's
:class:`trainlint.core.framework.Framework` (a run no framework names keeps its engine)."""

from __future__ import annotations

from trainlint.core.spec import TrainingSpec


def set_engine(spec: TrainingSpec) -> None:
    from trainlint.core.framework import framework_of

    framework_of(spec).set_engine(spec)
