"""Everything Megatron-Bridge contributes, from one module: the adapter (reading YAML and launch lines),
the spelling of a change, the recipe catalog, and what the format can express (its start-up rules are
the ``bridge`` rule family, ``trainlint.rules.startup.bridge``, a layer above). A Bridge run is a
Megatron-Core run, so its adapter is one of the Megatron framework's (``MegatronFramework.adapters``,
registered through ``trainlint_frameworks``) and its specs get that framework's engine semantics,
search space and capabilities; the format's own spelling of a change is its adapter's."""

from __future__ import annotations

from trainlint.adapters.bridge.names import ENGINE, FORMAT as NAME  # noqa: F401 - the format and its engine
CAPABILITIES = frozenset({"read-yaml", "read-launch-line", "spell-changes", "write", "recipe-catalog"})
"""What the format supports: its writer (``adapters/bridge/writer.py``, the adapter's ``writer``) serves
``check --fix``, ``suggest --write-to`` and the language server's code actions."""


def adapter():
    from trainlint.adapters.bridge.adapter import BridgeAdapter

    return BridgeAdapter()


def writer():
    from trainlint.adapters.bridge.writer import BridgeWriter

    return BridgeWriter


def spelling():
    from trainlint.adapters.bridge.spelling import spell_changes

    return spell_changes


def catalog():
    from trainlint.adapters.bridge import recipes

    return recipes
