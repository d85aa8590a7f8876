"""Document: a parsed config file, its raw value tree and a position for every key and value.

Addresses are JSON Pointers (RFC 6901): ``/zero_optimization/stage``. The Megatron adapter
uses the flag's destination name as the key (``/num_layers``), so one addressing scheme serves
all formats and matches jsonschema's ``ValidationError.absolute_path``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from trainlint.core.positions import FILE_START, Span


def pointer(parts: Iterable[Any]) -> str:
    """``["a", 0, "b/c"]`` -> ``/a/0/b~1c``."""
    return "".join(["/" + escape_key(str(part)) for part in parts])


def escape_key(key: str) -> str:
    """One key as a JSON Pointer token: ``b/c`` -> ``b~1c`` (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def pointer_parts(ptr: str) -> list[str]:
    if not ptr:
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in ptr.split("/")[1:]]


def parent_pointer(ptr: str) -> str:
    return ptr.rsplit("/", 1)[0] if ptr else ""


@dataclass
class Document:
    """One parsed config file: its text, its data, and the span of every key and value."""

    path: str
    format: str
    text: str
    data: Any
    key_spans: dict[str, Span] = field(default_factory=dict)
    value_spans: dict[str, Span] = field(default_factory=dict)
    unresolved: dict[str, str] = field(default_factory=dict)
    """Pointers whose value is not known statically ("auto", a placeholder, ``$VAR``), with why.
    The schema check leaves these alone: the adapter has already reported them (TL007)."""

    def locate(self, ptr: str, *, prefer_key: bool = False) -> Span:
        """The best span for a pointer: its value (or key), else the nearest ancestor's."""
        probe = ptr
        while True:
            first, second = (self.key_spans, self.value_spans) if prefer_key else (self.value_spans, self.key_spans)
            if probe in first:
                return first[probe]
            if probe in second:
                return second[probe]
            if not probe:
                return FILE_START
            probe = parent_pointer(probe)

    def locate_key(self, ptr: str) -> Span:
        return self.locate(ptr, prefer_key=True)

    def get(self, ptr: str, fallback: Any = None) -> Any:
        node = self.data
        for part in pointer_parts(ptr):
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return fallback
        return node
