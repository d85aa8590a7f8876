""""Did you mean" for unknown keys and flags."""

from __future__ import annotations

import difflib
from typing import Iterable


def _norm(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower().strip()


def did_you_mean(name: str, candidates: Iterable[str], limit: int = 1) -> list[str]:
    """Closest known names, comparing case-, dash- and underscore-insensitively."""
    by_norm: dict[str, str] = {}
    for cand in candidates:
        by_norm.setdefault(_norm(cand), cand)
    target = _norm(name)
    if target in by_norm and by_norm[target] != name:
        return [by_norm[target]]
    close = difflib.get_close_matches(target, list(by_norm), n=limit, cutoff=0.75)
    return [by_norm[c] for c in close]


def hint(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean `x`?)`` or an empty string."""
    found = did_you_mean(name, candidates)
    return f" (did you mean `{found[0]}`?)" if found else ""
