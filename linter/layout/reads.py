"""Which fields of a spec a computation reads: a traced copy of the spec records them.

The whole-layout search behind TL301's and TL201's fix hints (:class:`trainlint.rules.estimation.fixes.LayoutAdvice`)
is memoised across re-lints; keyed on the whole spec, any edit (``--train-iters``, a learning rate) searched
again. :func:`traced` gives a copy of the spec whose sections and settings note every field read while a
:class:`ReadLog` records; :meth:`ReadLog.key` is then the values of exactly those fields, and
:meth:`ReadLog.matches` says whether another spec has the same values there (it would read the same and
compute the same).

Copies of a traced spec (``TrainingSpec.copy``, ``copy.copy`` of a section, ``settings.copy()``) stay traced
without counting as reads: the search's candidate specs are copies, and their unchanged fields are the
original's. A read of a whole section (``vars()``, equality, ``dataclasses.fields`` walks) counts as a read
of every field of it, so nothing read goes unrecorded; reading more than needed only makes the memo miss.
"""

from __future__ import annotations

import contextvars
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from trainlint.core.spec import SECTIONS, TrainingSpec, field_names

WHOLE = "*"
"""The name of a whole section's (or the whole settings') read."""

_LOG: contextvars.ContextVar[ReadLog | None] = contextvars.ContextVar("trainlint_read_log", default=None)


@dataclass
class ReadLog:
    """The fields read through traced specs while :meth:`recording`: ``section.name``, ``section.*``,
    ``settings:name``, ``settings:*``, ``unresolved:name``, ``unresolved:*``."""

    names: set[str] = field(default_factory=set)

    @contextmanager
    def recording(self) -> Iterator[ReadLog]:
        token = _LOG.set(self)
        try:
            yield self
        finally:
            _LOG.reset(token)

    def key(self, spec: TrainingSpec) -> tuple[tuple[str, Any], ...]:
        """The values of the fields read, on ``spec`` (the untraced original)."""
        return tuple((name, snapshot(spec, name)) for name in sorted(self.names))


@contextmanager
def paused() -> Iterator[None]:
    """Reads in this block are not recorded (what they compute is not memoised on the read fields)."""
    token = _LOG.set(None)
    try:
        yield
    finally:
        _LOG.reset(token)


def _note(name: str) -> None:
    log = _LOG.get()
    if log is not None:
        log.names.add(name)


def _entry(value: Any) -> Any:
    """A Value as the key compares it: the value with its type (1, 1.0 and True are equal in Python but
    read and print differently) and its text, where it came from (origin, spelling and the name of the
    file that writes it: a fix hint may name that file, e.g. the DeepSpeed JSON of a ZeRO stage), not its
    position nor its folder (two configs in two folders that ask the same question get the same answer)."""
    if value is None:
        return None
    inner = value.value
    provenance = value.provenance
    path = provenance.path
    return (type(inner).__name__, repr(inner), provenance.origin.value, provenance.key,
            os.path.basename(path) if path else None)


def snapshot(spec: TrainingSpec, name: str) -> Any:
    """The value of one recorded name on ``spec``."""
    if name.startswith(("settings:", "unresolved:")):
        kind, _, key = name.partition(":")
        table = getattr(spec, kind)
        if key == WHOLE:
            if kind == "unresolved":
                return tuple(sorted((k, p.origin.value, p.key or "") for k, p in dict.items(table)))
            return tuple(sorted((k, _entry(v)) for k, v in dict.items(table)))
        if key not in table:
            return ("absent",)
        found = dict.__getitem__(table, key)
        return (found.origin.value, found.key or "") if kind == "unresolved" else _entry(found)
    section, _, attr = name.partition(".")
    obj = getattr(spec, section)
    if attr == WHOLE:
        return tuple(_entry(object.__getattribute__(obj, n)) for n in field_names(obj))
    return _entry(object.__getattribute__(obj, attr))


def matches(key: tuple[tuple[str, Any], ...], spec: TrainingSpec) -> bool:
    """``spec`` has the recorded values wherever the key's computation read."""
    return all(snapshot(spec, name) == value for name, value in key)


# ------------------------------------------------------------------ traced sections and tables


_TRACED: dict[type, type] = {}


def _traced_class(cls: type, section: str) -> type:
    """A subclass of a section's dataclass whose attribute reads are recorded (one per section, made once)."""
    found = _TRACED.get(cls)
    if found is not None:
        return found
    names = frozenset(field_names(object.__new__(cls)))
    prefix = section + "."

    def __getattribute__(self: Any, attr: str) -> Any:
        if attr in names:
            _note(prefix + attr)
        elif attr == "__dict__":
            _note(prefix + WHOLE)  # vars(): every field at once
        return object.__getattribute__(self, attr)

    def __copy__(self: Any) -> Any:
        out = object.__new__(type(self))
        object.__getattribute__(out, "__dict__").update(object.__getattribute__(self, "__dict__"))  # a copy, not a read
        return out

    made = type(f"Traced{cls.__name__}", (cls,), {"__getattribute__": __getattribute__, "__copy__": __copy__,
                                                  "__eq__": cls.__eq__, "__hash__": None})
    _TRACED[cls] = made
    return made


class TracedTable(dict[Any, Any]):
    """``spec.settings`` / ``spec.unresolved`` with reads recorded (a key read, or the whole table when iterated)."""

    __slots__ = ("kind",)

    def __init__(self, source: dict[Any, Any], kind: str) -> None:
        super().__init__(source)
        self.kind = kind

    def _whole(self) -> None:
        _note(f"{self.kind}:{WHOLE}")

    def __getitem__(self, key: Any) -> Any:
        _note(f"{self.kind}:{key}")
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        _note(f"{self.kind}:{key}")
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        _note(f"{self.kind}:{key}")
        return dict.__contains__(self, key)

    def __iter__(self) -> Iterator[Any]:
        self._whole()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._whole()
        return dict.__len__(self)

    def keys(self) -> Any:
        self._whole()
        return dict.keys(self)

    def values(self) -> Any:
        self._whole()
        return dict.values(self)

    def items(self) -> Any:
        self._whole()
        return dict.items(self)

    def __eq__(self, other: object) -> bool:
        self._whole()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._whole()
        return dict.__ne__(self, other)

    __hash__ = None

    def copy(self) -> TracedTable:
        """A traced copy (the search's candidates copy the settings): not a read."""
        out = TracedTable.__new__(TracedTable)
        for key, value in dict.items(self):  # the storage itself, not through the methods above
            dict.__setitem__(out, key, value)
        out.kind = self.kind
        return out

    def __copy__(self) -> TracedTable:
        return self.copy()


def traced(spec: TrainingSpec) -> TrainingSpec:
    """A copy of ``spec`` whose sections, settings and unresolved settings record what is read from them
    (into the :class:`ReadLog` recording at the time; nothing outside one)."""
    out = spec.copy()
    for section in SECTIONS:
        original = getattr(spec, section)
        copy: Any = object.__new__(_traced_class(type(original), section))
        object.__getattribute__(copy, "__dict__").update(vars(original))
        setattr(out, section, copy)
    out.settings = TracedTable(spec.settings, "settings")
    out.unresolved = TracedTable(spec.unresolved, "unresolved")
    return out
