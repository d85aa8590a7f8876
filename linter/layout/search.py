"""The search: every layout the framework can express, pruned cheaply, ranked by the estimator.

1. Structure: (TP, PP, VP, CP, DP) that divide the world size and the model (heads, KV heads,
   FFN by TP; layers by PP x VP; seq by 2 x CP; TP inside a node) — no estimate needed.
2. Per structure and ZeRO stage / distributed optimizer: the memory that no micro batch or
   recompute mode changes (parameters, gradients, optimizer states, buffers) against the
   headroom; over it, the whole branch is skipped.
3. Per recompute mode, micro batches in ascending order: the worst stage's memory only grows
   with the micro batch (a larger one holds the same or more micro-batches' activations in
   flight), so the first one over the headroom ends the loop. Memory and step time are the
   estimator's own (:func:`~trainlint.estimator.memory.worst_stage_total`,
   :func:`~trainlint.estimator.performance.step_time`): one estimator, no second assembly.
   Step times are computed lazily, best first (branch and bound): every layout under the
   headroom gets a cheap floor on its step time (:func:`~trainlint.estimator.performance.step_time_floor`,
   with the host wait per layer, plus :func:`~trainlint.estimator.performance.exchange_floor`: the
   p2p, optimizer and data-parallel terms; within ~1% of the step time, the width of a tie), and a
   layout's real step time is computed only when no layout still untimed could rank before the best
   one timed so far. The order is exactly the exhaustive one (``exhaustive=True``
   computes them all, for the tests that prove it); the finalists rarely need more than a few.
4. Finalists in order of tokens/s (or cost per token): the real estimate of the modified spec
   (``trainlint.estimator.estimate``, exactly what ``trainlint estimate`` prints for the
   rewritten config), the headroom again, and the launch-time rules (TL1xx) on the modified
   spec. The first ``top`` that pass are the suggestions, ranked by the real estimate.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from trainlint.estimator import Estimate, EstimateContext, InvariantError, MissingInputs, estimate
from trainlint.estimator.inputs import Inputs
from trainlint.layout.candidate import candidate_spec, etp_follows_tp, layout_changes, recompute_detail, spell_changes
from trainlint.estimator.memory import stage_kinds, static_floor, worst_stage_total
from trainlint.estimator.performance import (exchange_floor, floor_from, floor_of, host_wait_s, layer_costs, layer_costs_key,
                                             output_seconds, output_seconds_key, step_time, step_time_floor)
from trainlint.layout.startup_check import StartupRules, startup_findings
from trainlint.layout.space import Layout, Space, build_space
from trainlint.core.framework import framework_of
from trainlint.core.spec import TrainingSpec


@dataclass
class SearchOptions:
    headroom: float = 0.90
    top: int = 5
    fix: frozenset[str] = frozenset()
    vary: frozenset[str] | None = None
    batch_tolerance: float | None = None
    """None: hold the global batch; else it may move by this fraction (--allow-batch-change)."""
    price_per_gpu_hour: float | None = None
    max_micro: int = 64
    max_checked: int = 200
    """Finalists examined (real estimate + launch rules) before giving up on filling ``top``."""
    max_structures: int = 20_000
    max_evaluated: int = 300_000
    """Bounds on the enumeration (real configs stay far below; absurd sizes must not hang)."""
    exhaustive: bool = False
    """Compute every layout's step time (no branch and bound): the same ranking, slower; for tests."""
    worth: float | None = None
    """Tokens/s a layout must beat to be of interest (with ``lazy_memory``, ranking by tokens/s):
    when no layout's upper bound reaches it, the search stops before timing any layout, with no
    suggestion (``stats.below_worth``). Otherwise it changes nothing: TL301 asks only whether a
    layout is more than ``max_gap`` faster than the config; the whole ranking is needed once one
    may be, as a slower layout within the 1% tie of a faster one can rank first."""
    lazy_memory: bool = False
    """Check a layout's memory only when it could be next in the ranking (with its step time), not
    for every layout: the same suggestions, found faster, but the statistics then count only the
    layouts looked at (``feasible``: those found to fit). For callers that want the best layouts
    and not the count of those that fit (TL301's fix hint); ``suggest`` prints the count."""
    adapters: tuple = ()
    """The session's adapters (plugin adapters included): the run's adapter spells the changes.
    Empty: the built-in and installed ones."""


@dataclass
class Suggestion:
    rank: int
    layout: Layout
    changes: dict[str, Any]
    spelled: list[str]
    estimate: Estimate
    spec: TrainingSpec
    is_current: bool = False

    def cost_per_million_tokens(self, price: float | None) -> float | None:
        if price is None:
            return None
        return price * self.estimate.inputs.world / 3600.0 / self.estimate.tokens_per_s * 1e6


@dataclass
class SearchStats:
    space_points: int = 0
    """Layouts in the space (every structure x ZeRO / optimizer x recompute x batch split)."""
    structures: int = 0
    static_pruned: int = 0
    evaluated: int = 0
    memory_pruned: int = 0
    feasible: int = 0
    checked: int = 0
    truncated: bool = False
    below_worth: bool = False
    """No layout could beat ``SearchOptions.worth``: nothing was timed, nothing is suggested."""
    launch_refused: int = 0
    estimate_refused: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"space_points": self.space_points, "structures": self.structures, "static_pruned": self.static_pruned,
                "evaluated": self.evaluated, "memory_pruned": self.memory_pruned, "feasible": self.feasible,
                "checked": self.checked, "truncated": self.truncated, "launch_refused": self.launch_refused,
                "estimate_refused": self.estimate_refused,
                "seconds": dict(self.seconds)}


@dataclass
class SearchResult:
    spec: TrainingSpec
    current: Estimate | MissingInputs
    suggestions: list[Suggestion]
    space: Space | None
    stats: SearchStats
    options: SearchOptions
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> Suggestion | None:
        return self.suggestions[0] if self.suggestions else None


