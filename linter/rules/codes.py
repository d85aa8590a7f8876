"""Every built-in rule's code, in one table (as ruff's ``codes.rs``): code, family, name, lifecycle.

A row is the one statement that a rule exists. Its family names the folder that holds the rule
(:data:`FAMILIES`), and the rule's module in that folder is named by its slug: ``TL110
zero-pipeline-conflict`` of the ``startup`` family is the class in
``trainlint.rules.startup.zero_pipeline_conflict`` whose ``code`` is ``TL110``. Each family is a rule
bundle registered through the ``trainlint_rules`` hook a plugin implements (the family package's
``__init__``, :func:`family_rules`), so a new rule is one module, one row here and one golden case
(``tests/rules/cases/TLnnn.yaml``); ``tests/rules/test_codes_table.py`` checks that the table and the
registered rules agree.

Lifecycle (ruff's rule selection, docs/configuration.md "Preview rules and removed codes"):

* ``stable``: runs when selected (``ALL`` by default).
* ``preview``: runs only in preview mode (``--preview``, or ``preview = true`` under ``[tool.trainlint]``),
  and then as a stable rule is selected; a new rule may start here while its false-positive rate is
  measured on the corpus.
* ``removed``: the code no longer has a rule. It stays in the table with the code that replaced it
  (``redirect``): selecting, ignoring or configuring it by code warns once and means its redirect,
  so a project config written for an older trainlint keeps working. A removed code has no module.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from trainlint.core.framework import (
    CAP_DEEPSPEED_CONFIG,
    CAP_DEEPSPEED_ENGINE,
    CAP_MEGATRON_ARGUMENTS,
    CAP_MEGATRON_CORE,
    CAP_MEGATRON_MODEL,
    CAP_NEOX_ARGUMENTS,
    CAP_STARTUP_CHECKS,
)

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.rules import DeferredRule


class Lifecycle(str, Enum):
    STABLE = "stable"
    PREVIEW = "preview"
    REMOVED = "removed"


STABLE, PREVIEW, REMOVED = Lifecycle.STABLE, Lifecycle.PREVIEW, Lifecycle.REMOVED


FAMILIES: dict[str, str] = {
    "startup": "trainlint.rules.startup",  # TL1xx cross-framework start-up failures (and the HF Trainer's)
    "deepspeed": "trainlint.rules.startup.deepspeed",  # DeepSpeed's own start-up checks
    "neox": "trainlint.rules.startup.neox",  # GPT-NeoX's own start-up checks
    "megatron": "trainlint.rules.startup.megatron",  # TL140-TL179, TL600-TL669 Megatron-LM's and Megatron-Core's own start-up checks
    "estimation": "trainlint.rules.estimation",  # TL2xx-TL4xx, TL900 on the estimate
    "planning": "trainlint.rules.planning",  # TL5xx run length and cost
    "bridge": "trainlint.rules.startup.bridge",  # TL670-TL699 Megatron-Bridge's ConfigContainer checks, TL116
}
"""Family -> the package (folder) holding its rule modules; each package is one rule bundle."""

SHARED_FAMILIES = ("startup", "estimation", "planning")
"""The families no framework owns (the plugin host registers them itself). Every other family is a
framework's own start-up checks, registered through its Framework object (``Framework.rules()``
names the family package; :func:`trainlint.project.plugins.register_framework_rules`)."""


_MODEL, _CORE, _STARTUP = frozenset({CAP_MEGATRON_MODEL}), frozenset({CAP_MEGATRON_CORE}), frozenset({CAP_STARTUP_CHECKS})
_DS_ENGINE, _DS_CONFIG = frozenset({CAP_DEEPSPEED_ENGINE}), frozenset({CAP_DEEPSPEED_CONFIG})

FAMILY_REQUIRES: dict[str, frozenset[str]] = {
    "startup": frozenset(),
    "deepspeed": _DS_CONFIG,
    "neox": frozenset({CAP_NEOX_ARGUMENTS}),
    "megatron": frozenset({CAP_MEGATRON_ARGUMENTS}),
    "estimation": frozenset(),
    "planning": _MODEL,
    "bridge": _CORE,
}
"""The capabilities a family's rules require unless their row says otherwise (``Code.requires``)."""


@dataclass(frozen=True)
class Code:
    """One row: a rule code, its family, its name (kebab-case; the module is its slug) and lifecycle,
    and the capabilities its rule requires (``Rule.requires``; None: its family's, :data:`FAMILY_REQUIRES`).

    The row's capabilities let the registry decide whether a rule runs on a file without importing
    its module (:func:`family_declarations`): a check imports only the rules selected for, and
    applicable to, the runs it read. ``tests/rules/test_codes_table.py`` fails when a row and its
    rule's ``requires`` disagree."""

    code: str
    family: str
    name: str
    lifecycle: Lifecycle = STABLE
    redirect: str | None = None
    """For a removed code: the code that replaced it."""
    requires: frozenset[str] | None = None

    @property
    def capabilities(self) -> frozenset[str]:
        """What a run's framework must have for the rule to run on it (its ``Rule.requires``)."""
        return self.requires if self.requires is not None else FAMILY_REQUIRES[self.family]

    @property
    def module(self) -> str | None:
        """The rule's module (None for a removed code)."""
        if self.lifecycle is REMOVED:
            return None
        return f"{FAMILIES[self.family]}.{self.name.replace('-', '_')}"


