""""Did you mean" for unknown keys and flags.

A name is suggested when it is close in two ways, as difflib and rustc judge closeness:
difflib's ratio of the normalised names (case, dashes and underscores aside) is at least 0.75,
and at most a third of the typed name's length (at least one) of letters must be added, dropped,
changed or swapped to reach it, unless one name lies whole in the other, at most half as long
again. The ratio alone accepts a shorter word that shares the letters (`_comment` -> `comet`:
ratio 0.77, but three edits in eight letters).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Iterable


def _norm(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower().strip()


def did_you_mean(name: str, candidates: Iterable[str], limit: int = 1) -> list[str]:
    """Closest known names, comparing case-, dash- and underscore-insensitively."""
    pool = tuple(candidates)
    try:
        return list(_cached_closest(name, pool, limit))
    except TypeError:  # unhashable arguments: no cache
        return list(_closest(name, pool, limit))


_CUTOFF = 0.75


def _closest(name: str, pool: tuple[str, ...], limit: int) -> tuple[str, ...]:
    by_norm = _by_norm(pool)
    target = _norm(name)
    if target in by_norm and by_norm[target] != name:
        return (by_norm[target],)
    import difflib  # imported when a name is unknown, not on every start

    # difflib's first two tests depend on the lengths (real_quick_ratio) and on the characters the
    # two names share, counted with repeats (quick_ratio): dropping the names they would reject,
    # with the same arithmetic, before difflib sets each one up, gives the same matches much
    # faster (the Megatron flag table has ~1,500 names). The names are grouped by length, so a
    # whole length is skipped at once, with their character counts made once per pool, for a
    # length the first time a name needs it (a first unknown flag reads only the lengths near its own).
    size = len(target)
    wanted = Counter(target).get
    possible: list[str] = []
    for length, group in _profiles(pool):
        total = length + size
        if not total:
            possible.extend(group.names)
            continue
        if 2.0 * min(length, size) / total < _CUTOFF:
            continue
        for cand, counts in group.counted():
            shared = 0
            for ch, k in counts:
                w = wanted(ch, 0)
                shared += k if k < w else w
            if 2.0 * shared / total >= _CUTOFF:
                possible.append(cand)
    if not possible:
        return ()
    # the order of `possible` does not matter: difflib ranks the matches by (score, name)
    close = difflib.get_close_matches(target, possible, n=len(possible), cutoff=_CUTOFF)
    return tuple(by_norm[c] for c in close if close_enough(target, c))[:limit]


def max_edits(name: str) -> int:
    """How many edits a suggestion may be from ``name`` (normalised): a third of its length, at
    least one (rustc's bound for its "did you mean")."""
    return max(len(name), 3) // 3


def close_enough(written: str, known: str) -> bool:
    """Few enough edits (:func:`max_edits`), or the shorter name lies whole in the longer, which
    is at most half as long again (``train_micro_batch_size`` for ``train_micro_batch_size_per_gpu``,
    not ``recompute`` for ``recompute_sound``). Both normalised."""
    if edit_distance(written, known) <= max_edits(written):
        return True
    short, long = sorted((written, known), key=len)
    return 3 * len(short) >= 2 * len(long) and short in long


def edit_distance(a: str, b: str) -> int:
    """Optimal-string-alignment distance (a swap of two neighbours counts as one edit)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


class _Group:
    """The normalised names of one length, and their character counts once a lookup needs them."""

    __slots__ = ("counts", "names")

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.counts: list[tuple[str, tuple[tuple[str, int], ...]]] | None = None

    def counted(self) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
        if self.counts is None:
            count = str.count
            # (character, occurrences) in order of first occurrence, as Counter(name).items() gives
            self.counts = [(name, tuple([(ch, count(name, ch)) for ch in dict.fromkeys(name)])) for name in self.names]
        return self.counts


def _profiles(pool: tuple[str, ...]) -> tuple[tuple[int, _Group], ...]:
    try:
        return _cached_profiles(pool)
    except TypeError:
        return _length_groups(pool)


def _length_groups(pool: tuple[str, ...]) -> tuple[tuple[int, _Group], ...]:
    """The normalised names by length (each group counts its names' characters when first asked)."""
    groups: dict[int, list[str]] = {}
    for cand in _by_norm(pool):
        groups.setdefault(len(cand), []).append(cand)
    return tuple((length, _Group(names)) for length, names in groups.items())


def _by_norm(pool: tuple[str, ...]) -> dict[str, str]:
    try:
        return _cached_by_norm(pool)
    except TypeError:
        return _normalised(pool)


def _normalised(pool: tuple[str, ...]) -> dict[str, str]:
    """Normalised name -> the first candidate with it (shared when cached: never modified)."""
    by_norm: dict[str, str] = {}
    for cand in pool:
        by_norm.setdefault(_norm(cand), cand)
    return by_norm


# Unknown keys and flags recur (the same typo in many scripts, the same flag table every time).
_cached_closest = lru_cache(maxsize=2048)(_closest)
_cached_by_norm = lru_cache(maxsize=32)(_normalised)
_cached_profiles = lru_cache(maxsize=32)(_length_groups)


def hint(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean `x`?)`` or an empty string."""
    found = did_you_mean(name, candidates)
    return f" (did you mean `{found[0]}`?)" if found else ""