class SearchError(ValueError):
    """The run cannot be searched (no estimate, or a model the estimator does not describe)."""


# --------------------------------------------------------------------------- inputs per layout


def derive(source: Inputs, **fields) -> Inputs:
    """``dataclasses.replace`` without running ``__init__`` again (Inputs has no validation): ~10x faster."""
    out = object.__new__(Inputs)
    out.__dict__.update(source.__dict__)
    out.__dict__.update(fields)
    return out


class InputsFactory:
    """Inputs of any layout from the config's own resolved inputs (what resolve() would give
    for the modified spec: the fields a layout changes, and those that follow them)."""

    def __init__(self, spec: TrainingSpec, base: Inputs) -> None:
        self.spec = spec
        self.base = base
        self.etp_follows = etp_follows_tp(spec)
        # The engine's rules for another ZeRO stage / distributed optimizer (what re-reading the
        # rewritten file gives: adapters/deepspeed/adapter.py deepspeed_optimizer, Megatron's own optimizer).
        self.deepspeed = base.owner.startswith("deepspeed")
        self.overlap_setting = None
        self.grad_accum_dtype = None
        prefix = framework_of(spec).deepspeed_prefix(spec)
        entry = spec.settings.get(prefix + "zero_optimization.overlap_comm")
        if entry is not None and isinstance(entry.value, bool):
            self.overlap_setting = entry.value
        entry = spec.settings.get(prefix + "data_types.grad_accum_dtype")
        if entry is not None and isinstance(entry.value, str):
            self.grad_accum_dtype = entry.value
        engine = spec.parallel.pipeline_engine
        self.pipeline_engine = bool(engine.value) if engine is not None else None
        target = getattr(spec, "target", None)
        self.ds_version = target.version if target is not None and getattr(target, "family", None) == "deepspeed" else None
        self._engines: dict[tuple[int, bool, bool], dict] = {}

    def engine(self, zero: int, dist_opt: bool, pp: int) -> dict:
        key = (zero, dist_opt, pp > 1)
        found = self._engines.get(key)
        if found is not None:
            return found
        b = self.base
        if self.deepspeed:
            from trainlint.adapters.deepspeed.adapter import deepspeed_optimizer

            pipeline = self.pipeline_engine if self.pipeline_engine is not None else pp > 1
            owner, stage, grads, _ = deepspeed_optimizer(b.dtype, zero, self.grad_accum_dtype, pipeline,
                                                         offload=b.offload_opt in ("cpu", "nvme"), version=self.ds_version)
            overlap = False if stage == 0 or owner == "deepspeed-bf16" else (
                self.overlap_setting if self.overlap_setting is not None else stage >= 3)
            found = {"owner": owner, "shard_stage": stage, "grad_bytes": 4.0 if grads == "fp32" else 2.0,
                     "overlap_dp": overlap}
        elif b.owner == "megatron":
            found = {"shard_stage": 1 if dist_opt else 0}
        else:
            found = {}
        self._engines[key] = found
        return found

    def structure(self, tp: int, pp: int, vpp: int, cp: int, dp: int, sp: bool, zero: int, dist_opt: bool) -> Inputs:
        b = self.base
        return derive(b, tp=tp, pp=pp, vpp=vpp if pp > 1 else 1, cp=cp, dp=dp, sp=sp and tp > 1, zero=zero,
                      vocab=b.repadded(tp),
                      dist_opt=dist_opt, etp=tp if (self.etp_follows or not b.moe) else b.etp,
                      **self.engine(zero, dist_opt, pp))

    def point(self, s: Inputs, micro: int, ga: int, gb: int, recompute: str) -> Inputs:
        method, layers = recompute_detail(self.spec, self.base, recompute, s.pp)
        return derive(s, micro=micro, grad_accum=ga, global_batch=gb, recompute=recompute,
                       recompute_method=method, recompute_layers=layers)


# --------------------------------------------------------------------------------- search


def prepare(spec: TrainingSpec, ctx: EstimateContext) -> tuple[Estimate | MissingInputs, Inputs | None]:
    """The config's own estimate and resolved inputs (None when it cannot be estimated)."""
    current = estimate(spec, ctx)
    return current, (current.inputs if current.ok else None)


Estimator = Callable[[TrainingSpec], "Estimate | MissingInputs"]


LaunchCheck = Callable[[Callable[[TrainingSpec], TrainingSpec]], bool]
"""Given how to make a finalist from a spec (``candidate_spec`` with its changes), whether the launch-time
rules refuse it: what :func:`search` asks instead of running ``rules`` itself when the caller passes one
(the fix hints' memo re-asks it for the spec of each re-lint)."""


