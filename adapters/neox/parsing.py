"""The GPT-NeoX YAML parse and argument table shared by the sniff (:mod:`.detect`) and the reader
(:mod:`.reader`).

A leaf module, so the reader does not import the adapter class back: the sniff parses a file and
hands its tree to the reader once (``parse_sniffed`` / ``parse_once``), and both read the schema.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - yaml_tree (and PyYAML) is imported when a YAML is read
    from trainlint.adapters.text.yaml_tree import YamlTree


@lru_cache(maxsize=1)
def schema() -> dict:
    """trainlint's table of NeoX's arguments (``neox.schema.json``)."""
    from trainlint.core.framework import framework_of

    found = framework_of("neox").key_catalog().schema()  # the framework's one key catalog
    assert found is not None
    return found


# The sniff parses the whole file, and loading it would parse the same text again: the sniff's
# tree (which it only reads) is kept for that text object and path, and handed over once.
_SNIFFED: dict[int, tuple[str, str | None, Any]] = {}


def parse_sniffed(text: str, path: str | None) -> YamlTree:
    from trainlint.adapters.text.yaml_tree import parse_yaml  # PyYAML: only once a file looks like NeoX's

    tree = parse_yaml(text, path)
    _SNIFFED.clear()
    _SNIFFED[id(text)] = (text, path, tree)
    return tree


def parse_once(text: str, path: str | None) -> YamlTree:
    """The tree of ``text``: the sniff's when it parsed this very text, else parsed now."""
    entry = _SNIFFED.pop(id(text), None)
    if entry is not None and entry[0] is text and entry[1] == path:
        return entry[2]
    from trainlint.adapters.text.yaml_tree import parse_yaml

    return parse_yaml(text, path)
