"""TL644: a stated data-parallel world size that DeepSpeed's elastic batch computation does not
accept (``compute_elastic_config``), with the valid GPU counts computed from the ``elasticity``
section the way ``deepspeed/elasticity/elasticity.py`` computes them."""

from __future__ import annotations

import math
from functools import reduce
from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.core.provenance import Origin, Value
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.deepspeed.launch_helpers import DS, _number
from trainlint.rules.startup.derive import as_bool, as_int, ds, ds_target
from trainlint.rules.startup.releases import UNRELEASED, ReleaseBoundRule, Releases, release_key
from trainlint.core.spec import TrainingSpec

HCN_LIST = (1, 2, 4, 6, 12, 24, 36, 48, 60, 120, 180, 240, 360, 720, 840, 1260, 1680, 2520, 5040, 7560, 10080, 15120,
            20160, 25200, 27720, 45360, 50400, 55440, 83160, 110880, 166320, 221760, 277200, 332640, 498960, 554400,
            665280, 720720)
"""deepspeed/elasticity/elasticity.py:21-24 (the highly composite numbers a base batch is scaled by)."""

_LIMIT = 1 << 20
"""GPU counts scanned at most: a larger elastic batch is left unchecked rather than slow."""


def _candidates(bases: list[int], cap: int, skip_over_cap: bool) -> list[int]:
    """get_candidate_batch_sizes: each base scaled by the largest HCN that keeps it within the cap
    (upstream after 0.19.0 drops a base above the cap; releases up to 0.19.0 keep it as it is)."""
    out = set()
    for base in bases:
        if base > cap and skip_over_cap:
            continue
        if base >= cap:
            out.add(base)
            continue
        value = cap // base
        index = next((i for i, h in enumerate(HCN_LIST) if h > value), 0)  # np.argmax: 0 when none is larger
        out.add(HCN_LIST[index - 1] * base)
    return sorted(out)