def search(spec: TrainingSpec, ctx: EstimateContext | None, options: SearchOptions | None = None,
           rules: StartupRules | None = None, project: Any = None, estimator: Estimator | None = None,
           current: Estimate | MissingInputs | None = None, launch_refused: LaunchCheck | None = None) -> SearchResult:
    """The ``options.top`` fastest (or cheapest) layouts of ``spec`` that fit and launch.

    ``ctx`` is the estimate context (GPU, cluster, model); a rule that only has the engine's
    ``estimator`` (spec -> estimate in the same context) passes that instead. ``rules``: the
    TL1xx rules to run on the finalists (None: the structural filters only). ``current``: the
    estimate of ``spec`` in that context when the caller has made it already (the engine's).
    ``launch_refused``: asked instead of ``rules`` for each finalist that changes the layout."""
    from trainlint.rules.estimation.scope import unmodelled

    if estimator is None:
        if ctx is None:
            raise ValueError("search() needs an estimate context or an estimator")
        estimator = lambda s: estimate(s, ctx)  # noqa: E731
    options = options or SearchOptions()
    stats = SearchStats()
    t0 = time.perf_counter()
    skipped = unmodelled(spec)
    if skipped:
        raise SearchError("the estimator does not model this run: " + "; ".join(f"{u.setting}: {u.why}" for u in skipped))
    if current is None:
        current = estimator(spec)
    written = None
    notes: list[str] = []
    if current.ok:
        base = current.inputs  # what resolve() read from the spec, in the estimate's context
    else:
        # A layout that does not divide the world size cannot be estimated, but it can be
        # searched: from a neutral layout, with the diff against what the file writes.
        neutral, written = _neutral(spec, current)
        try:
            fallback = estimator(neutral) if neutral is not None else None
        except InvariantError:
            fallback = None
        if fallback is None or not fallback.ok:
            return SearchResult(spec, current, [], None, stats, options)
        base = fallback.inputs
        notes.append("the layout as written cannot be estimated ("
                     + "; ".join(m.what for m in current.missing) + "): every suggestion changes it")
    space = build_space(spec, base, fix=set(options.fix), vary=set(options.vary) if options.vary is not None else None,
                        batch_tolerance=options.batch_tolerance, max_micro=options.max_micro, written=written,
                        adapters=options.adapters)
    t1 = time.perf_counter()
    if options.lazy_memory and not options.exhaustive:
        points = _enumerate_lazy(spec, base, space, options, stats)
    else:
        points = _enumerate(spec, base, space, options, stats)
    t2 = time.perf_counter()
    suggestions = _finalists(spec, estimator, base, space, points, options, stats, rules, project, launch_refused)
    t3 = time.perf_counter()
    stats.seconds = {"prepare": t1 - t0, "enumerate": t2 - t1, "finalists": t3 - t2, "total": t3 - t0}
    if stats.truncated:
        notes.append(f"the space is too large: searched the first {stats.structures:,} structures only")
    return SearchResult(spec, current, suggestions, space, stats, options, notes=notes + list(space.notes))


def _neutral(spec: TrainingSpec, current: Any) -> tuple[TrainingSpec | None, Layout | None]:
    """When only the data-parallel size is wrong (the world is not TP x PP x CP x DP): the spec
    at TP = PP = CP = 1 (DP = the world) to search from, and the layout the file writes."""
    import copy

    from trainlint.core.provenance import Origin, Provenance, Value
    from trainlint.rules.startup.derive import as_int

    missing = getattr(current, "missing", None) or []
    if not missing or any(m.field not in ("parallel.data", "batch") for m in missing):
        return None, None
    neutral = copy.copy(spec)
    neutral.parallel = copy.copy(spec.parallel)
    neutral.batch = copy.copy(spec.batch)
    one = Value(1, Provenance(Origin.ASSUMED, note="trainlint suggest: neutral layout to search from"))
    for name in ("tensor", "pipeline", "context"):
        setattr(neutral.parallel, name, one)
    neutral.parallel.virtual_pipeline = None
    neutral.parallel.data = None
    if neutral.batch.grad_accum is not None and neutral.batch.grad_accum.provenance.origin is not Origin.FILE:
        neutral.batch.grad_accum = None
    if any(m.field == "batch" for m in missing):
        # the written batch triple does not hold (the framework would refuse it): search from
        # micro x DP, the space keeps the written global batch as its target
        neutral.batch.grad_accum = None
        neutral.batch.global_batch = None
    p, b = spec.parallel, spec.batch

    def raw(entry, fallback: int = 1) -> int:
        value = as_int(entry)
        return value if value is not None and value >= 1 else fallback

    pp = raw(p.pipeline)
    engine = p.pipeline_engine.value if p.pipeline_engine is not None else None
    layout = Layout(raw(p.tensor), pp, raw(p.virtual_pipeline) if pp > 1 else 1, raw(p.context), -1, raw(b.micro_batch),
                    raw(b.grad_accum, -1), raw(b.global_batch, -1), "", -1, False, False, engine)
    return neutral, layout


def _score(tokens_per_s: float, world: int, options: SearchOptions) -> float:
    """Lower is better: -tokens/s, or cost per token (∝ GPUs / tokens/s)."""
    if options.price_per_gpu_hour is not None:
        return options.price_per_gpu_hour * world / 3600.0 / tokens_per_s
    return -tokens_per_s


WORTH_MARGIN = 1e-9
"""``SearchOptions.worth`` is lowered by this share before the bounds are compared with it: a
layout's real estimate (what the caller compares) equals the search's own figure up to rounding."""

FLOOR_MARGIN = 1e-9
"""The floor is lowered by this share: it sums the same terms as step_time in another order, so
it may exceed the step time by a rounding error."""


def _setup(spec: TrainingSpec, base: Inputs, space: Space,
           options: SearchOptions) -> tuple[float, InputsFactory, dict, Layout, bool]:
    """What every search starts from: the memory budget per GPU, the inputs factory, an empty cache
    of the estimator's per-layer costs (shared by the search's layouts), the current layout (the
    space always has one) and whether the global batch is held fixed."""
    cur = space.current
    assert cur is not None  # build_space always sets it
    return options.headroom * base.gpu.memory_bytes, InputsFactory(spec, base), {}, cur, space.batch_tolerance is None


