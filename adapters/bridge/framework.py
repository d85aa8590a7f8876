"""Everything Megatron-Bridge contributes, from one module: the adapter (reading YAML and launch lines),
the spelling of a change, the recipe catalog, and what the format can express (its start-up rules are
the ``bridge`` rule family, ``trainlint.rules.startup.bridge``, a layer above). Registered as
one of trainlint's built-in plugins (``trainlint.plugins.BUILTIN_PLUGINS``) through the public hooks, so a
``Framework`` object can wrap it as it stands."""

from __future__ import annotations

from trainlint import hookimpl

NAME = "bridge"
ENGINE = "megatron"
"""A Bridge run is a Megatron-Core run: its spec's ``framework``; ``format`` is :data:`NAME`."""
CAPABILITIES = frozenset({"read-yaml", "read-launch-line", "spell-changes", "recipe-catalog"})
"""What the format supports today (no writer yet: ``suggest --write-to`` and ``check --fix`` do not write it)."""


def adapter():
    from trainlint.adapters.bridge.adapter import BridgeAdapter

    return BridgeAdapter()


def spelling():
    from trainlint.adapters.bridge.spelling import spell_changes

    return spell_changes


def catalog():
    from trainlint.adapters.bridge import recipes

    return recipes


@hookimpl
def trainlint_adapters():
    return [adapter()]