CODES: tuple[Code, ...] = (
    Code("TL100", "startup", "batch-size-mismatch"),
    Code("TL101", "startup", "world-size-not-divisible", requires=_MODEL),
    Code("TL103", "startup", "precision-conflict", requires=_STARTUP),
    Code("TL104", "startup", "attention-heads-layout", requires=_MODEL),
    Code("TL105", "startup", "layers-pipeline-indivisible", requires=_CORE),
    Code("TL106", "startup", "sequence-parallel-without-tp", requires=_MODEL),
    Code("TL107", "startup", "seq-length-exceeds-positions", requires=_MODEL),
    Code("TL108", "startup", "seq-length-context-parallel", requires=_CORE),
    Code("TL109", "startup", "experts-expert-parallel", requires=_CORE),
    Code("TL110", "startup", "zero-pipeline-conflict", requires=_STARTUP),
    Code("TL111", "startup", "moe-zero-conflict", requires=_MODEL),
    Code("TL112", "startup", "precision-unsupported-gpu", requires=_STARTUP),
    Code("TL113", "deepspeed", "ds-optimizer-max-grad-norm"),
    Code("TL114", "deepspeed", "ds-amp-grad-accum-dtype"),
    Code("TL115", "deepspeed", "ds-legacy-stage1"),
    Code("TL120", "deepspeed", "ds-batch-size-missing"),
    Code("TL121", "deepspeed", "ds-allreduce-sum-unsupported"),
    Code("TL122", "deepspeed", "ds-master-weights-without-zero"),
    Code("TL123", "deepspeed", "ds-partial-offload-without-zero3"),
    Code("TL124", "deepspeed", "ds-param-dtype-conflict"),
    Code("TL125", "deepspeed", "ds-unsupported-optimizer"),
    Code("TL126", "deepspeed", "ds-lamb-static-loss-scale"),
    Code("TL127", "deepspeed", "ds-unmanaged-grad-accum-conflict"),
    Code("TL128", "deepspeed", "ds-amp-conflict"),
    Code("TL129", "deepspeed", "ds-zero-untested-optimizer"),
    Code("TL130", "deepspeed", "ds-grad-accum-dtype-mix"),
    Code("TL131", "deepspeed", "ds-onebit-optimizer-with-zero"),
    Code("TL132", "deepspeed", "ds-elastic-batch-params"),
    Code("TL133", "deepspeed", "ds-elastic-pipeline"),
    Code("TL134", "deepspeed", "ds-bf16-grad-accum-pipeline", requires=_DS_ENGINE),
    Code("TL135", "deepspeed", "ds-max-grad-norm-ignored"),
    Code("TL136", "deepspeed", "ds-nvme-path-missing"),
    Code("TL137", "startup", "hf-trainer-deepspeed-mismatch", requires=_DS_CONFIG),
    Code("TL138", "deepspeed", "ds-dynamic-loss-scale-range"),
    Code("TL139", "deepspeed", "ds-elasticity-config"),
    Code("TL140", "megatron", "megatron-overlap-param-gather"),
    Code("TL141", "megatron", "megatron-optimizer-arguments"),
    Code("TL142", "megatron", "megatron-fsdp-arguments"),
    Code("TL143", "megatron", "megatron-freeze-all-layers"),
    Code("TL144", "megatron", "megatron-recompute-arguments"),
    Code("TL145", "megatron", "megatron-distribute-saved-activations"),
    Code("TL146", "megatron", "megatron-cpu-offloading"),
    Code("TL147", "megatron", "megatron-virtual-pipeline-arguments"),
    Code("TL148", "megatron", "megatron-interleaved-pipeline-size"),
    Code("TL149", "megatron", "megatron-uneven-pipeline-stages"),
    Code("TL150", "megatron", "megatron-low-precision-arguments"),
    Code("TL151", "megatron", "megatron-mixed-precision-options"),
    Code("TL152", "megatron", "megatron-tp-comm-overlap-without-sp"),
    Code("TL153", "megatron", "megatron-hierarchical-context-parallel"),
    Code("TL154", "megatron", "megatron-moe-arguments-without-experts"),
    Code("TL155", "megatron", "megatron-moe-bias-with-expert-tp"),
    Code("TL156", "megatron", "megatron-moe-router-arguments"),
    Code("TL157", "megatron", "megatron-moe-dispatcher-arguments"),
    Code("TL158", "megatron", "megatron-attention-variant-arguments"),
    Code("TL159", "megatron", "megatron-encoder-arguments-twice"),
    Code("TL160", "megatron", "megatron-position-embedding-arguments"),
    Code("TL161", "megatron", "megatron-batch-schedule-arguments"),
    Code("TL162", "megatron", "megatron-training-length-arguments"),
    Code("TL163", "megatron", "megatron-min-lr-above-lr"),
    Code("TL164", "megatron", "megatron-save-interval"),
    Code("TL165", "megatron", "megatron-data-sources"),
    Code("TL166", "megatron", "megatron-cuda-graph-flags"),
    Code("TL167", "megatron", "megatron-cuda-graph-arguments"),
    Code("TL168", "megatron", "megatron-activation-offloading-arguments"),
    Code("TL169", "megatron", "megatron-moe-combination-arguments"),
    Code("TL170", "megatron", "megatron-model-variant-arguments"),
    Code("TL171", "megatron", "megatron-rl-arguments"),
    Code("TL172", "megatron", "megatron-checkpoint-data-arguments"),
    Code("TL173", "megatron", "megatron-weight-shard-arguments"),
    Code("TL174", "megatron", "megatron-interleaved-microbatches"),
    Code("TL175", "megatron", "megatron-batch-size-schedule"),
    Code("TL600", "megatron", "megatron-legacy-model-arguments"),
    Code("TL601", "megatron", "megatron-moe-release-arguments"),
    Code("TL602", "megatron", "megatron-cuda-graph-release-arguments"),
    Code("TL603", "megatron", "megatron-dynamic-batching-arguments"),
    Code("TL604", "megatron", "megatron-fsdp-checkpoint-release-arguments"),
    Code("TL605", "megatron", "megatron-rl-release-arguments"),
    Code("TL606", "megatron", "megatron-weight-shard-combination-arguments"),
    Code("TL607", "megatron", "megatron-pipeline-release-arguments"),
    Code("TL608", "megatron", "megatron-batch-rampup-arguments"),
    Code("TL609", "megatron", "megatron-model-release-arguments"),
    Code("TL610", "megatron", "megatron-core-config-release-checks"),
    Code("TL611", "megatron", "megatron-launch-release-checks"),
    Code("TL612", "megatron", "megatron-required-arguments"),
    Code("TL613", "megatron", "megatron-core-pipeline-layout-stages"),
    Code("TL630", "megatron", "megatron-core-activation-arguments"),
    Code("TL631", "megatron", "megatron-core-moe-router-arguments"),
    Code("TL632", "megatron", "megatron-core-rope-arguments"),
    Code("TL633", "megatron", "megatron-core-batch-rampup"),
    Code("TL634", "megatron", "megatron-core-pipeline-communication"),
    Code("TL635", "megatron", "megatron-core-attention-variant-arguments"),
    Code("TL636", "megatron", "megatron-core-module-choices"),
    Code("TL637", "megatron", "megatron-core-offload-module-combinations"),
    Code("TL638", "megatron", "megatron-core-cuda-graph-modules"),
    Code("TL639", "megatron", "megatron-core-batch-invariant-arguments"),
    Code("TL640", "megatron", "megatron-core-recompute-arguments"),
    Code("TL641", "deepspeed", "ds-engine-feature-combinations"),
    Code("TL642", "megatron", "megatron-core-low-precision-arguments"),
    Code("TL643", "megatron", "megatron-core-inference-optimized-arguments"),
    Code("TL644", "deepspeed", "ds-elasticity-world-size"),
    Code("TL180", "neox", "neox-bf16-zero-without-fp32-grad-accum"),
    Code("TL181", "neox", "neox-onebitadam-without-train-iters"),
    Code("TL182", "neox", "neox-attention-config-length"),
    Code("TL183", "neox", "neox-architecture-constraints"),
    Code("TL184", "neox", "neox-grouped-query-attention"),
    Code("TL185", "neox", "neox-required-model-keys"),
    Code("TL186", "neox", "neox-min-lr-above-lr"),
    Code("TL187", "neox", "neox-save-without-checkpoint-factor"),
    Code("TL188", "neox", "neox-num-unique-layers"),
    Code("TL189", "neox", "neox-fp16-lm-cross-entropy"),
    Code("TL190", "neox", "neox-data-paths"),
    Code("TL191", "neox", "neox-incomplete-run"),
    Code("TL192", "neox", "neox-deepspeed-disabled"),
    Code("TL201", "estimation", "oom-risk"),
    Code("TL202", "estimation", "buffers-dominate-memory", requires=_DS_ENGINE),
    Code("TL301", "estimation", "low-expected-mfu"),
    Code("TL302", "estimation", "large-pipeline-bubble", requires=_MODEL),
    Code("TL303", "estimation", "tp-across-nodes", requires=_MODEL),
    Code("TL304", "estimation", "memory-bound"),
    Code("TL305", "estimation", "small-gemms", requires=_MODEL),
    Code("TL401", "estimation", "network-bound-dp"),
    Code("TL402", "estimation", "zero3-large-dp", requires=_DS_ENGINE),
    Code("TL501", "planning", "few-tokens-per-parameter"),
    Code("TL502", "planning", "short-pretraining-run"),
    Code("TL503", "planning", "run-exceeds-max-days"),
    Code("TL504", "planning", "run-exceeds-max-cost"),
    Code("TL900", "estimation", "estimate-unavailable"),
    Code("TL116", "bridge", "cuda-device-max-connections"),
    Code("TL670", "bridge", "bridge-training-length"),
    Code("TL671", "bridge", "bridge-sequence-length"),
    Code("TL672", "bridge", "bridge-precision-flags"),
    Code("TL673", "bridge", "bridge-checkpoint-settings"),
    Code("TL674", "bridge", "bridge-fsdp-settings"),
    Code("TL675", "bridge", "bridge-context-parallel-comm"),
    Code("TL676", "bridge", "bridge-packing-settings"),
    Code("TL677", "bridge", "bridge-scheduler-settings"),
    Code("TL678", "bridge", "bridge-epoch-sample-training"),
    Code("TL679", "bridge", "bridge-profiling-settings"),
    Code("TL680", "bridge", "bridge-logger-settings"),
    Code("TL681", "bridge", "bridge-straggler-settings"),
    Code("TL682", "bridge", "bridge-deterministic-mode"),
    Code("TL683", "bridge", "bridge-megatron-fsdp-v2"),
    Code("TL684", "bridge", "bridge-mixed-precision"),
    Code("TL685", "bridge", "bridge-cuda-graph-settings"),
    Code("TL686", "bridge", "bridge-modelopt-settings"),
    Code("TL687", "bridge", "bridge-gloo-process-groups"),
    Code("TL688", "bridge", "bridge-fine-grained-offloading"),
    Code("TL689", "bridge", "bridge-offline-packing-specs"),
    Code("TL690", "bridge", "bridge-gpt-dataset-flags"),
    Code("TL691", "bridge", "bridge-reshardable-optimizer"),
    Code("TL692", "bridge", "bridge-hf-export-source"),
    Code("TL693", "bridge", "bridge-eval-batch-source"),
    Code("TL694", "bridge", "bridge-lr-decay-steps"),
    Code("TL695", "bridge", "bridge-env-vars"),
)