def _enumerate(spec: TrainingSpec, base: Inputs, space: Space, options: SearchOptions,
               stats: SearchStats) -> Iterator[tuple[float, Layout]]:
    """(score, layout) of every layout under the headroom, best first (ties in enumeration order)."""
    budget, factory, cache, cur, fixed_batch = _setup(spec, base, space, options)
    out: list[tuple[float, Layout]] = []
    pending: list[tuple[float, int, Inputs, Layout]] = []
    batch_cache: dict[tuple[int, int, int], list[tuple[int, int, int]]] = {}
    for tp, pp, vpp, cp, dp in space.structures():
        if stats.structures >= options.max_structures or stats.evaluated >= options.max_evaluated:
            stats.truncated = True
            break
        stats.structures += 1
        sp = space.sp_for(tp)
        key = (dp, pp, vpp)
        batches = batch_cache.get(key)
        if batches is None:
            batches = batch_cache[key] = list(space.batches(dp, pp, vpp))
        if not batches:
            continue
        zeros = space.zero_values(pp)
        stats.space_points += len(batches) * len(zeros) * len(space.dist_opt) * len(space.recompute)
        for zero, engine, dist_opt, kept, s in _structures_of((tp, pp, vpp, cp, dp), sp, zeros, batches, space, factory,
                                                              cache, budget, stats, cur.dist_opt, need_batches=False):
            for recompute in space.recompute:
                for micro, ga, gb in kept:
                    i = factory.point(s, micro, ga, gb, recompute)
                    stats.evaluated += 1
                    memory = worst_stage_total(i, cache)
                    if memory > budget:
                        stats.memory_pruned += 1
                        if fixed_batch:
                            break  # larger micro batches only need more
                        continue
                    layout = Layout(tp, pp, i.vpp, cp, dp, micro, ga, gb, recompute, zero, dist_opt, i.sp, engine)
                    if options.exhaustive:
                        tokens = i.global_batch * i.seq / step_time(i, cache).step_time
                        out.append((_score(tokens, i.world, options), layout))
                    else:
                        floor = step_time_floor(i, cache) + exchange_floor(i)
                        most = i.global_batch * i.seq / (floor * (1 - FLOOR_MARGIN))
                        pending.append((_score(most, i.world, options), len(pending), i, layout))
    if options.exhaustive:
        stats.feasible = len(out)
        out.sort(key=lambda t: t[0])
        return iter(out)
    stats.feasible = len(pending)
    return _best_first(pending, cache, options)


def _best_first(pending: list[tuple[float, int, Inputs, Layout]], cache: dict,
                options: SearchOptions) -> Iterator[tuple[float, Layout]]:
    """``pending`` (bound on the score, enumeration index, inputs, layout) as (score, layout) in
    the order of (score, index): a stable sort on the real scores. The scores are both decreasing
    in tokens/s, and the floor on the step time bounds tokens/s from above, so the bound is never
    above the real score: once the next untimed bound is above the best timed score, no untimed
    layout can come before it."""
    pending.sort(key=lambda t: (t[0], t[1]))
    timed: list[tuple[float, int, Layout]] = []
    k = 0
    while True:
        while k < len(pending) and (not timed or pending[k][0] <= timed[0][0]):
            _, index, i, layout = pending[k]
            k += 1
            tokens = i.global_batch * i.seq / step_time(i, cache).step_time
            heapq.heappush(timed, (_score(tokens, i.world, options), index, layout))
        if not timed:
            return
        score, _, layout = heapq.heappop(timed)
        yield score, layout


class _Row:
    """One structure x ZeRO / optimizer x recompute branch of a lazy search: its batch splits, micro
    ascending, with their memory checked on demand and remembered. With the global batch held, a
    split counts as fitting only when every split before it fits too: exactly the eager loop, which
    stops at the first split over the headroom."""

    __slots__ = ("batches", "dims", "dist_opt", "engine", "first_over", "fit", "made", "recompute", "s", "zero")

    def __init__(self, s: Inputs, dims: tuple[int, int, int, int, int], recompute: str, zero: int, engine: bool | None,
                 dist_opt: bool, batches: list[tuple[int, int, int]]) -> None:
        self.s, self.dims, self.recompute, self.zero, self.engine, self.dist_opt = s, dims, recompute, zero, engine, dist_opt
        self.batches = batches
        self.made: list[Inputs | None] = [None] * len(batches)
        self.fit: list[bool | None] = [None] * len(batches)
        self.first_over: int | None = None
        """Fixed global batch: the first split over the headroom (None: none found so far)."""

    def inputs(self, k: int, factory: InputsFactory) -> Inputs:
        i = self.made[k]
        if i is None:
            micro, ga, gb = self.batches[k]
            i = self.made[k] = factory.point(self.s, micro, ga, gb, self.recompute)
        return i

    def _check(self, k: int, factory: InputsFactory, cache: dict, budget: float, stats: SearchStats) -> bool:
        found = self.fit[k]
        if found is None:
            stats.evaluated += 1
            found = self.fit[k] = worst_stage_total(self.inputs(k, factory), cache) <= budget
            if not found:
                stats.memory_pruned += 1
        return found

    def fits(self, k: int, fixed_batch: bool, factory: InputsFactory, cache: dict, budget: float,
             stats: SearchStats) -> bool:
        if not fixed_batch:
            return self._check(k, factory, cache, budget, stats)
        if self.first_over is not None:
            return k < self.first_over
        for j in range(k + 1):
            if not self._check(j, factory, cache, budget, stats):
                self.first_over = j
                return False
        return True

    def eager_count(self, fixed_batch: bool, factory: InputsFactory, cache: dict, budget: float, stats: SearchStats) -> int:
        """The layouts of this row the eager search evaluates (for its ``max_evaluated`` bound)."""
        if not fixed_batch:
            return len(self.batches)
        if self.first_over is None:
            self.fits(len(self.batches) - 1, True, factory, cache, budget, stats)
        return len(self.batches) if self.first_over is None else self.first_over + 1

    def layout(self, k: int) -> Layout:
        tp, pp, _, cp, dp = self.dims
        micro, ga, gb = self.batches[k]
        return Layout(tp, pp, self.s.vpp, cp, dp, micro, ga, gb, self.recompute, self.zero, self.dist_opt, self.s.sp,
                      self.engine)


def _busiest(s: Inputs) -> tuple[int, int]:
    """The layers of structure ``s``'s busiest pipeline stage and of its last one (which also holds
    the output layer): what a step-time floor reads of the stages."""
    kinds = stage_kinds(s)
    return max(layers for _, layers, _ in kinds), kinds[-1][1]


