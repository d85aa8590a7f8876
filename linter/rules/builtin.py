"""The rules trainlint ships, as rule bundles: one per family folder (:data:`trainlint.rules.codes.FAMILIES`),
each a plugin of its own whose ``trainlint_rules`` hook implementation (the family package's
``__init__``) returns the family's rules from the codes table. Rule modules are imported only when
the hook is called."""

from __future__ import annotations

import importlib

RULE_BUNDLES: tuple[str, ...] = (
    "trainlint.rules.startup.deepspeed",
    "trainlint.rules.startup.megatron",
    "trainlint.rules.startup.neox",
    "trainlint.rules.estimation",
    "trainlint.rules.planning",
)
"""The family packages registered as plugins (:data:`trainlint.plugins.BUILTIN_PLUGINS`)."""

RULE_MODULES = (
    "trainlint.rules.startup.cross_framework",
    "trainlint.rules.startup.hf_trainer_rules",
)


def builtin_rules() -> list[type]:
    rules: list[type] = []
    for name in RULE_MODULES:
        rules.extend(importlib.import_module(name).RULES)
    return rules