def _valid_gpus(batch: int, micro: list[int], low: int, high: int) -> list[int]:
    found = set()
    for mb in micro:
        if batch % mb == 0:
            top = batch // mb
            if low <= top <= high:
                found.add(top)
            for i in range(1, min(top // 2, high) + 1):
                if i >= low and top % i == 0:
                    found.add(i)
    return sorted(found)


def _v01(micro: list[int], cap: int, low: int | None, high: int | None, prefer_larger: bool,
         skip_over_cap: bool) -> tuple[int, list[int] | None]:
    """_get_compatible_gpus_v01 with get_best_candidates: (final batch, valid GPU counts)."""
    low = low or 1
    high = high or cap // min(micro)
    lcm = reduce(lambda x, y: x * y // math.gcd(x, y), micro)
    best_count, valid, final = 0, None, int(min(micro))
    # the candidates in the order Python's set gives them decide ties; the order of small ints is their value
    for batch in _candidates([*micro, lcm], cap, skip_over_cap):
        if batch // min(micro) > _LIMIT:
            raise OverflowError
        gpus = _valid_gpus(batch, micro, low, high)
        if len(gpus) > best_count or (len(gpus) == best_count and ((prefer_larger and batch > final) or
                                                                  (not prefer_larger and batch < final))):
            best_count, valid, final = len(gpus), gpus, batch
    return final, valid


def elastic_batch(micro: list[int], cap: int, world: int, version: float, low: int, high: int, prefer_larger: bool,
                  gpn: int, mp: int, skip_over_cap: bool) -> tuple[int, list[int] | None]:
    """compute_elastic_config's (final batch, valid GPU counts) for a world size."""
    if version == 0.1:
        return _v01(micro, cap, low, high, prefer_larger, skip_over_cap)
    per_node = gpn // mp
    final, valid = _v01(micro, int(cap / per_node), int(low / gpn), int(high / gpn), prefer_larger, skip_over_cap)
    final *= per_node
    dp_valid = [i * per_node for i in valid or []]
    if world // mp in dp_valid:
        return final, dp_valid
    dp = (world / gpn) * per_node
    sizes = [math.floor(cap / float(mb * dp)) * mb * dp for mb in micro]
    return int(max(sizes) if prefer_larger else min(sizes)), [int(dp)]


def _int_list(value: Value | None) -> list[int] | None:
    if value is None or not isinstance(value.value, list) or not value.value:
        return None
    out = [v for v in value.value if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return out if len(out) == len(value.value) else None


class ElasticityWorldSize(ReleaseBoundRule):
    """## What it does
    With elasticity enabled and the world size stated (the GPU count given on the command line or
    by the launcher, not assumed; no tensor or pipeline parallelism, so that it is the data-parallel
    size DeepSpeed computes with), computes the elastic batch and its valid GPU counts
    from `max_train_batch_size`, `micro_batch_sizes`, `min_gpus`, `max_gpus`, `prefer_larger_batch`,
    `version`, `num_gpus_per_node` and `model_parallel_size` as DeepSpeed does, and checks that the
    world size is one of them and that some micro batch divides the batch per GPU.

    ## Why is this bad?
    `DeepSpeedConfig` runs `compute_elastic_config` with the world size while it reads the config and
    raises `ElasticityIncompatibleWorldSize` (or asserts) before the engine exists.

    ## Example
    ```json
    {"elasticity": {"enabled": true, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                    "min_gpus": 1, "max_gpus": 10000, "version": 0.1}}
    ```
    run on 7 GPUs: the valid counts of the batch 1680 do not include 7.

    ## Fix
    Run on one of the valid GPU counts the message lists, or change the micro batches or the batch cap.

    ## References
    - DeepSpeed `deepspeed/elasticity/elasticity.py:21-194`, `352-366` @ edaa722: the candidate batches,
      valid GPU counts, "World size (...) is not valid with the current list of valid GPU counts: ...",
      "Unable to find divisible micro batch size world_size=..., final_batch_size=..., and micro_batches=...".
    - DeepSpeed `deepspeed/runtime/config.py:720-737` @ edaa722: the world size passed (the data-parallel size).
    """

    code = "TL644"
    name = "ds-elasticity-world-size"
    default_severity = Severity.ERROR
    summary = "a stated world size that DeepSpeed's elastic batch computation refuses"
    requires = DS
    releases = Releases("deepspeed")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if as_bool(ds(spec, "elasticity.enabled")) is not True:
            return
        world_v = spec.cluster.world_size
        world = as_int(world_v)
        if world_v is None or world_v.provenance.origin in (Origin.ASSUMED, Origin.DEFAULT) or world is None or world <= 0:
            return
        # DeepSpeedConfig passes the world size, or with a model-parallel unit the data-parallel size: judged
        # only when the two are the same (no tensor or pipeline parallelism)
        if any((as_int(v) or 1) != 1 for v in (spec.parallel.tensor, spec.parallel.pipeline)
               if v is not None) or any(v is not None and as_int(v) is None
                                        for v in (spec.parallel.tensor, spec.parallel.pipeline)):
            return
        if (as_int(ds(spec, "sequence_parallel_size")) or 1) != 1:
            return  # the world size DeepSpeed passes is divided by it; not modelled
        micro, cap = _int_list(ds(spec, "elasticity.micro_batch_sizes")), as_int(ds(spec, "elasticity.max_train_batch_size"))
        if micro is None or cap is None or cap <= 0 or any(m > cap for m in micro):
            return  # TL139's
        settings = self._settings(spec)
        if settings is None:
            return
        version, low, high, prefer_larger, gpn, mp = settings
        if mp > 1:
            return  # DeepSpeed then compares its world size with data-parallel counts; not judged
        skip_over_cap = self._upstream(spec)
        try:
            final, valid = elastic_batch(micro, cap, world, version, low, high, prefer_larger, gpn, mp, skip_over_cap)
        except (OverflowError, ZeroDivisionError, ValueError):
            return
        if valid is None:
            return
        at = ds_target(spec, "elasticity.enabled")
        also = ((world_v, "world size"),)
        if world not in valid:
            shown = valid if len(valid) <= 24 else [*valid[:24], "..."]
            yield Finding(f"elasticity gives a batch of {final} whose valid GPU counts are {shown}; the data-parallel "
                          f"world size is {world}: DeepSpeed stops with \"World size ({world}) is not valid with the "
                          f"current list of valid GPU counts: ...\"", at=at, also=also)
            return
        if not any(final // world % mb == 0 for mb in micro):
            yield Finding(f"elasticity gives a batch of {final} on {world} GPUs ({final // world} a GPU), which no micro "
                          f"batch of {micro} divides: DeepSpeed stops with \"Unable to find divisible micro batch size\"",
                          at=at, also=also)

    @staticmethod
    def _settings(spec: TrainingSpec) -> tuple[float, int, int, bool, int, int] | None:
        version_v = ds(spec, "elasticity.version")
        version = _number(version_v) if version_v is not None else 0.2
        low = as_int(ds(spec, "elasticity.min_gpus")) if ds(spec, "elasticity.min_gpus") is not None else 1
        high = as_int(ds(spec, "elasticity.max_gpus")) if ds(spec, "elasticity.max_gpus") is not None else 10000
        prefer_v = ds(spec, "elasticity.prefer_larger_batch")
        prefer = as_bool(prefer_v) if prefer_v is not None else True
        gpn = as_int(ds(spec, "elasticity.num_gpus_per_node")) if ds(spec, "elasticity.num_gpus_per_node") is not None else 1
        mp = as_int(ds(spec, "elasticity.model_parallel_size")) if ds(spec, "elasticity.model_parallel_size") is not None \
            else 1
        if version not in (0.1, 0.2) or prefer is None or None in (low, high, gpn, mp):
            return None
        assert low is not None and high is not None and gpn is not None and mp is not None
        if low < 1 or high < low or gpn < 1 or mp < 1 or gpn % mp or (mp > 1 and version != 0.2):
            return None  # TL139's
        return float(version), low, high, bool(prefer), gpn, mp

    @staticmethod
    def _upstream(spec: TrainingSpec) -> bool:
        """Upstream after 0.19.0 drops a candidate base above the batch cap; a stated release up to 0.19.0 keeps it."""
        target = spec.target
        key = release_key(getattr(target, "version", None)) if target is not None and target.known else None
        return key is None or getattr(target, "version", None) == UNRELEASED or key > (0, 19, 0)


RULES: list[type] = [ElasticityWorldSize]