def _costs(s: Inputs, recompute: str, row: _Row, k: int, factory: InputsFactory, cache: dict) -> tuple[Any, float]:
    """One layer's costs and the output layer's seconds of structure ``s`` at the micro batch of
    ``row``'s ``k``-th split, from the search's cache (made from that split's inputs once)."""
    micro = row.batches[k][0]
    per_layer = cache.get(layer_costs_key(s, micro, recompute))
    if per_layer is None:
        per_layer = layer_costs(row.inputs(k, factory), cache)
    output = cache.get(output_seconds_key(s, micro))
    if output is None:
        output = output_seconds(row.inputs(k, factory), cache)
    return per_layer, output


def _layout_floor(s: Inputs, waiter: Inputs, row: _Row, k: int, most: int, last: int, factory: InputsFactory,
                  cache: dict) -> float:
    """The step time's floor of ``row``'s ``k``-th batch split in structure ``s`` (one layer's costs
    and host wait x the layers of the busiest stage, the output layer, the accumulation). The costs
    are cached per structure and micro batch, so every split and every ZeRO stage of one shape shares
    them. ``waiter``: ``s`` in the row's recompute mode (what the host wait reads besides the costs:
    the recompute mode and the MoE layers)."""
    _, ga, _ = row.batches[k]
    per_layer, output = _costs(s, row.recompute, row, k, factory, cache)
    return floor_of(per_layer, output, most, last, ga, s.layers, s.pp, s.vpp, host_wait_s(waiter, per_layer))


def _floor_bound(row: _Row, k: int, floor: float, options: SearchOptions) -> float:
    """The score of ``row``'s ``k``-th batch split at the step time ``floor``, lowered by FLOOR_MARGIN."""
    s = row.s
    return _score(row.batches[k][2] * s.seq / (floor * (1 - FLOOR_MARGIN)), s.world, options)


def _layout_bound(row: _Row, k: int, floor: float, factory: InputsFactory, options: SearchOptions) -> float:
    """The score no layout of ``row``'s ``k``-th batch split can beat: its ``floor``
    (:func:`_layout_floor`, the same for every ZeRO stage and optimizer) plus the exchange terms
    the floor leaves out (:func:`~trainlint.estimator.performance.exchange_floor`: they depend on
    the stage and optimizer), lowered by FLOOR_MARGIN. A lazy search lists a layout by its floor's
    bound (:func:`_floor_bound`, no better) and adds the exchange terms only when it comes to the top
    (:func:`_best_first_lazy`): most layouts listed never do."""
    return _floor_bound(row, k, floor + exchange_floor(row.inputs(k, factory)), options)


def _structures_of(dims: tuple[int, int, int, int, int], sp: bool, zeros: list, batches: list[tuple[int, int, int]],
                   space: Space, factory: InputsFactory, cache: dict, budget: float, stats: SearchStats,
                   current_dist_opt: bool, *, need_batches: bool = True) -> Iterator[tuple[int, Any, bool, list, Inputs]]:
    """(ZeRO stage, engine, distributed optimizer, the batches that stage allows, the structure) for
    one (TP, PP, VPP, CP, DP), in the order every search lists them: optimizer sharding only where
    there is something to shard over, and structures whose static floor is over the budget dropped
    (counted). ``need_batches``: skip a stage that allows none of the batches before building it."""
    tp, pp, vpp, cp, dp = dims
    for zero, engine, most_accum in zeros:
        kept = batches if most_accum is None else [b for b in batches if b[1] <= most_accum]
        if need_batches and not kept:
            continue
        for dist_opt in space.dist_opt:
            if dp * cp == 1 and dist_opt != current_dist_opt and space.dist_opt_switch:
                continue  # nothing to shard over: the flag would change nothing
            s = factory.structure(tp, pp, vpp, cp, dp, sp, zero, dist_opt)
            if static_floor(s, cache) > budget:
                stats.static_pruned += 1
                continue
            yield zero, engine, dist_opt, kept, s