BY_CODE: dict[str, Code] = {row.code: row for row in CODES}


def family_rules(package: str) -> list[type]:
    """The rule classes of one family (its package name), imported from their modules, each with its
    row's lifecycle; the family package's ``trainlint_rules`` hook returns them."""
    from trainlint.rules import Rule

    rules: list[type] = []
    for row in CODES:
        if row.module is None or FAMILIES[row.family] != package:
            continue
        module = importlib.import_module(row.module)
        rule = next((value for value in vars(module).values()
                     if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__
                     and getattr(value, "code", None) == row.code), None)
        if rule is None:
            raise LookupError(f"{row.module} defines no rule with code {row.code} (linter/rules/codes.py)")
        rule.lifecycle = row.lifecycle.value
        rules.append(rule)
    return rules


def family_declarations(package: str) -> list[DeferredRule]:
    """The rules of one family (its package name) as declarations read from their rows, each
    importing its module when the engine first needs the rule (it is selected and its run's
    framework has the capabilities it requires), or when anything asks for the rule class itself;
    the family package's ``trainlint_rules`` hook returns them."""
    from trainlint.rules import DeferredRule

    # the family first: each family's hook reads the whole table, and `module` builds a string (~2,500 of
    # them in every start)
    return [DeferredRule(row.code, row.name, module, requires=row.capabilities, lifecycle=row.lifecycle.value)
            for row in CODES if FAMILIES[row.family] == package and (module := row.module) is not None]


def removed(code: str) -> Code | None:
    """The row of a removed code (None when the code is not a removed one)."""
    row = BY_CODE.get(code.strip().upper())
    return row if row is not None and row.lifecycle is REMOVED else None


def redirected(selector: str, warnings: list[str]) -> str:
    """``selector``, or the code that replaced it when it is a removed code (with a warning added to
    ``warnings``, once per code). Prefixes and names are left alone: a prefix still selects the
    codes that exist under it."""
    row = removed(selector)
    if row is None or row.redirect is None:
        return selector
    said = f"{row.code} ({row.name}) was removed; using {row.redirect} instead"
    if said not in warnings:
        warnings.append(said)
    return row.redirect
