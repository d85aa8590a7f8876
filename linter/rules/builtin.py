"""The rules trainlint ships. Rule modules are imported here, lazily, when rules are needed.

The Megatron-LM start-up rules are bundles of their own, one per family
(:mod:`trainlint.rules.startup.megatron`), each registered through its own hook implementation."""

from __future__ import annotations

import importlib

RULE_MODULES = (
    "trainlint.rules.startup.cross_framework",
    "trainlint.rules.startup.deepspeed_rules",
    "trainlint.rules.startup.deepspeed_launch",
    "trainlint.rules.startup.ds_engine_feature_combinations",  # TL641
    "trainlint.rules.startup.neox_rules",
    "trainlint.rules.startup.neox_launch",
    "trainlint.rules.startup.hf_trainer_rules",
    "trainlint.rules.estimation.memory_rules",
    "trainlint.rules.estimation.throughput_rules",
    "trainlint.rules.estimation.communication_rules",
    "trainlint.rules.estimation.availability",
    "trainlint.rules.planning.planning_rules",
)


def builtin_rules() -> list[type]:
    rules: list[type] = []
    for name in RULE_MODULES:
        rules.extend(importlib.import_module(name).RULES)
    return rules