def _enumerate_lazy(spec: TrainingSpec, base: Inputs, space: Space, options: SearchOptions,
                    stats: SearchStats) -> Iterator[tuple[float, Layout]]:
    """What :func:`_enumerate` gives (the same layouts in the same order), checking memory lazily:
    every layout gets its floor from the per-layer costs alone (no inputs, no memory), and a
    layout's memory is checked, with the splits before it in its row, only when its bound says it
    could be next.

    When the space is small enough that no bound can stop the search (the eager search's
    ``max_structures`` and ``max_evaluated``), the layouts of a structure are not even listed until
    a bound on all of them (:func:`_structure_bound`, one estimate of one layer) says one could be
    next: most structures of a space are never looked at. Otherwise (a huge space) every layout is
    listed as the eager loop would, to stop where it stops (:func:`_enumerate_lazy_flat`)."""
    plan: list[tuple[tuple[int, int, int, int, int], list[tuple[int, int, int]], list]] = []
    batch_cache: dict[tuple[int, int, int], list[tuple[int, int, int]]] = {}
    most_listed = 0  # layouts the eager search would list at most (no static or memory pruning)
    for dims in space.structures():
        if len(plan) >= options.max_structures:
            return _enumerate_lazy_flat(spec, base, space, options, stats)
        _, pp, vpp, _, dp = dims
        key = (dp, pp, vpp)
        batches = batch_cache.get(key)
        if batches is None:
            batches = batch_cache[key] = list(space.batches(dp, pp, vpp))
        zeros = space.zero_values(pp) if batches else []
        plan.append((dims, batches, zeros))
        for _, _, most_accum in zeros:
            kept = len(batches) if most_accum is None else sum(1 for b in batches if b[1] <= most_accum)
            most_listed += kept * len(space.dist_opt) * len(space.recompute)
    if most_listed >= options.max_evaluated:
        return _enumerate_lazy_flat(spec, base, space, options, stats)

    budget, factory, cache, cur, fixed_batch = _setup(spec, base, space, options)
    pending: list[tuple[float, int, Any, Any]] = []
    # Two levels of bounds: first from one layer's costs at the largest micro batch of the whole
    # space (shared by every structure with the same TP and CP), then, for a structure that bound
    # cannot rule out, at its own largest micro batch (see _structure_bound).
    widest = max((max(b[0] for b in batches) for _, batches, zeros in plan if zeros), default=1)
    shared: dict = {}
    for number, (dims, batches, zeros) in enumerate(plan):
        stats.structures += 1
        if not batches:
            continue
        stats.space_points += len(batches) * len(zeros) * len(space.dist_opt) * len(space.recompute)
        if not zeros:
            continue
        # (bound, index, None, what to expand): the index orders it as its first layout would be
        group = (number, dims, batches, zeros)
        pending.append((_structure_bound(dims, batches, zeros, space, factory, cache, options, widest, shared),
                        number * _STRIDE, None, (0, group)))

    def expand(entry: tuple[int, tuple]) -> None:
        """Level 0: a structure's bound at its own micro batches; 1: its layouts, listed in the
        eager loop's order, one entry per recompute mode with a bound on them all; 2: the layouts
        of one mode, each with its own bound."""
        level, group = entry
        if level == 2:
            _push_layouts(group)
            return
        number, dims, batches, zeros = group
        if level == 0:
            heapq.heappush(pending, (_structure_bound(dims, batches, zeros, space, factory, cache, options),
                                     number * _STRIDE, None, (1, group)))
            return
        index = number * _STRIDE
        sp = space.sp_for(dims[0])
        modes: dict[str, list[tuple[_Row, int, int]]] = {}  # recompute -> (row, split, index) in eager order
        shape = None
        for zero, engine, dist_opt, kept, s in _structures_of(dims, sp, zeros, batches, space, factory, cache, budget,
                                                              stats, cur.dist_opt):
            if shape is None:
                shape = (s, *_busiest(s))
            for recompute in space.recompute:
                row = _Row(s, dims, recompute, zero, engine, dist_opt, kept)
                points = modes.setdefault(recompute, [])
                for k in range(len(kept)):
                    points.append((row, k, index))
                    index += 1
        if shape is None:
            return
        for recompute, points in modes.items():
            heapq.heappush(pending, (_mode_bound(shape, recompute, points, factory, cache, options), points[0][2], None,
                                     (2, (shape, recompute, points))))

    def _push_layouts(group: tuple) -> None:
        (s, most, last), recompute, points = group
        floors: dict[tuple[int, int, int], float] = {}  # the same for every ZeRO stage and optimizer
        waiter = derive(s, recompute=recompute)
        for row, k, index in points:
            micro, ga, gb = row.batches[k]
            floor = floors.get((micro, ga, gb))
            if floor is None:
                floor = floors[micro, ga, gb] = _layout_floor(s, waiter, row, k, most, last, factory, cache)
            heapq.heappush(pending, (_floor_bound(row, k, floor, options), index, row, (k, floor)))

    return _best_first_lazy(pending, fixed_batch, factory, cache, budget, options, stats, expand)


_STRIDE = 1 << 40
"""Enumeration indices of a grouped lazy search: structure number x _STRIDE + the layout's place in
it, in the order of the eager loop's running count (only their order breaks ties)."""

GROUP_MARGIN = 1e-6
"""A structure's bound is lowered by this share: it scales one layer's costs where each layout's
floor sums them at its own micro batch (a different rounding)."""


def _mode_bound(shape: tuple[Inputs, int, int], recompute: str, points: list[tuple[_Row, int, int]],
                factory: InputsFactory, cache: dict, options: SearchOptions) -> float:
    """A score none of ``points`` (the layouts of one structure and recompute mode) beats: one
    layer's costs in that mode at their largest micro batch M, scaled to m / M at micro m (the
    argument of :func:`_structure_bound`)."""
    s, most, last = shape
    row, k = max(((r, j) for r, j, _ in points), key=lambda rk: rk[0].batches[rk[1]][0])
    micro = row.batches[k][0]
    costs, output = _costs(s, recompute, row, k, factory, cache)
    launch = host_wait_s(row.inputs(k, factory), costs)  # at M: at most the host wait at any smaller micro batch
    return _scaled_bound(costs[0].total + costs[2], output, micro, {r.batches[j] for r, j, _ in points}, most, last,
                         s, s.pp, s.vpp, options, launch)


def _scaled_bound(per: float, output: float, micro: int, batches: Iterable[tuple[int, int, int]], most: int, last: int,
                  shape: Inputs, pp: int, chunks: int, options: SearchOptions, launch: float = 0.0) -> float:
    """The best score over ``batches`` of the step-time floor from one layer's seconds ``per`` and
    the output layer's ``output`` at micro batch ``micro``, scaled to m / micro at micro m (both
    are linear in m: see :func:`_structure_bound`), lowered by GROUP_MARGIN. ``shape`` gives the
    layers, sequence and world size. ``launch``: a host wait per layer no micro batch of
    ``batches`` goes under (:func:`~trainlint.estimator.performance.host_wait_s` only grows as
    one layer's costs fall, and they fall with the micro batch: its value at ``micro``)."""
    best = None
    for m, a, g in batches:
        share = m / micro
        floor = floor_from(per * share + launch, output * share, most, last, a, shape.layers, pp, chunks)
        score = _score(g * shape.seq / (floor * (1 - GROUP_MARGIN)), shape.world, options)
        if best is None or score < best:
            best = score
    assert best is not None
    return best


