"""Which codes are reported: ``select`` / ``extend-select`` / ``ignore`` / per-file ignores.

Selectors are ``ALL``, a code (``TL110``), a prefix (``TL1``) or a rule name
(``zero-pipeline-conflict``). As in ruff, the more specific selector wins: ``select = ["TL110"]``
with ``ignore = ["TL1"]`` keeps TL110; on a tie, ``ignore`` wins.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePath

UNSUPPRESSIBLE = {"TL998", "TL999"}
"""trainlint's own failures are never hidden by selection or suppression comments."""


def _specificity(selector: str, code: str, name: str) -> int:
    """How specifically ``selector`` matches (code, name): -1 no match, 0 ALL, else its length."""
    if selector.upper() == "ALL":
        return 0
    if selector == name:
        return 100
    if code.startswith(selector.upper()):
        return len(selector)
    return -1


@dataclass
class Selection:
    """Which codes are reported: select, extend-select, ignore and per-file ignores."""

    select: list[str] = field(default_factory=lambda: ["ALL"])
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    """Glob (relative to the project root, or a bare file name pattern) -> selectors."""
    root: str | None = None

    def enabled(self, code: str, name: str = "", path: str | None = None) -> bool:
        if code in UNSUPPRESSIBLE:
            return True
        chosen = max((_specificity(s, code, name) for s in [*self.select, *self.extend_select]), default=-1)
        if chosen < 0:
            return False
        ignores = list(self.ignore)
        if path is not None:
            ignores += self.file_ignores(path)
        dropped = max((_specificity(s, code, name) for s in ignores), default=-1)
        return chosen > dropped

    def file_ignores(self, path: str) -> list[str]:
        if not self.per_file_ignores:
            return []  # the usual case: called for every finding, so skip the path arithmetic
        patterns = tuple((pattern, tuple(selectors)) for pattern, selectors in self.per_file_ignores.items())
        try:
            return list(_cached_file_ignores(path, self.root, patterns))
        except TypeError:  # something unhashable in a hand-made Selection
            return list(_file_ignores(path, self.root, patterns))


def _file_ignores(path: str, root: str | None, patterns: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[str, ...]:
    rel = PurePath(path)
    if root:
        try:
            rel = PurePath(path).relative_to(root)
        except ValueError:
            pass
    text = rel.as_posix()
    out: list[str] = []
    for pattern, selectors in patterns:
        if fnmatch.fnmatch(text, pattern) or fnmatch.fnmatch(rel.name, pattern) or fnmatch.fnmatch(text, f"*/{pattern}"):
            out.extend(selectors)
    return tuple(out)


# A file gets one call per finding and per rule, always with the same answer.
_cached_file_ignores = lru_cache(maxsize=4096)(_file_ignores)
