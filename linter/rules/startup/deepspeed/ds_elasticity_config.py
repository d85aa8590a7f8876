"""TL139: elasticity enabled without its batch keys, with an unsupported version, or with out-of-range values"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.core.provenance import Value
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    ds,
    ds_present,
    ds_target,
    pipeline_engine,
)
from trainlint.rules.startup.releases import ReleaseBoundRule, Releases
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.launch_helpers import DS, _number


LATEST_ELASTICITY_VERSION = 0.2
"""deepspeed/elasticity/constants.py:31 @ edaa722 (the same in every release since 0.3.x)."""


def _also(value: Value | None, note: str) -> tuple[tuple[Value, str], ...]:
    return () if value is None else ((value, note),)


def _shown(version: float) -> str:
    return f"{version:g}"


class ElasticityConfig(ReleaseBoundRule):
    """## What it does
    Checks the `elasticity` section when it is enabled, as DeepSpeed does when it reads the config:
    `max_train_batch_size` and `micro_batch_sizes` must be given; `max_gpus` not below `min_gpus`;
    every micro batch at most `max_train_batch_size`; `version` at most 0.2 (the newest DeepSpeed
    runs) and one it implements (0.1 or 0.2); model parallelism (`model_parallel_size` > 1) only
    with version 0.2, whose `num_gpus_per_node` must be a multiple of `model_parallel_size`.

    ## Why is this bad?
    `DeepSpeedConfig` computes the elastic batch while it reads the config and raises
    `ElasticityConfigError` (or `ElasticityError`) before the engine exists.

    ## Example
    ```json
    {"elasticity": {"enabled": true}}
    ```

    ## Fix
    Give `max_train_batch_size` and `micro_batch_sizes`; use elasticity version 0.2 with model
    parallelism; keep the other values in range.

    ## References
    - DeepSpeed `deepspeed/elasticity/config.py:50-85` @ edaa722: "Elasticity config missing
      max_train_batch_size", "Elasticity config missing micro_batch_sizes", "Elasticity min_gpus cannot
      be greater than max_gpus".
    - DeepSpeed `deepspeed/elasticity/elasticity.py:113-115`, `145-149`, `296-304`, `347-348` @ edaa722:
      "All micro batches must be less than or equal to max_acceptable_batch_size", "In Elasticity v0.2,
      number of GPUs per node ... should be divisible by model parallel size", "Elasticity V0.1 does not
      support model-parallel training", "Attempting to run elasticity version ... but runtime only
      supports up to 0.2", "Unable to find elastic logic for version".
    """

    code = "TL139"
    name = "ds-elasticity-config"
    default_severity = Severity.ERROR
    summary = "elasticity enabled without its batch keys, with an unsupported version, or with out-of-range values"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        enabled = ds(spec, "elasticity.enabled")
        if as_bool(enabled) is not True:
            return
        for key in ("max_train_batch_size", "micro_batch_sizes"):
            if not ds_present(spec, "elasticity." + key):
                yield Finding(f"elasticity is enabled without elasticity.{key}; DeepSpeed stops: \"Elasticity config "
                              f"missing {key}\"", at=enabled, fix=f"add elasticity.{key}")
                return  # DeepSpeed stops at the first missing key
        yield from self._gpus(spec)
        yield from self._micro_batches(spec)
        yield from self._version(spec)

    @staticmethod
    def _gpus(spec: TrainingSpec) -> Iterator[Finding]:
        low_v, high_v = ds(spec, "elasticity.min_gpus"), ds(spec, "elasticity.max_gpus")
        low, high = as_int(low_v), as_int(high_v)
        if low_v is None and high_v is None:
            return
        low, high = (1 if low_v is None else low), (10000 if high_v is None else high)
        if low is not None and high is not None and 1 <= high < low:
            yield Finding(f"elasticity.max_gpus {high} is below min_gpus {low}; DeepSpeed stops: \"Elasticity min_gpus "
                          "cannot be greater than max_gpus\"", at=high_v or low_v,
                          also=((low_v, "min_gpus"),) if low_v is not None and high_v is not None else ())

    @staticmethod
    def _micro_batches(spec: TrainingSpec) -> Iterator[Finding]:
        micro_v, top_v = ds(spec, "elasticity.micro_batch_sizes"), ds(spec, "elasticity.max_train_batch_size")
        top = as_int(top_v)
        if micro_v is None or top is None or not isinstance(micro_v.value, list):
            return
        sizes = [m for m in micro_v.value if isinstance(m, int) and not isinstance(m, bool)]
        over = [m for m in sizes if m > top]
        if over and len(sizes) == len(micro_v.value):
            yield Finding(f"elasticity.micro_batch_sizes {sizes} has {over[0]} above max_train_batch_size {top}; "
                          "DeepSpeed stops: \"All micro batches must be less than or equal to max_acceptable_batch_size\"",
                          at=micro_v, also=((top_v, "max_train_batch_size"),))

    @staticmethod
    def _version(spec: TrainingSpec) -> Iterator[Finding]:
        version_v = ds(spec, "elasticity.version")
        version = _number(version_v) if version_v is not None else LATEST_ELASTICITY_VERSION
        mp_v = ds(spec, "elasticity.model_parallel_size")
        mp = as_int(mp_v) if mp_v is not None else 1
        if version is None or mp is None:
            return
        where = version_v if version_v is not None else ds_target(spec, "elasticity.enabled")
        if mp > 1 and version != 0.2:
            yield Finding(f"elasticity version {_shown(version)} with model_parallel_size {mp}; DeepSpeed stops: "
                          f"\"Elasticity V{_shown(version)} does not support model-parallel training\"", at=where,
                          also=_also(mp_v, "model_parallel_size"), fix="use elasticity version 0.2")
            return
        if version > LATEST_ELASTICITY_VERSION:
            yield Finding(f"elasticity version {_shown(version)}; DeepSpeed stops: \"Attempting to run elasticity version "
                          f"{_shown(version)} but runtime only supports up to {LATEST_ELASTICITY_VERSION}\"", at=where,
                          fix="use elasticity version 0.2")
            return
        if version not in (0.1, 0.2):
            yield Finding(f"elasticity version {_shown(version)} is neither 0.1 nor 0.2; DeepSpeed stops: \"Unable to "
                          f"find elastic logic for version: {_shown(version)}\"", at=where, fix="use elasticity version 0.2")
            return
        gpn_v = ds(spec, "elasticity.num_gpus_per_node")
        gpn = as_int(gpn_v) if gpn_v is not None else 1
        if version == 0.2 and gpn and mp and mp >= 1 and gpn % mp and pipeline_engine(spec) is None:
            # with the pipeline engine, TL133 reports the same divisibility
            yield Finding(f"elasticity.num_gpus_per_node {gpn} is not a multiple of model_parallel_size {mp}; DeepSpeed "
                          f"stops: \"In Elasticity v0.2, number of GPUs per node:{gpn} should be divisible by model "
                          f"parallel size {mp}\"", at=gpn_v or where, also=_also(mp_v, "model_parallel_size"))