def _structure_bound(dims: tuple[int, int, int, int, int], batches: list[tuple[int, int, int]], zeros: list,
                     space: Space, factory: InputsFactory, cache: dict, options: SearchOptions,
                     widest: int | None = None, shared: dict | None = None) -> float:
    """A score no layout of the structure ``dims`` beats (a lower bound of their floors' scores),
    from one layer's costs at its largest micro batch M (or at ``widest``, any micro batch at least
    as large: a looser bound, from costs every structure with the same TP and CP shares, kept in
    ``shared`` with the stage shapes per PP) and the least recompute.

    Each layout's floor (:func:`~trainlint.estimator.performance.floor_of`) grows with one layer's
    costs and the output layer's seconds at its micro batch m; both are sums of terms linear in m
    (FLOPs, activation bytes, messages) and of terms that do not depend on it (weights read,
    collective latency), so at m <= M they are at least m / M of their value at M; recompute only
    adds to them, and ZeRO or the distributed optimizer do not change them. The host wait per layer
    (:func:`~trainlint.estimator.performance.host_wait_s`) only falls as those costs grow, so its
    value at M is at most its value at any m <= M; a layer's costs with its host wait are the most of
    its kernels' and the host's time (plus the exposed TP time and the MoE sync), each of which
    recompute only adds to, so the least recompute's sum is the least. The floor at m / M of the
    costs at M, plus that wait, is therefore a floor of every layout of the structure."""
    tp, pp, vpp, cp, dp = dims
    top = max(range(len(batches)), key=lambda k: batches[k][0])
    micro, ga, gb = batches[top]
    costs = shape = None
    if widest is not None:
        micro = widest  # the costs' key has no accumulation or global batch: these are placeholders
        if shared is not None:
            costs, shape = shared.get(("costs", tp, cp)), shared.get(("shape", pp))
    if costs is None or shape is None:
        s = factory.structure(tp, pp, vpp, cp, dp, space.sp_for(tp), zeros[0][0], space.dist_opt[0])
        least = ("none",) if "none" in space.recompute else tuple(space.recompute)
        per = launch = None
        for recompute in least:
            point = factory.point(s, micro, ga, gb, recompute)
            found = cache.get(layer_costs_key(s, micro, recompute))
            if found is None:
                found = layer_costs(point, cache)
            total = found[0].total + found[2]
            if per is None or total < per:
                per = total
            wait = host_wait_s(point, found)
            if launch is None or wait < launch:
                launch = wait
        assert per is not None and launch is not None
        output = cache.get(output_seconds_key(s, micro))
        if output is None:
            output = output_seconds(factory.point(s, micro, ga, gb, least[0]), cache)
        costs = (per, output, launch)
        shape = (*_busiest(s), s.vpp)
        if widest is not None and shared is not None:
            shared["costs", tp, cp], shared["shape", pp] = costs, (shape[0], shape[1], None)
    per, output, launch = costs
    most, last, chunks = shape
    chunks = chunks if chunks is not None else (vpp if pp > 1 else 1)
    return _scaled_bound(per, output, micro, batches, most, last, factory.base, pp, chunks, options, launch)


def _enumerate_lazy_flat(spec: TrainingSpec, base: Inputs, space: Space, options: SearchOptions,
                         stats: SearchStats) -> Iterator[tuple[float, Layout]]:
    """:func:`_enumerate_lazy` listing every layout with its bound (for a space large enough that
    the eager search's bounds may stop it). The eager search's ``max_evaluated`` bound is kept
    exactly: while the layouts enumerated (an upper bound of what it evaluates) stay under it
    nothing is checked; past it, every row's count is settled by checking its memory as the eager
    loop does."""
    budget, factory, cache, cur, fixed_batch = _setup(spec, base, space, options)
    rows: list[_Row] = []
    pending: list[tuple[float, int, Any, Any]] = []
    batch_cache: dict[tuple[int, int, int], list[tuple[int, int, int]]] = {}
    evaluated_bound, exact = 0, False  # what the eager search would have evaluated so far (at most)
    for tp, pp, vpp, cp, dp in space.structures():
        if stats.structures >= options.max_structures:
            stats.truncated = True
            break
        if evaluated_bound >= options.max_evaluated and not exact:
            exact = True
            evaluated_bound = sum(r.eager_count(True, factory, cache, budget, stats) for r in rows) if fixed_batch \
                else evaluated_bound
        if evaluated_bound >= options.max_evaluated:
            stats.truncated = True
            break
        stats.structures += 1
        sp = space.sp_for(tp)
        key = (dp, pp, vpp)
        batches = batch_cache.get(key)
        if batches is None:
            batches = batch_cache[key] = list(space.batches(dp, pp, vpp))
        if not batches:
            continue
        zeros = space.zero_values(pp)
        stats.space_points += len(batches) * len(zeros) * len(space.dist_opt) * len(space.recompute)
        for zero, engine, dist_opt, kept, s in _structures_of((tp, pp, vpp, cp, dp), sp, zeros, batches, space, factory,
                                                              cache, budget, stats, cur.dist_opt):
            most, last = _busiest(s)
            for recompute in space.recompute:
                row = _Row(s, (tp, pp, vpp, cp, dp), recompute, zero, engine, dist_opt, kept)
                rows.append(row)
                waiter = derive(s, recompute=recompute)
                for k in range(len(kept)):
                    floor = _layout_floor(s, waiter, row, k, most, last, factory, cache)
                    pending.append((_floor_bound(row, k, floor, options), len(pending), row, (k, floor)))
                evaluated_bound += row.eager_count(fixed_batch, factory, cache, budget, stats) if exact else len(kept)
    return _best_first_lazy(pending, fixed_batch, factory, cache, budget, options, stats)


