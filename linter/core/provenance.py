"""Where a value came from.

Every value in a :class:`~trainlint.core.spec.TrainingSpec` is a :class:`Value`: the value itself
and its :class:`Provenance`. Rules point at spec fields; the engine turns the provenance into
a file position, so no rule ever computes a line number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

from trainlint.core.positions import Span

T = TypeVar("T")


class Origin(str, Enum):
    FILE = "file"                     # written in a config file or launch script
    DEFAULT = "default"               # the framework's own default, read from its sources
    DERIVED = "derived"               # computed from other values (DP from world size, ...)
    PROJECT_CONFIG = "project-config" # [tool.trainlint] / .trainlint.toml
    CLI = "cli"                       # a trainlint command-line flag
    ASSUMED = "assumed"               # trainlint's own assumption, always reported as such


# Provenance and Value are frozen dataclasses with their own __init__ (init=False) that writes the
# fields into the instance dict: the generated one calls object.__setattr__ per field, three times
# slower, and every value read makes one of each. eq, hash, repr, fields(), replace() and the
# frozen setattr are the dataclass's own.


@dataclass(frozen=True, init=False)
class Provenance:
    """Where a value came from: its origin, file, span and spelling there, and a note for messages."""

    origin: Origin
    path: str | None = None
    span: Span | None = None
    key: str | None = None
    """How the value was spelled at its source: ``zero_optimization.stage``, ``--num-layers``."""
    note: str = ""
    """Free text: which default ("Megatron-LM default"), or how it was derived."""
    inputs: tuple[Provenance, ...] = field(default_factory=tuple)
    """For derived values: the provenances of the values it was computed from."""
    uncertain: bool = False
    """Taken from one branch of a shell ``if``/``case`` whose condition could not be decided: a
    guess the rules treat as unknown (the note says so for the user)."""
    apart: bool = False
    """The value is written away from its key (a shell variable assigned on another line); the
    note says where the key is."""

    def __init__(self, origin: Origin, path: str | None = None, span: Span | None = None, key: str | None = None,
                 note: str = "", inputs: tuple[Provenance, ...] = (), uncertain: bool = False,
                 apart: bool = False) -> None:
        d = self.__dict__
        d["origin"] = origin
        d["path"] = path
        d["span"] = span
        d["key"] = key
        d["note"] = note
        d["inputs"] = inputs
        d["uncertain"] = uncertain
        d["apart"] = apart

    def describe(self) -> str:
        if self.origin is Origin.FILE:
            where = f"{self.path}:{self.span}" if self.span else (self.path or "file")
            return f"{self.key} at {where}" if self.key else where
        if self.origin is Origin.DERIVED:
            return f"derived: {self.note}" if self.note else "derived"
        label = self.origin.value.replace("-", " ")
        return f"{label}: {self.note}" if self.note else label


@dataclass(frozen=True, init=False)
class Value(Generic[T]):
    """A value with its provenance."""

    value: T
    provenance: Provenance

    def __init__(self, value: T, provenance: Provenance) -> None:
        d = self.__dict__
        d["value"] = value
        d["provenance"] = provenance

    @property
    def span(self) -> Span | None:
        return self.provenance.span


def from_file(value: Any, path: str | None, span: Span | None, key: str) -> Value:
    return Value(value, Provenance(Origin.FILE, path=path, span=span, key=key))


def default(value: Any, note: str) -> Value:
    return Value(value, Provenance(Origin.DEFAULT, note=note))


def derived(value: Any, note: str, *inputs: Value | None) -> Value:
    """A value computed from ``inputs``: a guess when one of them is (a value from an undecided
    branch or a scheduler variable's default makes whatever is computed from it one too)."""
    sources = tuple(v.provenance for v in inputs if v is not None)
    return Value(value, Provenance(Origin.DERIVED, note=note, inputs=sources,
                                   uncertain=any(p.uncertain for p in sources)))


def first_span(value: Value | None) -> tuple[str | None, Span | None]:
    """The most useful file position for a value: its own, or that of the first input that has one."""
    if value is None:
        return None, None
    stack = [value.provenance]
    while stack:
        prov = stack.pop(0)
        if prov.span is not None:
            return prov.path, prov.span
        stack.extend(prov.inputs)
    return None, None
