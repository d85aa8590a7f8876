"""A ConfigContainer as written: every leaf field by its dotted path, with where it is written.

Both YAML forms Bridge writes are read the same way: ``ConfigContainer.to_yaml()`` dumps and the
``run_config.yaml`` saved with every checkpoint (the same dump). Objects are dumped as ``_target_``
mappings (Megatron-LM ``megatron/training/config/yaml_utils.py``): a torch dtype or a function as
``{_target_: torch.bfloat16, _call_: false}``, an enum as ``{_target_: ...AttnBackend, _call_: true,
_args_: [5], _name_: auto}``, a sub-config as ``{_target_: <class>, field: value, ...}``. The first two
are read as their target or name; a sub-config's ``_target_`` is kept as the class the section builds.
Nothing is imported or instantiated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainlint.core.positions import Span

from trainlint.adapters.bridge.names import BAD_ENV_NAME, TARGET_KEY  # not .keys: the field map is read only by a Bridge run's build


@dataclass(frozen=True)
class Entry:
    """One ConfigContainer field as written."""

    path: str
    value: Any
    span: Span | None
    """Where the value is written (the override's value on a launch line)."""
    key_span: Span | None = None
    origin: str = "file"
    """``file`` (a YAML), ``override`` (a ``KEY=VALUE`` on a launch line), ``recipe`` (the recipe's base) or
    ``computed`` (the recipe sets it with code trainlint does not run: written, value unknown)."""
    note: str = ""


@dataclass
class Container:
    """The fields of one run, by dotted path; later writes replace earlier ones (a launch line's
    overrides replace the recipe's values, as Hydra's override parser does)."""

    entries: dict[str, Entry] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    """Section path -> the ``_target_`` class it builds (``model`` -> ``...Llama3ModelProvider8B``)."""

    def set(self, entry: Entry) -> None:
        self.entries[entry.path] = entry

    def get(self, path: str) -> Entry | None:
        return self.entries.get(path)

    def value(self, path: str, fallback: Any = None) -> Any:
        entry = self.entries.get(path)
        return fallback if entry is None else entry.value


def _object_value(node: dict) -> tuple[bool, Any]:
    """(is a dumped object, its value): a dtype or function (``_call_: false``) is its target string, an
    enum its ``_name_`` in lower case (``AttnBackend.auto`` -> ``auto``)."""
    if TARGET_KEY not in node:
        return False, None
    if "_name_" in node and isinstance(node["_name_"], str):
        return True, node["_name_"].lower()
    if node.get("_call_") is False and set(node) <= {TARGET_KEY, "_call_"}:
        return True, node[TARGET_KEY]
    if node.get("_partial_") is True:
        return True, node[TARGET_KEY]
    return False, None


def from_tree(data: Any, key_spans: dict[str, Span], value_spans: dict[str, Span]) -> Container:
    """The container of a YAML tree (``yaml_tree.parse_yaml``'s data and JSON-pointer spans)."""
    out = Container()
    if not isinstance(data, dict):
        return out
    stack: list[tuple[str, str, Any]] = [("", "", data)]
    while stack:
        dotted, pointer, node = stack.pop()
        for key, child in node.items():
            if not isinstance(key, str):
                continue
            ptr = pointer + "/" + key.replace("~", "~0").replace("/", "~1")
            path = f"{dotted}.{key}" if dotted else key
            if key == TARGET_KEY:
                if isinstance(child, str) and dotted:
                    out.targets[dotted] = child
                continue
            if isinstance(child, dict):
                is_object, value = _object_value(child)
                if is_object:
                    out.set(Entry(path, value, value_spans.get(ptr), key_spans.get(ptr)))
                elif dotted == "" and key == "env_vars":
                    for index, (name, v) in enumerate(child.items()):
                        sub = ptr + "/" + str(name).replace("~", "~0").replace("/", "~1")
                        if not isinstance(name, str) or not name:
                            # a name YAML reads as a number, boolean or null, or an empty one: kept as written,
                            # at its key (Bridge refuses it; rule TL695)
                            out.set(Entry(f"{BAD_ENV_NAME}.{index}", name, key_spans.get(sub), key_spans.get(sub)))
                            continue
                        out.set(Entry(f"env_vars.{name}", v, value_spans.get(sub), key_spans.get(sub)))
                else:
                    stack.append((path, ptr, child))
                continue
            out.set(Entry(path, child, value_spans.get(ptr), key_spans.get(ptr)))
    return out
