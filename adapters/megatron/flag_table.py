"""trainlint's table of Megatron-LM's flags (``schemas/megatron.schema.json``): each flag's
destination, types, choices and dialects, looked up by any spelling.

Apart from the argument reader (:mod:`.flags`) so that a target's own table
(:mod:`.target_flags`, built on this one) and the reader each import it without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Iterator, Mapping

from trainlint.core.framework import framework_of


@dataclass(frozen=True)
class FlagInfo:
    flag: str
    dest: str
    action: str            # store | store_true | store_false | store_const | append | count
    types: tuple[str, ...]  # JSON types of one value (without null)
    nargs: Any = None
    enum: tuple | None = None
    default: Any = None
    const: Any = None
    dialects: frozenset[str] | None = None   # None: current Megatron-LM (and so every dialect)
    entry_points: tuple[str, ...] | None = None
    deprecated: dict | None = None
    overrides: tuple = ()
    """(dialect, types or None, enum or None): how another dialect types the same flag."""
    minimum: int | None = None
    """Sizes and counts: argparse takes 0 or -1, Megatron then divides by it or builds no layer."""

    def for_dialect(self, dialect: str) -> FlagInfo:
        for name, types, enum, has_enum in self.overrides:
            if name == dialect:
                from dataclasses import replace

                return replace(self, types=tuple(types) if types else self.types,
                               enum=(tuple(enum) if enum else None) if has_enum else self.enum)
        return self

    @cached_property  # read for every flag of every run; a FlagInfo lives as long as its table
    def takes_value(self) -> bool:
        return self.action in ("store", "append")

    @cached_property  # the same for every run that gives the flag
    def pointer(self) -> str:
        """The JSON Pointer of its destination in a Megatron document (``pointer([dest])``)."""
        return "/" + self.dest.replace("~", "~0").replace("/", "~1")


@dataclass
class FlagTable:
    by_flag: Mapping[str, list[FlagInfo]]
    by_norm: dict[str, list[str]]
    all_flags: list[str]
    only: dict[str, FlagInfo] = field(default_factory=dict, compare=False, repr=False)
    """The flags looked up so far that have one definition, with it (most flags): what
    :meth:`ArgReader._choose` gives for them whatever the dialect and entry point, found by one
    dict lookup. A table never changes once made, so neither does this."""

    def candidates(self, flag: str) -> list[FlagInfo]:
        return self.by_flag.get(flag, [])

    def normalised(self, flag: str) -> list[str]:
        return self.by_norm.get(_norm(flag), [])


def _norm(flag: str) -> str:
    return flag.lstrip("-").replace("_", "-").lower()


def _types_of(prop: dict) -> tuple[str, ...]:
    t = prop.get("type", "string")
    types = t if isinstance(t, list) else [t]
    if "array" in types:
        items = prop.get("items", {}).get("type", "string")
        types = items if isinstance(items, list) else [items]
    return tuple(x for x in types if x not in ("null", "array"))


def _info_of(flag: str, dest: str, prop: dict, legacy: dict | None) -> FlagInfo:
    """The FlagInfo of ``flag`` as the schema property ``dest`` defines it (``legacy``: its entry
    under the property's ``x-legacy-flags``, None for one of its ``x-flags``)."""
    real_dest = dest.split("@", 1)[0]
    if legacy is not None:
        act = legacy.get("x-action", "store")
        return FlagInfo(flag, real_dest, act, _types_of(prop) if act in ("store", "append") else ("boolean",),
                        None, None, None, None, frozenset(legacy.get("x-dialect", [])), None,
                        legacy.get("x-deprecated"))
    action = prop.get("x-action", "store")
    negative = set(prop.get("x-negative-flags", []))
    enum = prop.get("enum") or (prop.get("items") or {}).get("enum")
    enum_t = tuple(e for e in enum if e is not None) if enum else None
    dialects = frozenset(prop["x-dialect"]) if "x-dialect" in prop else None
    eps = tuple(prop["x-entry-points"]) if "x-entry-points" in prop else None
    overrides = tuple((d, tuple(o.get("type") or ()), tuple(o.get("enum") or ()), "enum" in o)
                      for d, o in (prop.get("x-dialect-overrides") or {}).items())
    act = action
    if action == "boolean_optional":
        act = "store_false" if flag in negative else "store_true"
    elif flag in negative:
        act = "store_false" if action == "store_true" else "store_true"
    return FlagInfo(flag, real_dest, act, _types_of(prop), prop.get("x-nargs"), enum_t,
                    prop.get("default"), None, dialects, eps, prop.get("x-deprecated"), overrides,
                    prop.get("minimum"))


class _SchemaFlags(Mapping[str, list[FlagInfo]]):
    """Flag -> its FlagInfos (one per schema property that defines it, in the schema's order),
    each list made on its first lookup: a check looks up the few dozen flags a script passes, and
    making all ~1,300 up front took ~5 ms of every Megatron check. Iterating gives the flags in
    the order the schema defines them."""

    def __init__(self, sources: dict[str, list[tuple[str, dict, dict | None]]]) -> None:
        self._sources = sources
        self._made: dict[str, list[FlagInfo]] = {}

    def __getitem__(self, flag: str) -> list[FlagInfo]:
        made = self._made.get(flag)
        if made is None:
            made = self._made[flag] = [_info_of(flag, dest, prop, legacy) for dest, prop, legacy in self._sources[flag]]
        return made

    def get(self, flag: str, default: Any = None) -> Any:
        # Mapping.get goes through __getitem__ and a KeyError for every unknown flag; one lookup per word read
        made = self._made.get(flag)
        if made is not None:
            return made
        return self[flag] if flag in self._sources else default

    def __contains__(self, flag: object) -> bool:
        return flag in self._sources

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


@lru_cache(maxsize=1)
def flag_table() -> FlagTable:
    schema = framework_of("megatron").key_catalog().schema()  # the framework's one key catalog
    assert schema is not None
    sources: dict[str, list[tuple[str, dict, dict | None]]] = {}
    for dest, prop in schema["properties"].items():
        for flag in prop.get("x-flags", []):
            sources.setdefault(flag, []).append((dest, prop, None))
        for flag, entry in (prop.get("x-legacy-flags") or {}).items():
            sources.setdefault(flag, []).append((dest, prop, entry))
    by_norm: dict[str, list[str]] = {}
    for flag in sources:
        by_norm.setdefault(_norm(flag), []).append(flag)
    return FlagTable(_SchemaFlags(sources), by_norm, sorted(sources))
