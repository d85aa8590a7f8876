"""Config keys that old framework releases read and later releases refuse, from the frameworks' history.

The shipped catalogs start at DeepSpeed 0.9.0, so a key that only older releases read looks, against
them, like a key no version defines. Configs written for those releases are still common in example
repositories (DeepSpeedExamples pins DeepSpeed 0.3.x in places); what a key was in those releases is a
fact of the framework's history, kept here with the commits that show it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RemovedKey:
    family: str
    pointer: str
    """JSON pointer of the key (``/zero_optimization/cpu_offload_params``)."""
    first: str
    """The first release that reads it."""
    last: str
    """The last release that reads it."""
    removed: str
    """The first release that refuses it."""
    replacement: str
    """What to write on releases that refuse it."""
    source: str
    """Where the history shows it."""


REMOVED_KEYS: tuple[RemovedKey, ...] = (
    RemovedKey(
        "deepspeed", "/zero_optimization/cpu_offload_params", "0.3.12", "0.6.7", "0.7.0",
        '`offload_param: {"device": "cpu"}`',
        "deepspeed/runtime/zero/constants.py ZERO_OPTIMIZATION_CPU_OFFLOAD_PARAMS = 'cpu_offload_params', added with "
        "ZeRO-3 Offload (599258f, v0.3.12), deprecated for offload_param by ZeRO-Infinity (0d4a54a, v0.3.15); the "
        "pydantic ZeRO config (599758968, #2004, v0.7.0) has no such field and forbids extra keys",
    ),
)

_BY_POINTER = {(k.family, k.pointer): k for k in REMOVED_KEYS}


def removed_key(family: str, pointer: str) -> RemovedKey | None:
    return _BY_POINTER.get((family, pointer))


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = text.lstrip("v").split(".")
    try:
        return tuple(int(p) for p in parts[:3])
    except ValueError:
        return None


def reads_it(key: RemovedKey, version: str | None) -> bool | None:
    """Whether release ``version`` reads the key (None: the version is not known)."""
    v = _version(version)
    if v is None:
        return None
    first, removed = _version(key.first), _version(key.removed)
    assert first is not None and removed is not None
    return first <= v < removed
