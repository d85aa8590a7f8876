"""One argument definition as a framework's source defines it (kept apart from the readers so that
loading a cached or shipped catalog does not import :mod:`ast`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def jsonable(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str)) or (
        isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) or v is None for v in value))


@dataclass(frozen=True)
class ArgDef:
    """One argument (Megatron: a flag; NeoX / DeepSpeed: a config key) as the source defines it."""

    name: str
    """The option string (``--num-layers``) or the key (``num_layers``)."""
    dest: str
    action: str = "store"
    """store | store_true | store_false | store_const | append | count | boolean_optional | key"""
    type: str | None = None
    """int | float | str | bool | None (not literal / not given)."""
    choices: tuple | None = None
    nargs: Any = None
    default: Any = None
    has_default: bool = False
    file: str = ""
    line: int = 0

    def to_json(self) -> list:
        return [self.name, self.dest, self.action, self.type, list(self.choices) if self.choices is not None else None,
                self.nargs, self.default if jsonable(self.default) else None, self.has_default, self.file, self.line]

    @classmethod
    def from_json(cls, row: list) -> ArgDef:
        name, dest, action, typ, choices, nargs, default, has_default, path, line = row
        return cls(name, dest, action, typ, tuple(choices) if choices is not None else None, nargs, default,
                   has_default, path, line)


