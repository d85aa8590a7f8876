"""The estimates made while one run is linted, each made once.

The rules of one run estimate the same specs again and again: TL301, TL304 and TL201's fix
searches try the same candidate changes (a lint of a Megatron script makes ~30 estimates of ~10
distinct specs). :class:`EstimateMemo` wraps the session's estimator for the rules of one run
(the engine makes a new one per run and per lint, so nothing is kept across edits): a spec equal
to one estimated before, compared whole (every value with its provenance, the settings, the
framework target and the catalog object it was read with), gets that estimate back. The estimator
is a pure function of the spec in the session's one context, so the answer is the one it would
make again. The rules only read estimates (none changes one), so one object can be shared.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable

from trainlint.core.framework import framework_of
from trainlint.core.spec import SECTIONS, TrainingSpec, field_names

_PLAIN = (int, float, str, bool, type(None))


class EstimateMemo:
    """``estimator`` with its results kept per spec, for the rules of one run in one lint."""

    def __init__(self, estimator: Callable[[TrainingSpec], Any]) -> None:
        self.estimator = estimator
        self.kept: dict[tuple, list[tuple[TrainingSpec, Any, Any]]] = {}
        """By a cheap fingerprint of the spec's values: (a snapshot of the spec, its catalog, the estimate)."""
        self.first: tuple[TrainingSpec, Any, Any] | None = None
        """The first estimate, kept without its fingerprint until a second call needs it: most runs
        estimate only their own spec (no fix search), and a fingerprint walks every field."""
        self.made = 0
        """How many estimates were made (not served from ``kept``)."""

    def __call__(self, spec: TrainingSpec) -> Any:
        catalog = framework_of(spec).key_catalog(spec.target)  # one object per release read
        bucket = None
        if self.first is not None or self.kept:
            if self.first is not None:  # a second call: the first joins the fingerprinted ones
                self.kept.setdefault(_fingerprint(self.first[0]), []).append(self.first)
                self.first = None
            bucket = self.kept.setdefault(_fingerprint(spec), [])
            for kept, kept_catalog, result in bucket:
                if kept_catalog is catalog and kept == spec:
                    return result
        result = self.estimator(spec)  # an exception is not kept: the next call raises it again
        self.made += 1
        entry = (spec.copy(), catalog, result)  # a snapshot: later changes to spec do not reach it
        if bucket is None:
            self.first = entry
        else:
            bucket.append(entry)
        return result


def _fingerprint(spec: TrainingSpec) -> tuple:
    """Every field's value in order (plain ones as they are, others by repr, None where unset):
    equal specs have the same one. Only a pre-filter: a hit is decided by comparing the whole spec."""
    out: list[Any] = []
    for section in SECTIONS:
        obj = getattr(spec, section)
        for entry in _fields_of(obj)(obj):
            if entry is None:
                out.append(None)
            else:
                value = entry.value
                out.append(value if isinstance(value, _PLAIN) else repr(value))
    return tuple(out)


_GETTERS: dict[type, Callable[[Any], tuple]] = {}


def _fields_of(section: Any) -> Callable[[Any], tuple]:
    """A getter of all of a section's fields at once, in order (one C call instead of
    :meth:`TrainingSpec.items`' getattr and dotted name per field; ~30 fingerprints a lint)."""
    getter = _GETTERS.get(type(section))
    if getter is None:
        names = field_names(section)
        # attrgetter of one name gives the value itself, not a 1-tuple
        getter = attrgetter(*names) if len(names) > 1 else (lambda obj: tuple(getattr(obj, n) for n in names))
        _GETTERS[type(section)] = getter
    return getter