def _best_first_lazy(pending: list[tuple[float, int, Any, Any]], fixed_batch: bool, factory: InputsFactory, cache: dict,
                     budget: float, options: SearchOptions, stats: SearchStats,
                     expand: Callable[[Any], None] | None = None) -> Iterator[tuple[float, Layout]]:
    """:func:`_best_first` over layouts whose memory is not known yet: a layout taken from the
    bounds is timed only when it fits; one over the headroom is dropped, as the eager search never
    lists it. The bounds come off a heap in (bound, index) order, the order of the eager sort.
    An entry (bound, index, None, group) stands for layouts not listed yet, none with a lower
    bound: taken from the heap, ``expand(group)`` pushes them. An entry (bound, index, row, (k,
    floor)) is a layout listed by its floor alone (:func:`_floor_bound`): taken from the heap, it
    goes back with its whole bound (:func:`_layout_bound`, never better)."""
    heapq.heapify(pending)

    def _complete(row: _Row, listed: tuple[int, float], index: int) -> None:
        k, floor = listed
        heapq.heappush(pending, (_layout_bound(row, k, floor, factory, options), index, row, k))

    # the top made a layout with its whole bound (groups expanded, floors completed): what `worth` is compared with
    while pending and (pending[0][2] is None or type(pending[0][3]) is tuple):
        _, index, row, k = heapq.heappop(pending)
        if row is None:
            assert expand is not None
            expand(k)
        else:
            _complete(row, k, index)
    if options.worth is not None and options.price_per_gpu_hour is None and pending \
            and -pending[0][0] < options.worth * (1 - WORTH_MARGIN):
        stats.below_worth = True  # the best bound (tokens/s) of any layout is below what is asked
        return
    timed: list[tuple[float, int, Layout]] = []
    while True:
        while pending and (not timed or pending[0][0] <= timed[0][0]):
            _, index, row, k = heapq.heappop(pending)
            if row is None:
                assert expand is not None
                expand(k)
                continue
            if type(k) is tuple:
                _complete(row, k, index)
                continue
            if not row.fits(k, fixed_batch, factory, cache, budget, stats):
                continue
            stats.feasible += 1
            i = row.inputs(k, factory)
            tokens = i.global_batch * i.seq / step_time(i, cache).step_time
            heapq.heappush(timed, (_score(tokens, i.world, options), index, row.layout(k)))
        if not timed:
            return
        score, _, layout = heapq.heappop(timed)
        yield score, layout


TIE = 0.01
"""Scores within 1% of each other are ties (the estimate is not that precise): of those, the
layout that changes fewer settings ranks first. The config as it is (no change) therefore
outranks a layout less than 1% faster; nothing more than 1% slower than it ever outranks it."""


def tie_groups(items: list[tuple[float, int, Any]]) -> list[tuple[float, int, Any]]:
    """(score, distance, item) best score first, regrouped: each group holds the items within
    TIE of its best score, ordered by distance (fewer changes first), then score."""
    items = sorted(items, key=lambda t: t[0])
    out: list[tuple[float, int, Any]] = []
    i = 0
    while i < len(items):
        head = items[i][0]
        j = i
        while j < len(items) and abs(items[j][0] - head) <= TIE * abs(head):
            j += 1
        out.extend(sorted(items[i:j], key=lambda t: (t[1], t[0])))
        i = j
    return out


def _in_tie_order(points: Iterator[tuple[float, Layout]], cur: Layout) -> Iterator[tuple[float, Layout]]:
    """``points`` (best first) in tie_groups order, drawing from ``points`` (and computing
    distances) only as far as the groups consumed need."""
    ahead = next(points, None)
    while ahead is not None:
        head = ahead[0]
        group = []
        while ahead is not None and abs(ahead[0] - head) <= TIE * abs(head):
            group.append(ahead)
            ahead = next(points, None)
        for score, _, layout in sorted(((sc, _distance(cur, lay), lay) for sc, lay in group),
                                       key=lambda t: (t[1], t[0])):
            yield score, layout


def _distance(cur: Layout | None, new: Layout) -> int:
    """How many dimensions differ from the config (ties go to the smaller change)."""
    if cur is None:
        return 0
    return sum(getattr(cur, f) != getattr(new, f) for f in ("tp", "pp", "vpp", "cp", "micro", "global_batch", "recompute",
                                                            "zero", "dist_opt", "sp"))


def _finalist_maker(base: Inputs, changes: dict[str, Any], layout: Layout) -> Callable[[TrainingSpec], TrainingSpec]:
    """How to make the finalist ``layout`` from a spec (the one searched, or an edit of it that reads the same)."""
    return lambda spec: candidate_spec(spec, base, changes, layout)


def _finalists(spec: TrainingSpec, estimator: Estimator, base: Inputs, space: Space,
               points: Iterator[tuple[float, Layout]], options: SearchOptions, stats: SearchStats,
               rules: StartupRules | None, project: Any, launch_refused: LaunchCheck | None = None) -> list[Suggestion]:
    cur = space.current
    assert cur is not None
    before: set | None = None  # the config's own launch-time findings: read when a changed layout needs them
    kept: list[tuple[float, int, Suggestion]] = []
    for _, layout in _in_tie_order(points, cur):
        if len(kept) >= options.top or stats.checked >= options.max_checked:
            break
        stats.checked += 1
        changes = layout_changes(spec, base, cur, layout)
        modified = candidate_spec(spec, base, changes, layout) if changes else spec
        try:
            result = estimator(modified)
        except InvariantError:
            result = None
        if result is None or not result.ok or result.worst_stage.total > options.headroom * result.capacity_bytes:
            stats.estimate_refused += 1
            continue
        if launch_refused is not None and changes:
            if launch_refused(_finalist_maker(base, changes, layout)):
                stats.launch_refused += 1
                continue
        elif rules is not None and changes:
            if before is None:
                before = startup_findings(spec, rules, project)
            if startup_findings(modified, rules, project) - before:
                stats.launch_refused += 1
                continue
        suggestion = Suggestion(0, layout, changes, spell_changes(spec, base, changes, options.adapters), result, modified,
                                is_current=not changes)
        kept.append((_score(result.tokens_per_s, result.inputs.world, options), _distance(cur, layout), suggestion))
    out = []
    for rank, (_, _, suggestion) in enumerate(tie_groups(kept), 1):
        suggestion.rank = rank
        out.append(suggestion)
    return out
