"""Memory per GPU judged when the world size is not stated.

A config that says nothing about how many GPUs it runs on (a GPT-NeoX YAML without a hostfile, a
Megatron model-arguments fragment) gets an estimate on one assumed node, and the rules stay silent
on it: a verdict on a guessed world would be a guess. But the memory of one GPU depends on the
data-parallel size only through what is sharded over it (ZeRO stage >= 1, Megatron's distributed
optimizer, FSDP: 1/DP of the optimizer states, gradients or parameters), through a micro batch or
a number of micro-batches derived from the global batch by DP, and through the DP communicator
and buckets that exist only when DP > 1. Without sharding it is the same at every DP; with it, it
falls as DP grows. So the memory rules may judge the *least* memory over every data-parallel size
the config allows: an out-of-memory at that size is one at every size, and nothing is said that
some world size would make false.

The data-parallel sizes tried are 1, 2, the assumed one, and the largest the config allows among
the powers of two up to ``MAX_DP`` and the largest divisors of the global batch (the sizes a fixed
global batch allows end at global / micro); the estimator itself refuses a size the batch or the
layout does not allow. From DP 2 on, memory per GPU only falls as DP grows, so the largest allowed
size holds the least.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from trainlint.core.framework import framework_of
from trainlint.estimator.inputs import unjudged
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.rules.estimation.scope import unmodelled, usable_estimate
from trainlint.core.spec import TrainingSpec

MAX_DP = 2 ** 17
"""The largest data-parallel size tried: 131,072 replicas, more GPUs than any run the corpus states."""

_LARGEST_DIVISORS = 8


@dataclass(frozen=True)
class MemoryVerdict:
    """The estimate a memory rule compares with the GPU, and what it assumed."""

    estimate: Any
    """The estimate whose worst stage is judged: the config's own when its world size is stated;
    otherwise the one with the least memory per GPU over the data-parallel sizes tried."""
    spec: TrainingSpec
    """The spec ``estimate`` was made from (its world size set to the one judged), for re-estimated fixes."""
    samples: tuple[Any, ...] = ()
    """Every estimate made over the data-parallel sizes tried (empty when the world size is stated)."""
    note: str = ""
    """What the finding must add about the assumption ("" when nothing was assumed)."""

    @property
    def world_assumed(self) -> bool:
        return bool(self.samples)


def memory_verdict(spec: TrainingSpec, est: Any, estimator: Callable[[TrainingSpec], Any] | None,
                   shared: dict[str, Any] | None = None) -> MemoryVerdict | None:
    """The estimate the memory rules (TL201, TL202) may judge, or None when they must stay silent.

    The world size assumed (and nothing else the rules refuse to judge): re-estimated at every
    data-parallel size tried; the verdict holds the one with the least memory per GPU. ``shared``
    (a rule's ``ctx.shared``) keeps the verdict for the other rules of the same spec's run."""
    if shared is None:
        return _verdict(spec, est, estimator)
    if "memory_verdict" not in shared:
        shared["memory_verdict"] = _verdict(spec, est, estimator)
    return shared["memory_verdict"]


def _verdict(spec: TrainingSpec, est: Any, estimator: Callable[[TrainingSpec], Any] | None) -> MemoryVerdict | None:
    if usable_estimate(spec, est) is not None:
        return MemoryVerdict(est, spec)
    if estimator is None or not getattr(est, "ok", False) or unmodelled(spec):
        return None
    if {a.field for a in unjudged(est)} != {"cluster.world_size"}:
        return None  # an assumed micro batch or sequence length moves memory itself: no verdict
    if _layout_elsewhere(spec):
        return None
    i = est.inputs
    model_par = i.tp * i.pp * i.cp
    samples: list[tuple[float, int, Any, TrainingSpec]] = []

    def tried(dp: int) -> bool:
        variant = _with_world(spec, dp * model_par)
        try:
            result = estimator(variant)
        except Exception:  # noqa: BLE001 - a size the estimator cannot take is not one the config allows
            return False
        if getattr(result, "ok", False) and result.inputs.world == dp * model_par:
            samples.append((result.worst_stage.total, dp, result, variant))
            return True
        return False

    # DP 1 (no DP communicator, no ZeRO buckets), 2 and the assumed size; then, from the largest size
    # down, the first the config allows: from DP 2 on the memory only falls as DP grows (1/DP shards,
    # fewer micro-batches in flight), so that one holds the least. A refused size costs little: the
    # estimator stops at the batch check.
    small = sorted({1, 2, i.dp})
    for dp in small:
        tried(dp)
    for dp in reversed(_dp_sizes(i)):
        if dp <= small[-1] or tried(dp):
            break
    if not samples:
        return None
    least, dp_least, best, variant = min(samples, key=lambda s: (s[0], s[1]))
    most = max(s[0] for s in samples)
    dps = sorted(s[1] for s in samples)
    span = f"{dps[0]:,} to {dps[-1]:,}" if len(dps) > 1 else f"{dps[0]:,}"
    if most - least <= 0.01 * most:
        how = f"world size not stated: the same within 1% at every data-parallel size tried, {span}"
    else:
        first = next(s[0] for s in samples if s[1] == dps[0])
        how = (f"world size not stated: the least over the data-parallel sizes tried, {span}, at DP {dp_least:,}; "
               f"{first / 2**30:.1f} GiB at DP {dps[0]:,}")
    return MemoryVerdict(best, variant, tuple(s[2] for s in samples), how)


def _layout_elsewhere(spec: TrainingSpec) -> bool:
    """A Megatron argument list with no launch (``MODEL_ARGS=(...)`` or ``MODEL_OPTIONS="..."`` that
    another script sources and extends): that script decides the world, and may add the layout,
    the distributed optimizer or recompute, so Megatron's defaults are no statement about the run
    (a 1T-parameter fragment is not a 1T model on one GPU). Only a launch with an entry point is judged
    without its world size."""
    return framework_of(spec).arguments_without_launch(spec)


def _dp_sizes(i: Any) -> list[int]:
    """Powers of two up to MAX_DP, the assumed size, and the largest divisors of the global batch
    and of its quotients by the micro batch and by the accumulation: with a fixed global batch the
    largest DP the framework accepts (global / micro, or global / accumulation) is among them."""
    sizes = {1 << k for k in range(MAX_DP.bit_length())} | {i.dp}
    gb = i.global_batch
    for n in {gb, gb // max(1, i.micro) if gb % max(1, i.micro) == 0 else 0,
              gb // max(1, i.grad_accum) if gb % max(1, i.grad_accum) == 0 else 0}:
        if 1 <= n <= 10 ** 9:
            divisors: set[int] = set()
            k = 1
            while k * k <= n:
                if n % k == 0:
                    divisors.update((k, n // k))
                k += 1
            sizes.update(sorted(d for d in divisors if d <= MAX_DP)[-_LARGEST_DIVISORS:])
    return sorted(sizes)


def _with_world(spec: TrainingSpec, world: int) -> TrainingSpec:
    """``spec`` with its world size set (a shallow copy: the estimator does not modify its spec)."""
    value = Value(world, Provenance(Origin.ASSUMED, note=f"{world} GPUs tried (the config does not state its world size)"))
    return dataclasses.replace(spec, cluster=dataclasses.replace(spec.cluster, world_size=value))
