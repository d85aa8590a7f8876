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
from typing import Any, Callable, Iterator

from trainlint.core.framework import framework_of
from trainlint.estimator.inputs import unjudged
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.rules.estimation.scope import unmodelled, usable_in
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
    return verdict_of(spec, est, estimator, shared).verdict()


def verdict_of(spec: TrainingSpec, est: Any, estimator: Callable[[TrainingSpec], Any] | None,
               shared: dict[str, Any] | None = None) -> LazyVerdict:
    """The run's :class:`LazyVerdict` (one per run: kept in ``shared``, a rule's ``ctx.shared``)."""
    if shared is None:
        return LazyVerdict(spec, est, estimator)
    kept = shared.get("memory_verdict")
    if kept is None:
        kept = shared["memory_verdict"] = LazyVerdict(spec, est, estimator, shared)
    return kept


class LazyVerdict:
    """:func:`memory_verdict`, made only as far as a question needs: the data-parallel sizes are
    estimated one by one, in the order the whole verdict tries them, and a question that one of
    them answers stops there. Most runs fit at the first size tried, and then TL201 (is the least
    memory within the headroom?) and TL900 (is there a verdict?) need no other (~3 estimates a run
    saved); a finding or a tight run takes the whole verdict, as before."""

    def __init__(self, spec: TrainingSpec, est: Any, estimator: Callable[[TrainingSpec], Any] | None,
                 shared: dict[str, Any] | None = None) -> None:
        self.spec, self.est, self.estimator = spec, est, estimator
        self.samples: list[tuple[float, int, Any, TrainingSpec]] = []
        """The estimates made so far over the data-parallel sizes tried, in order."""
        self._whole: MemoryVerdict | None = None
        self._final = True
        self._sizes: Iterator[None] | None = None
        if usable_in(spec, est, shared) is not None:
            self._whole = MemoryVerdict(est, spec)
        elif _judged_at_sizes(spec, est, estimator):
            self._final = False
            self._sizes = self._try_sizes()

    def verdict(self) -> MemoryVerdict | None:
        """The whole verdict (every size estimated)."""
        while self._advance():
            pass
        return self._whole

    def exists(self) -> bool:
        """Whether :meth:`verdict` is not None (the first size the config allows answers it)."""
        if self._final:
            return self._whole is not None
        return bool(self.samples) or self._advance()

    def least_within(self, fraction: float) -> bool:
        """Whether there is a verdict and its estimate (the least memory) is within ``fraction`` of
        the GPU: ``worst.total <= fraction * capacity``, answered by the first size that is (the GPU,
        and so the capacity, is the same at every size: the world size does not choose it)."""
        if not self._final:
            for sample in self.iter_samples():
                if sample.worst_stage.total <= fraction * sample.capacity_bytes:
                    return True
        whole = self._whole  # every size tried
        return whole is not None and whole.estimate.worst_stage.total <= fraction * whole.estimate.capacity_bytes

    def iter_samples(self) -> Iterator[Any]:
        """Each estimate over the data-parallel sizes tried (those made first, then the rest as they
        are made); with the world size stated, none."""
        n = 0
        while True:
            while n < len(self.samples):
                yield self.samples[n][2]
                n += 1
            if not self._advance():
                return

    def _advance(self) -> bool:
        """Estimates the next sizes until the config allows one more (True); False when none is left
        (the verdict is then whole)."""
        if self._sizes is not None:
            for _ in self._sizes:
                return True
            self._sizes = None
        if not self._final:
            self._final = True
            self._whole = _summed(self.samples) if self.samples else None
        return False

    def _tried(self, dp: int, model_par: int) -> bool:
        variant = _with_world(self.spec, dp * model_par)
        try:
            result = self.estimator(variant)  # type: ignore[misc]  # _judged_at_sizes: not None
        except Exception:  # noqa: BLE001 - a size the estimator cannot take is not one the config allows
            return False
        if getattr(result, "ok", False) and result.inputs.world == dp * model_par:
            self.samples.append((result.worst_stage.total, dp, result, variant))
            return True
        return False

    def _try_sizes(self) -> Iterator[None]:
        """Yields after each size the config allows, in the verdict's order: DP 1 (no DP communicator,
        no ZeRO buckets), 2 and the assumed size; then, from the largest size down, the first the config
        allows: from DP 2 on the memory only falls as DP grows (1/DP shards, fewer micro-batches in
        flight), so that one holds the least. A refused size costs little: the estimator stops at the
        batch check."""
        i = self.est.inputs
        model_par = i.tp * i.pp * i.cp
        small = sorted({1, 2, i.dp})
        for dp in small:
            if self._tried(dp, model_par):
                yield None
        for dp in reversed(_dp_sizes(i)):
            if dp <= small[-1]:
                break
            if self._tried(dp, model_par):
                yield None
                break


def _judged_at_sizes(spec: TrainingSpec, est: Any, estimator: Callable[[TrainingSpec], Any] | None) -> bool:
    """Whether the verdict is the least over data-parallel sizes (the world size is all that is
    assumed, and the run is one the rules judge); False: no verdict (unless the estimate is usable)."""
    if estimator is None or not getattr(est, "ok", False) or unmodelled(spec):
        return False
    if {a.field for a in unjudged(est)} != {"cluster.world_size"}:
        return False  # an assumed micro batch or sequence length moves memory itself: no verdict
    return not _layout_elsewhere(spec)


def _summed(samples: list[tuple[float, int, Any, TrainingSpec]]) -> MemoryVerdict:
    """The verdict of the sizes tried: the least memory, and the note that says so."""
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
