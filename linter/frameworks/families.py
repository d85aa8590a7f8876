"""The framework families trainlint reads argument catalogs of: the registered frameworks
(:class:`trainlint.core.framework.Framework`) with a ``catalog_family``, each holding its own facts
(where its checkout keeps its arguments, how it is installed, its version file, its reader)."""

from __future__ import annotations

from typing import Any


def _known() -> list[Any]:
    from trainlint.core.framework import known_frameworks

    known = known_frameworks()
    last = _last
    if len(last[0]) == len(known) and all(a is b for a, b in zip(last[0], known, strict=True)):
        return last[1]  # the same frameworks as last time (every config folder asks several times)
    found = sorted((f for f in known if f.catalog_family), key=lambda f: (f.source_rank, f.catalog_family))
    _last[:] = [known, found]
    return found


_last: list[Any] = [[], []]
"""[the known frameworks :func:`_known` was last asked with, its answer]: a framework's family and
rank are its class's, so the answer changes only with the frameworks (a session registering a
plugin's); callers only read it."""


def families() -> tuple[str, ...]:
    """The catalog families, in the order checkouts are recognised and listed."""
    return tuple(f.catalog_family for f in _known())


def family(name: str) -> Any | None:
    """The Framework of catalog family ``name`` (None: no framework has that family)."""
    return next((f for f in _known() if f.catalog_family == name), None)


def markers(name: str) -> tuple[str, ...]:
    found = family(name)
    return found.source_markers if found is not None else ()
