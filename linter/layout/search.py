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
4. Finalists in order of tokens/s (or cost per token): the real estimate of the modified spec
   (``trainlint.estimator.estimate``, exactly what ``trainlint estimate`` prints for the
   rewritten config), the headroom again, and the launch-time rules (TL1xx) on the modified
   spec. The first ``top`` that pass are the suggestions, ranked by the real estimate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from trainlint.estimator import Estimate, EstimateContext, InvariantError, MissingInputs, estimate
from trainlint.estimator.inputs import Inputs
from trainlint.layout.candidate import candidate_spec, etp_follows_tp, layout_changes, recompute_detail, spell_changes
from trainlint.estimator.memory import static_floor, worst_stage_total
from trainlint.estimator.performance import step_time
from trainlint.layout.startup_check import StartupRules, startup_findings
from trainlint.layout.space import Layout, Space, build_space
from trainlint.spec import TrainingSpec


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
        # rewritten file gives: adapters/deepspeed.py deepspeed_optimizer, Megatron's own optimizer).
        self.deepspeed = base.owner.startswith("deepspeed")
        self.overlap_setting = None
        self.grad_accum_dtype = None
        prefix = "deepspeed:" if spec.framework == "megatron" else ""
        entry = spec.settings.get(prefix + "zero_optimization.overlap_comm")
        if entry is not None and isinstance(entry.value, bool):
            self.overlap_setting = entry.value
        entry = spec.settings.get(prefix + "data_types.grad_accum_dtype")
        if entry is not None and isinstance(entry.value, str):
            self.grad_accum_dtype = entry.value
        engine = spec.parallel.pipeline_engine
        self.pipeline_engine = bool(engine.value) if engine is not None else None
        self._engines: dict[tuple[int, bool, bool], dict] = {}

    def engine(self, zero: int, dist_opt: bool, pp: int) -> dict:
        key = (zero, dist_opt, pp > 1)
        found = self._engines.get(key)
        if found is not None:
            return found
        b = self.base
        if self.deepspeed:
            from trainlint.adapters.deepspeed import deepspeed_optimizer

            pipeline = self.pipeline_engine if self.pipeline_engine is not None else pp > 1
            owner, stage, grads, _ = deepspeed_optimizer(b.dtype, zero, self.grad_accum_dtype, pipeline)
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


def search(spec: TrainingSpec, ctx: EstimateContext | None, options: SearchOptions | None = None,
           rules: StartupRules | None = None, project: Any = None, estimator: Estimator | None = None) -> SearchResult:
    """The ``options.top`` fastest (or cheapest) layouts of ``spec`` that fit and launch.

    ``ctx`` is the estimate context (GPU, cluster, model); a rule that only has the engine's
    ``estimator`` (spec -> estimate in the same context) passes that instead. ``rules``: the
    TL1xx rules to run on the finalists (None: the structural filters only)."""
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
    points = _enumerate(spec, base, space, options, stats)
    t2 = time.perf_counter()
    suggestions = _finalists(spec, estimator, base, space, points, options, stats, rules, project)
    t3 = time.perf_counter()
    stats.seconds = {"prepare": t1 - t0, "enumerate": t2 - t1, "finalists": t3 - t2, "total": t3 - t0}
    if stats.truncated:
        notes.append(f"the space is too large: searched the first {stats.structures:,} structures only")
    return SearchResult(spec, current, suggestions, space, stats, options, notes=notes + list(space.notes))


def _neutral(spec: TrainingSpec, current: Any) -> tuple[TrainingSpec | None, Layout | None]:
    """When only the data-parallel size is wrong (the world is not TP x PP x CP x DP): the spec
    at TP = PP = CP = 1 (DP = the world) to search from, and the layout the file writes."""
    import copy

    from trainlint.provenance import Origin, Provenance, Value
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


def _enumerate(spec: TrainingSpec, base: Inputs, space: Space, options: SearchOptions,
               stats: SearchStats) -> list[tuple[float, Layout]]:
    """(score, layout) of every layout under the headroom, best first."""
    budget = options.headroom * base.gpu.memory_bytes
    factory = InputsFactory(spec, base)
    cache: dict = {}  # the estimator's per-layer costs, shared by this search's layouts
    cur = space.current
    assert cur is not None  # build_space always sets it
    fixed_batch = space.batch_tolerance is None
    out: list[tuple[float, Layout]] = []
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
        for zero, engine, most_accum in zeros:
            for dist_opt in space.dist_opt:
                if dp * cp == 1 and dist_opt != cur.dist_opt and space.framework == "megatron":
                    continue  # nothing to shard over: the flag would change nothing
                s = factory.structure(tp, pp, vpp, cp, dp, sp, zero, dist_opt)
                if static_floor(s, cache) > budget:
                    stats.static_pruned += 1
                    continue
                for recompute in space.recompute:
                    for micro, ga, gb in batches:
                        if most_accum is not None and ga > most_accum:
                            continue
                        i = factory.point(s, micro, ga, gb, recompute)
                        stats.evaluated += 1
                        memory = worst_stage_total(i, cache)
                        if memory > budget:
                            stats.memory_pruned += 1
                            if fixed_batch:
                                break  # larger micro batches only need more
                            continue
                        tokens = i.global_batch * i.seq / step_time(i, cache).step_time
                        layout = Layout(tp, pp, i.vpp, cp, dp, micro, ga, gb, recompute, zero, dist_opt, i.sp, engine)
                        out.append((_score(tokens, i.world, options), layout))
    stats.feasible = len(out)
    out.sort(key=lambda t: t[0])
    return out


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


def _in_tie_order(points: list[tuple[float, Layout]], cur: Layout) -> Iterator[tuple[float, Layout]]:
    """``points`` (best first) in tie_groups order, computing distances only for the groups consumed."""
    i = 0
    while i < len(points):
        head = points[i][0]
        j = i
        while j < len(points) and abs(points[j][0] - head) <= TIE * abs(head):
            j += 1
        for score, _, layout in sorted(((sc, _distance(cur, lay), lay) for sc, lay in points[i:j]),
                                       key=lambda t: (t[1], t[0])):
            yield score, layout
        i = j


def _distance(cur: Layout | None, new: Layout) -> int:
    """How many dimensions differ from the config (ties go to the smaller change)."""
    if cur is None:
        return 0
    return sum(getattr(cur, f) != getattr(new, f) for f in ("tp", "pp", "vpp", "cp", "micro", "global_batch", "recompute",
                                                            "zero", "dist_opt", "sp"))


def _finalists(spec: TrainingSpec, estimator: Estimator, base: Inputs, space: Space,
               points: list[tuple[float, Layout]], options: SearchOptions, stats: SearchStats,
               rules: StartupRules | None, project: Any) -> list[Suggestion]:
    cur = space.current
    assert cur is not None
    before = startup_findings(spec, rules, project) if rules is not None else set()
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
        if rules is not None and changes and startup_findings(modified, rules, project) - before:
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
