"""Candidate changes to a spec, spelled as the user would write them, and their re-estimates.

A fix hint is never a canned sentence: each candidate is applied to a copy of the spec and
re-estimated in the same GPU and model context, and the hint quotes the resulting numbers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from trainlint.core.framework import framework_of
from trainlint.core.framework import data_parallel_size
from trainlint.adapters.engine import set_engine
from trainlint.estimator.core import InvariantError
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec


@dataclass(frozen=True)
class Candidate:
    """One change a fix hint may propose: how the user spells it, the field it is about, the changed spec."""

    spelling: str
    """How the user writes the change in this format ("--recompute-granularity selective")."""
    target: str
    """The spec field the change is about: where the finding points."""
    spec: TrainingSpec


def _fix_value(value: Any, note: str) -> Value:
    return Value(value, Provenance(Origin.ASSUMED, note=f"candidate fix: {note}"))


def _with(spec: TrainingSpec, **fields: Any) -> TrainingSpec:
    modified = spec.copy()
    for dotted, value in fields.items():
        modified.set(dotted.replace("__", "."), _fix_value(value, dotted))
    set_engine(modified)  # the engine follows the change, as re-reading the fixed file would give
    return modified


def _with_data_parallel(spec: TrainingSpec, dp: int, **fields: Any) -> TrainingSpec | None:
    """``spec`` with ``fields`` changed and ``dp`` data-parallel replicas. A fixed global batch
    (Megatron's --global-batch-size, a written train_batch_size) keeps its size: the
    accumulation follows DP, and a layout whose DP does not divide it is no candidate. Without
    a global batch (NeoX, DeepSpeed deriving it) the accumulation stays and the global batch
    follows DP."""
    changes = dict(fields, parallel__data=dp)
    global_batch, micro, accum = (spec.value(f) for f in ("batch.global_batch", "batch.micro_batch", "batch.grad_accum"))
    if framework_of(spec).global_batch_always_written(spec) or _written(spec, "batch.global_batch"):
        if not _ints(global_batch, micro) or global_batch % (micro * dp):
            return None
        changes["batch__grad_accum"] = global_batch // (micro * dp)
    elif global_batch is not None:
        # derived from micro x accumulation x DP: it follows the new DP (or is left to the estimator)
        changes["batch__global_batch"] = micro * accum * dp if _ints(micro, accum) else None
    return _with(spec, **changes)


def _spelled(spec: TrainingSpec, changes: dict[str, Any], adapters: Sequence[Any] = (), base: Any = None) -> str:
    """The changes as the run's adapter writes them (``Adapter.spell_changes``, the adapter found
    among the session's ``adapters``: the same spelling ``trainlint suggest`` shows and
    ``--write-to`` writes, a plugin format's included)."""
    from trainlint.layout.candidate import spell_changes

    return ", ".join(spell_changes(spec, base, changes, adapters))


def _expressible(spec: TrainingSpec, adapters: Sequence[Any]) -> frozenset[str]:
    """What the run's format (and its framework version) can write (``Adapter.expressible``): a
    candidate the adapter cannot spell is never offered. Without an adapter: the micro batch."""
    from trainlint.layout.candidate import adapter_of

    adapter = adapter_of(spec, adapters)
    return (adapter.expressible(spec) if adapter is not None else None) or frozenset({"micro"})


_BATCH = ("batch.micro_batch", "batch.grad_accum", "batch.global_batch")
_NOT_SPELLED = frozenset({"parallel.data", "parallel.pipeline_engine", *_BATCH})
"""Change keys a candidate does not spell itself: DP follows the world size, the batch is spelled
from the triple (:func:`trainlint.layout.candidate.batch_changes`: only what the file must write)."""


@dataclass(frozen=True)
class _Shape:
    """The resolved inputs an adapter spells a change in derived units with (virtual stages as
    layers per stage): the ``base`` of ``Adapter.spell_changes``."""

    pp: int
    layers: int


def _triple(spec: TrainingSpec) -> tuple[Any, Any, Any]:
    micro, accum, global_batch = (spec.value(f) for f in _BATCH)
    return micro, accum, global_batch


def _changes(original: TrainingSpec, modified: TrainingSpec, batch: bool) -> dict[str, Any]:
    """What ``modified`` changes of ``original``, as layout change keys (the batch only where the
    candidate is about the batch: a layout change that moves DP leaves the global batch to follow)."""
    from trainlint.layout.candidate import batch_changes
    from trainlint.layout.changes import CHANGE_KEYS

    changes = {k: modified.value(k) for k in sorted(CHANGE_KEYS - _NOT_SPELLED) if modified.value(k) != original.value(k)}
    if batch:
        changes.update(batch_changes(original, _triple(original), _triple(modified), modified.value("parallel.data")))
    return changes


def _candidate(spec: TrainingSpec, target: str, modified: TrainingSpec, adapters: Sequence[Any], *,
               batch: bool = False, base: Any = None, note: str = "") -> Candidate | None:
    """The candidate ``modified``, spelled by the run's adapter; None when it spells nothing."""
    spelling = _spelled(spec, _changes(spec, modified, batch), adapters, base)
    return Candidate(spelling + note, target, modified) if spelling else None


def _present(*candidates: Candidate | None) -> Iterator[Candidate]:
    yield from (c for c in candidates if c is not None)


def memory_candidates(spec: TrainingSpec, adapters: Sequence[Any] = ()) -> Iterator[Candidate]:
    """Changes that lower memory per GPU, cheapest in throughput first; only those the run's
    adapter can write for its framework version (``Adapter.expressible``)."""
    can = _expressible(spec, adapters)
    recompute = spec.value("memory.recompute", "none")
    if "selective" in can and recompute in (None, "none"):
        yield from _present(_candidate(spec, "memory.recompute", _with(spec, memory__recompute="selective"), adapters))
    if "recompute" in can and recompute != "full":
        yield from _present(_candidate(spec, "memory.recompute", _with(
            spec, memory__recompute="full", memory__recompute_method="uniform", memory__recompute_num_layers=1), adapters))
    micro = spec.value("batch.micro_batch")
    if "micro" in can and isinstance(micro, int) and micro > 1:
        smaller = micro // 2
        changes: dict[str, Any] = {"batch__micro_batch": smaller}
        accum = spec.value("batch.grad_accum")
        if isinstance(accum, int):
            changes["batch__grad_accum"] = accum * micro // smaller
        yield from _present(_candidate(spec, "batch.micro_batch", _with(spec, **changes), adapters, batch=True))
    tp, heads, world = spec.value("parallel.tensor", 1), spec.value("model.num_attention_heads"), spec.value("cluster.world_size")
    per_node = spec.value("cluster.gpus_per_node", 8)
    if "tp" in can and all(isinstance(x, int) for x in (tp, heads, world, per_node)):
        wider = tp * 2
        layout = wider * spec.value("parallel.pipeline", 1) * spec.value("parallel.context", 1)
        dp = data_parallel_size(world, layout)
        if heads % wider == 0 and wider <= per_node and dp is not None:
            changes = {"parallel__tensor": wider}
            if "sp" in can and wider > 1:
                changes["parallel__sequence_parallel"] = True
            modified = _with_data_parallel(spec, dp, **changes)
            if modified is not None:
                yield from _present(_candidate(spec, "parallel.tensor", modified, adapters))
    if "dist-opt" in can and not spec.value("parallel.distributed_optimizer", False):
        yield from _present(_candidate(spec, "parallel.distributed_optimizer",
                                       _with(spec, parallel__distributed_optimizer=True), adapters))
    if "zero" in can:
        stage = spec.value("parallel.zero_stage", 0)
        # ZeRO >= 2 refuses the pipeline engine (TL110); NeoX and Megatron-DeepSpeed engage it
        # (pipeline_engine; Megatron-DeepSpeed at PP 1 too, unless --no-pipeline-parallel)
        pipeline = spec.value("parallel.pipeline_engine", False) or spec.value("parallel.pipeline", 1) not in (1, None)
        ceiling = 1 if pipeline else 3
        if isinstance(stage, int) and stage < ceiling:
            yield from _present(_candidate(spec, "parallel.zero_stage", _with(spec, parallel__zero_stage=stage + 1), adapters))


def fits(result: Any, headroom: float) -> bool:
    """The re-estimated run stays under ``headroom`` of its GPU's memory."""
    return result.worst_stage.total <= headroom * result.capacity_bytes


def search_closest(spec: TrainingSpec, candidates: Callable[[TrainingSpec], Iterator[Candidate]],
                   estimator: Callable[[TrainingSpec], Any], accept: Callable[[Any], bool],
                   score: Callable[[Any], float], max_steps: int = 5) -> tuple[list[Candidate], Any, bool] | None:
    """The smallest change that resolves a finding: first every single candidate (of those that
    resolve it, the one with the most tokens/s); when none is enough, the best one (lowest
    ``score``) is kept and the search goes on from there, up to ``max_steps`` changes. Returns
    the chain, its estimate and True; or, when nothing resolves the finding, the chain that came
    closest and its estimate with False (the hint then says how far it gets)."""
    chain: list[Candidate] = []
    current = spec
    closest: tuple[float, list[Candidate], Any] | None = None
    for _ in range(max_steps):
        best: tuple[float, Candidate, Any] | None = None
        resolving: tuple[float, Candidate, Any] | None = None
        for candidate in candidates(current):
            try:
                result = estimator(candidate.spec)
            except InvariantError:  # an inconsistent layout, not a fix
                continue
            if not getattr(result, "ok", False):
                continue
            if accept(result):
                # Of the changes that resolve it at this depth, the one that keeps the most
                # throughput (full recompute also fits, but a smaller micro batch costs less).
                if resolving is None or result.tokens_per_s > resolving[0]:
                    resolving = (result.tokens_per_s, candidate, result)
                continue
            value = score(result)
            if best is None or value < best[0]:
                best = (value, candidate, result)
        if resolving is not None:
            return chain + [resolving[1]], resolving[2], True
        if best is None:
            break
        chain.append(best[1])
        current = best[1].spec
        if closest is None or best[0] < closest[0]:
            closest = (best[0], list(chain), best[2])
    if closest is None:
        return None
    return closest[1], closest[2], False


def _with_setting(spec: TrainingSpec, key: str, value: Any) -> TrainingSpec:
    """``spec`` as re-reading the file with ``key`` written would give: the setting, and the engine
    the adapter derives from it (a write, as the fixed file has it; rules read the engine's fields)."""
    modified = spec.copy()
    modified.settings[key] = _fix_value(value, key)
    set_engine(modified)
    return modified


def _ints(*values: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def throughput_candidates(spec: TrainingSpec, adapters: Sequence[Any] = ()) -> Iterator[Candidate]:
    """Changes that may raise MFU: less recompute, bigger GEMMs, a smaller bubble, less TP."""
    can = _expressible(spec, adapters)
    if "selective" in can and spec.value("memory.recompute") == "full":
        yield from _present(_candidate(spec, "memory.recompute", _with(
            spec, memory__recompute="selective", memory__recompute_method=None, memory__recompute_num_layers=None),
            adapters, note=" (instead of full)"))
    micro, accum = spec.value("batch.micro_batch"), spec.value("batch.grad_accum")
    if "micro" in can and _ints(micro, accum) and accum % 2 == 0:
        yield from _present(_candidate(spec, "batch.micro_batch", _with(spec, batch__micro_batch=micro * 2,
                                                                         batch__grad_accum=accum // 2), adapters, batch=True))
    pipeline = spec.value("parallel.pipeline", 1)
    if "micro" in can and _ints(micro) and micro > 1 and _ints(pipeline) and pipeline > 1:
        changes: dict[str, Any] = {"batch__micro_batch": micro // 2}
        if _ints(accum):
            changes["batch__grad_accum"] = accum * 2
        yield from _present(_candidate(spec, "batch.micro_batch", _with(spec, **changes), adapters, batch=True,
                                       note=" (more micro-batches in the pipeline)"))
    layers = spec.value("model.num_layers")
    if "vpp" in can and _ints(pipeline, layers) and pipeline > 2 and spec.value("parallel.virtual_pipeline", 1) in (1, None) \
            and layers % (pipeline * 2) == 0:
        yield from _present(_candidate(spec, "parallel.pipeline", _with(spec, parallel__virtual_pipeline=2), adapters,
                                       base=_Shape(pipeline, layers)))
    tp, world = spec.value("parallel.tensor", 1), spec.value("cluster.world_size")
    if "tp" in can and _ints(tp, world) and tp > 1:
        narrower = tp // 2
        layout = narrower * (pipeline if _ints(pipeline) else 1) * spec.value("parallel.context", 1)
        dp = data_parallel_size(world, layout)
        if dp is not None:
            modified = _with_data_parallel(spec, dp, parallel__tensor=narrower)
            if modified is not None:
                yield from _present(_candidate(spec, "parallel.tensor", modified, adapters))


def communication_candidates(spec: TrainingSpec, adapters: Sequence[Any] = ()) -> Iterator[Candidate]:
    """Changes that hide or shrink data-parallel traffic."""
    can = _expressible(spec, adapters)
    accum, global_batch = spec.value("batch.grad_accum"), spec.value("batch.global_batch")
    if "global-batch" in can and _ints(accum) and (global_batch is None or _ints(global_batch)):
        # a written global batch doubles; a derived one (micro x accumulation x DP) follows the accumulation
        fields: dict[str, Any] = {"batch__grad_accum": accum * 2}
        if global_batch is not None:
            fields["batch__global_batch"] = global_batch * 2
        yield from _present(_candidate(spec, "batch.global_batch" if global_batch is not None else "batch.grad_accum",
                                       _with(spec, **fields), adapters, batch=True, note=" (a larger global batch)"))
    overlap = spec.engine.dp_overlap  # the adapter's reading of --overlap-grad-reduce / overlap_comm
    if "overlap" in can and (overlap is None or not overlap.value):
        # the setting the adapter reads DP overlap from (``engine.dp_overlap``), as the framework names it
        framework = framework_of(spec)
        target = framework.optimizer_sharding_field(spec)
        spelling = _spelled(spec, {"engine.dp_overlap": True}, adapters)
        setting = framework.gradient_overlap_setting()
        if spelling and setting is not None:
            yield Candidate(spelling, target, _with_setting(spec, setting, True))
    tp, heads, world = spec.value("parallel.tensor", 1), spec.value("model.num_attention_heads"), spec.value("cluster.world_size")
    per_node = spec.value("cluster.gpus_per_node", 8)
    if "tp" in can and _ints(tp, heads, world, per_node) and heads % (tp * 2) == 0 and tp * 2 <= per_node:
        layout = tp * 2 * spec.value("parallel.pipeline", 1) * spec.value("parallel.context", 1)
        dp = data_parallel_size(world, layout)
        if dp is not None:
            modified = _with_data_parallel(spec, dp, parallel__tensor=tp * 2)
            if modified is not None:
                yield from _present(_candidate(spec, "parallel.tensor", modified, adapters, note=" (fewer data-parallel replicas)"))
    stage = spec.value("parallel.zero_stage")
    if "zero" in can and _ints(stage) and stage >= 2:
        for lower in range(stage - 1, 0, -1):  # ZeRO-3 gathers parameters every micro-batch; 2 and 1 do not
            yield from _present(_candidate(spec, "parallel.zero_stage", _with(spec, parallel__zero_stage=lower), adapters))
    micro = spec.value("batch.micro_batch")
    if "micro" in can and _ints(micro, accum) and accum % 2 == 0:
        yield from _present(_candidate(spec, "batch.micro_batch", _with(spec, batch__micro_batch=micro * 2,
                                                                         batch__grad_accum=accum // 2),
                                       adapters, batch=True, note=" (fewer, larger micro-batches)"))


def point_at(spec: TrainingSpec, *targets: str) -> str | None:
    """The first of ``targets`` whose value is written in a file (a finding belongs there)."""
    from trainlint.core.provenance import first_span

    for target in targets:
        if first_span(spec.get(target))[1] is not None:
            return target
    return None


def _written(spec: TrainingSpec, dotted: str) -> bool:
    from trainlint.core.provenance import first_span

    return first_span(spec.get(dotted))[1] is not None


def batch_spelling(original: TrainingSpec, final: TrainingSpec, adapters: Sequence[Any] = ()) -> str | None:
    """How to write the batch settings of ``final`` where they differ from ``original``, spelled by
    the run's adapter. Several candidates may each have moved the micro batch, the accumulation
    or the global batch; only the end state is what the user writes."""
    from trainlint.layout.candidate import batch_changes

    old, new = _triple(original), _triple(final)
    if old == new:
        return None
    changes = batch_changes(original, old, new, final.value("parallel.data"))
    spelled = _spelled(original, changes, adapters)
    if not spelled:
        return None
    micro, accum, glob = new
    grew = isinstance(glob, int) and isinstance(old[2], int) and glob > old[2]
    grew = grew or (old[2] is None and _ints(accum, old[1], micro, old[0]) and micro * accum > old[0] * old[1])
    return spelled + (" (a larger global batch)" if grew else "")


def final_changes(chain: list[Candidate], original: TrainingSpec | None = None,
                  adapters: Sequence[Any] = ()) -> tuple[list[Candidate], str]:
    """The changes a chain amounts to (micro 4 -> 2 -> 1 is "micro 1") and how to write them.
    With ``original``, the batch settings are spelled from the chain's end state, so changes
    that each moved the micro batch and the accumulation add up to what the user writes."""
    final = list({c.target: c for c in chain}.values())
    batch = [c for c in final if c.target.startswith("batch.")]
    spelled_batch = batch_spelling(original, chain[-1].spec, adapters) if original is not None and batch else None
    if spelled_batch is None:
        return final, " and ".join(c.spelling for c in final)
    words: list[str] = []
    for c in final:
        if not c.target.startswith("batch."):
            words.append(c.spelling)
        elif spelled_batch not in words:
            words.append(spelled_batch)
    return final, " and ".join(words)


def chain_changes(original: TrainingSpec, chain: list[Candidate]) -> dict[str, Any] | None:
    """What a chain changes, as layout changes an adapter can write (``Finding.changes``): the
    fields of :data:`trainlint.layout.changes.CHANGE_KEYS` whose value the chain's end differs in.
    None when the chain also changes what no layout key says (a setting such as
    --overlap-grad-reduce, an engine bucket): that fix stays a hint."""
    from trainlint.layout.changes import CHANGE_KEYS

    if not chain:
        return None
    final = chain[-1].spec
    if final.settings != original.settings:
        return None
    changes = {key: final.value(key) for key in sorted(CHANGE_KEYS) if final.value(key) != original.value(key)}
    return changes or None


# ------------------------------------------------------------------ whole-layout suggestions


class LayoutAdvice:
    """The fastest whole layout ``trainlint suggest`` finds for a spec (TP, PP, VP, CP, micro
    batch, recompute, ZeRO / distributed optimizer together; under a headroom; no new start-up
    finding), or None: for findings that no single change resolves. One per session
    (:func:`trainlint.project.session.open_session`), with the session's estimator and TL1xx rules
    (plugins' and the project's rule options included).

    Memoised on exactly the fields the search reads (:mod:`trainlint.layout.reads`: the search runs on
    a traced copy of the spec) and the headroom: the language server re-lints on every edit, most edits
    (a comment, a learning rate, ``--train-iters``) leave every field the layout question reads as it
    was, and the search is the slowest part of a re-lint. The launch-time rules (TL1xx) that refuse a
    finalist read any setting (the training length too), so they are not part of the memo: a memoised
    answer is given again only after each launch check the search made is asked again on the new spec
    and answers as before (else the search runs again)."""

    KEPT = 32

    def __init__(self, estimator: Callable[[TrainingSpec], Any], startup_rules: Callable[[], Any],
                 adapters: Sequence[Any] = ()) -> None:
        self.estimator = estimator
        self.adapters = tuple(adapters)
        """The session's: the run's adapter says what its format can express and spells the layout."""
        self.startup_rules = startup_rules
        """Called on the first search: building the rule list costs nothing until a layout is needed."""
        self.found: list[_Answer] = []
        """The memoised answers, oldest first."""
        self.searches = 0
        """How many searches ran (not answered from ``found``)."""

    def __call__(self, spec: TrainingSpec, headroom: float, current: Any = None, worth: float | None = None) -> Any:
        """``current``: ``spec``'s estimate when the caller has it (the engine's); only a search whose
        answer is not memoised uses it. ``worth``: the caller only needs a layout faster than this many
        tokens/s; None (the answer then) also when no layout can be, found without timing any
        (``SearchOptions.worth``)."""
        fixed = _fixed(spec)
        for answer in reversed(self.found):
            # a search stopped by `worth` says only that nothing beats it: it answers that question only
            if answer.headroom != headroom or (answer.worth is not None and answer.worth != worth):
                continue
            if not _same_fixed(answer.fixed, fixed) or not _reads_match(answer.key, spec):
                continue
            replayed = self._replay(answer, spec)
            if replayed is not _AGAIN:
                return replayed
            break
        answer = self.search(spec, headroom, worth)
        if len(self.found) >= self.KEPT:
            self.found.pop(0)  # the oldest
        self.found.append(answer)
        return answer.suggestion(spec)

    def forget(self) -> None:
        """Empty the memoised searches: the next question searches again."""
        self.found.clear()

    def _refused(self, spec: TrainingSpec, make: Callable[[TrainingSpec], TrainingSpec], before: list) -> bool:
        """Whether a TL1xx rule reports on the finalist ``make(spec)`` what ``spec`` does not already get."""
        from trainlint.layout.reads import paused
        from trainlint.layout.startup_check import startup_findings

        with paused():  # the rules' reads are asked again on every replay, not memoised
            rules = self.startup_rules()
            if not before:
                before.append(startup_findings(spec, rules))
            return bool(startup_findings(make(spec), rules) - before[0])

    def _replay(self, answer: _Answer, spec: TrainingSpec) -> Any:
        """``answer`` for ``spec`` when each launch check answers as it did for the searched spec; else _AGAIN."""
        before: list = []
        for make, refused in answer.checks:
            if self._refused(spec, make, before) != refused:
                return _AGAIN
        return answer.suggestion(spec)

    def search(self, spec: TrainingSpec, headroom: float, worth: float | None = None) -> _Answer:
        """The search on a traced copy of ``spec``: its answer with the fields it read."""
        from trainlint.layout.reads import ReadLog, traced
        from trainlint.layout.search import SearchError, SearchOptions, search

        self.searches += 1
        log = ReadLog()
        checks: list[tuple[Callable[[TrainingSpec], TrainingSpec], bool]] = []
        before: list = []

        def launch_refused(make: Callable[[TrainingSpec], TrainingSpec]) -> bool:
            refused = self._refused(spec, make, before)
            checks.append((make, refused))
            return refused

        best, complete = None, True
        with log.recording():
            try:
                # no `current`: the estimate of the traced copy records what the estimator reads
                result = search(traced(spec), None,
                                SearchOptions(top=1, headroom=headroom, max_checked=20, max_structures=5_000,
                                              max_evaluated=50_000, lazy_memory=True, adapters=self.adapters,
                                              worth=worth),
                                estimator=self.estimator, launch_refused=launch_refused)
            except SearchError:
                result = None
        make = None
        if result is not None:
            best = result.best
            if best is None or best.is_current:
                best, complete = None, not result.stats.below_worth
            else:
                # top=1: the search stopped at the first finalist that passed, its last launch check
                assert checks and not checks[-1][1], "a changed layout passes its launch check"
                make = checks[-1][0]
        return _Answer(headroom, None if complete else worth, log.key(spec), _fixed(spec), best, make, checks)


_AGAIN = object()
"""A replayed answer whose launch checks answer otherwise: search again."""


@dataclass
class _Answer:
    """One memoised search of :class:`LayoutAdvice`."""

    headroom: float
    worth: float | None
    """None: the whole answer; else the search stopped at ``worth`` (no layout beats it: None)."""
    key: tuple
    """The fields the search read, with their values (:meth:`trainlint.layout.reads.ReadLog.key`)."""
    fixed: tuple
    """The spec's own attributes (:func:`_fixed`): framework, format, dialect, entry point, file, sources,
    target and its catalog."""
    best: Any
    make: Callable[[TrainingSpec], TrainingSpec] | None
    """How to make ``best``'s spec from a spec: the best layout's changes applied."""
    checks: list[tuple[Callable[[TrainingSpec], TrainingSpec], bool]]
    """The launch checks the search made, in order: (how to make the finalist from a spec, refused)."""

    def suggestion(self, spec: TrainingSpec) -> Any:
        """The best layout with its spec made from ``spec`` (a traced or earlier spec's never leaves the memo)."""
        if self.best is None or self.make is None:
            return None
        from dataclasses import replace

        return replace(self.best, spec=self.make(spec))


def _fixed(spec: TrainingSpec) -> tuple:
    """The spec's own attributes (not traced), compared whole: the file and the files its run was read
    from by name, not by folder. Nothing the search computes reads a folder (the estimate and the
    spelling read the traced fields; a spelling names a file by its base name, recorded with each
    value read, :func:`trainlint.layout.reads.snapshot`), so the same question asked by configs in
    two folders (a sweep's copies, a repository's runs of one model) is searched once; the launch
    checks are asked again on every memoised answer."""
    return (spec.framework, spec.format, spec.dialect, spec.entry_point, spec.core_configs_only,
            os.path.basename(spec.path), spec.named, tuple(os.path.basename(s) for s in spec.sources), spec.target,
            framework_of(spec).key_catalog(spec.target))


def _same_fixed(a: tuple, b: tuple) -> bool:
    return a[:-1] == b[:-1] and a[-1] is b[-1]


def _reads_match(key: tuple, spec: TrainingSpec) -> bool:
    from trainlint.layout.reads import matches

    return matches(key, spec)


def suggest_layout(spec: TrainingSpec, ctx: Any, headroom: float, current: Any = None, worth: float | None = None) -> Any:
    """The session's whole layout for ``spec`` (see :class:`LayoutAdvice`), or None when the
    rule runs without one (no estimator, or a RuleContext built by hand). ``current``: the
    estimate of ``spec`` itself when the rule has it (the search starts from it). ``worth``: the
    rule needs the layout only when it is faster than this many tokens/s (else None may come back
    without a search of the whole space)."""
    advice = getattr(ctx, "layout_advice", None)
    if advice is None or ctx.estimator is None:
        return None
    if worth is not None:
        return advice(spec, headroom, current, worth)
    return advice(spec, headroom, current) if current is not None else advice(spec, headroom)


def layout_sentence(best: Any, current: Any) -> str:
    """"trainlint suggest: TP 8 PP 4 DP 2 micro 1 GA 512 recompute none (--tensor-model-parallel-size 8
    ...) fits at 61.0 of 80.0 GiB, 1.30x tokens/s"."""
    from trainlint.layout.render import layout_text

    e = best.estimate
    spelled = ", ".join(best.spelled)
    return (f"trainlint suggest: {layout_text(best.layout, best.spec)} ({spelled}) fits at "
            f"{e.worst_stage.total / 2**30:.1f} of {e.capacity_bytes / 2**30:.1f} GiB, MFU {e.mfu:.1%}, "
            f"{e.tokens_per_s / current.tokens_per_s:.2f}x tokens/s")
