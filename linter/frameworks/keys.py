"""The shipped key catalog of a framework: one object answering "which keys exist" from the data files.

A framework's ``key_catalog(target)`` (:class:`trainlint.core.framework.KeyCatalog`) is the one API every
consumer asks: the adapters' schema validation and unknown-key findings (TL004, its did-you-mean, the
releases that define a key), the language server's hovers, and, given the run's target, what the
checked release defines (:class:`ReleaseKeyCatalog`: a located checkout's arguments read statically, a
stated release's shipped catalog). The data stays where it is generated:

* ``schemas/<name>.schema.json``: every key by section, type, choices, description, deprecation;
* ``linter/data/frameworks/*.json`` and ``names-<family>.json`` (``scripts/build_framework_catalogs.py``,
  loaded by :mod:`trainlint.frameworks.catalog`): which shipped release defines a name;
* :mod:`trainlint.frameworks.removed_keys`: keys that releases before the shipped catalogs read.

A format's own key tables that are not "which keys exist" stay with its adapter: the NeoX sniffer's
strong keys (``adapters/neox/keys.py``, generated from the schema, kept equal by a test) and the
Bridge ConfigContainer field map (``adapters/bridge/keys.py``: where a field lands in Megatron-LM's
argument names).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from trainlint.core.framework import KeyCatalog


class ShippedKeyCatalog(KeyCatalog):
    """The catalog of a framework from its shipped schema (``schema_name``) and argument catalogs
    (``family``: the framework's ``catalog_family``)."""

    def __init__(self, family: str, schema_name: str | None) -> None:
        self.family = family
        self.schema_name = schema_name

    def schema(self) -> dict | None:
        if self.schema_name is None:
            return None
        from trainlint.schemas import load_schema

        return load_schema(self.schema_name)

    def properties(self, section: str = "") -> dict[str, dict]:
        node: Any = self.schema()
        for part in section.split(".") if section else ():
            props = node.get("properties") if isinstance(node, dict) else None
            node = props.get(part) if isinstance(props, dict) else None
        props = node.get("properties") if isinstance(node, dict) else None
        return props if isinstance(props, dict) else {}

    def entry(self, key: str) -> dict | None:
        from trainlint.core.document import pointer_parts

        if not key:
            return None
        node: Any = self.schema()
        for part in pointer_parts(key) if key.startswith("/") else key.split("."):
            props = node.get("properties") if isinstance(node, dict) else None
            if not isinstance(props, dict) or part not in props:
                return None
            node = props[part]
        return node if isinstance(node, dict) else None

    def suggest(self, name: str, section: str = "") -> list[str]:
        from trainlint.files.did_you_mean import did_you_mean

        return did_you_mean(name, list(self.properties(section)))

    def defined_by(self, name: str) -> str:
        from trainlint.frameworks.catalog import defined_by

        return defined_by(self.family, name) if self.family else ""

    def releases_of(self, name: str) -> list[str]:
        from trainlint.frameworks.catalog import releases_of

        return releases_of(self.family, name) if self.family else []

    def release_masks(self) -> tuple[tuple[str, ...], dict[str, int]]:
        from trainlint.frameworks.catalog import shipped_names

        return shipped_names(self.family) if self.family else ((), {})

    def removed(self, pointer: str) -> Any:
        from trainlint.frameworks.removed_keys import removed_key

        return removed_key(self.family, pointer) if self.family else None


class ReleaseKeyCatalog(ShippedKeyCatalog):
    """The shipped catalog plus the argument catalog of the release a run is checked against (a
    located checkout read statically, a stated release, a pinned submodule: the target's)."""

    def __init__(self, shipped: ShippedKeyCatalog, release: Any) -> None:
        super().__init__(shipped.family, shipped.schema_name)
        self._release = release

    def release(self) -> Any:
        return self._release


@cache
def shipped_key_catalog(family: str, schema_name: str | None) -> ShippedKeyCatalog:
    """The one catalog object of a framework (memoised: its schema is loaded once)."""
    return ShippedKeyCatalog(family, schema_name)


_RELEASES: dict[tuple[int, str, str | None, type], tuple[Any, ShippedKeyCatalog]] = {}
"""(id of the release's argument catalog, family, schema, class) -> (that catalog, its key catalog):
one object per release read, so that memos keyed by it hold while the checkout is unchanged."""
_RELEASES_KEPT = 64
"""Releases remembered (a language server re-reads a checkout that changes; the oldest are dropped)."""


def key_catalog_for(family: str, schema_name: str | None, target: Any = None,
                    kind: type[ReleaseKeyCatalog] = ReleaseKeyCatalog) -> ShippedKeyCatalog:
    """A framework's catalog for a run checked against ``target`` (a
    :class:`~trainlint.frameworks.target.FrameworkTarget`, or None): the shipped one when the target
    carries no release catalog, else the shipped one with that release (``kind``: a framework's own
    subclass, e.g. NeoX's schema of the release)."""
    shipped = shipped_key_catalog(family, schema_name)
    release = getattr(target, "catalog", None) if target is not None else None  # the one read of it
    if release is None:
        return shipped
    key = (id(release), family, schema_name, kind)
    hit = _RELEASES.get(key)
    if hit is not None and hit[0] is release:
        return hit[1]
    if len(_RELEASES) >= _RELEASES_KEPT:
        _RELEASES.pop(next(iter(_RELEASES)))
    made = kind(shipped, release)
    _RELEASES[key] = (release, made)
    return made
