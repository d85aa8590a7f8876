"""The rules trainlint ships. Rule modules are imported here, lazily, when rules are needed."""

from __future__ import annotations


def builtin_rules() -> list[type]:
    return []
