"""The layout search's branch and bound (issue 17): the floor on the step time is a floor, and the
lazy best-first order gives exactly the exhaustive ranking: the same suggestions from
``trainlint suggest`` and the same TL301 findings (best layout included) on the corpus."""

from __future__ import annotations

import dataclasses
import importlib
import random
from pathlib import Path

import pytest

from trainlint.cli import main
from trainlint.estimator.performance import exchange_floor, step_time, step_time_floor
from trainlint.layout import SearchOptions, search
from trainlint.layout.search import InputsFactory, prepare
from trainlint.layout.space import build_space

from test_suggest import CASES, default_startup_rules

search_module = importlib.import_module("trainlint.layout.search")  # the package re-exports search()


@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_step_time_floor_never_exceeds_the_step_time(name, spec, ctx):
    _, base = prepare(spec, ctx)
    assert base is not None
    space = build_space(spec, base)
    factory = InputsFactory(spec, base)
    rng = random.Random(11)
    structures = list(space.structures())
    checked = tight = tighter = 0
    for tp, pp, vpp, cp, dp in rng.sample(structures, min(25, len(structures))):
        for zero, _, _ in space.zero_values(pp):
            for dist in space.dist_opt:
                s = factory.structure(tp, pp, vpp, cp, dp, space.sp_for(tp), zero, dist)
                for recompute in space.recompute:
                    for micro, ga, gb in list(space.batches(dp, pp, vpp))[:3]:
                        i = factory.point(s, micro, ga, gb, recompute)
                        floor, real = step_time_floor(i), step_time(i).step_time
                        assert 0 < floor <= real * (1 + 1e-12)
                        # the search's bound adds the exchange terms the floor leaves out
                        exchange = exchange_floor(i)
                        assert exchange >= 0 and floor + exchange <= real * (1 + 1e-12)
                        checked += 1
                        tight += floor >= 0.5 * real
                        tighter += floor + exchange >= 0.99 * real
    assert checked > 0
    assert tight > 0  # a floor of 0 would be valid and useless
    assert tighter > 0  # within the 1% tie of the real step time somewhere: what saves the search its timings


@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_a_structures_bound_never_beats_its_layouts_floors(name, spec, ctx):
    """TL301's search lists a structure's layouts only when a bound on all of them could come
    next (search._structure_bound, from one layer's costs at a large micro batch): that bound, at
    the structure's own largest micro batch and at the whole space's, is never better than the
    bound of any of its layouts, at any ZeRO stage, optimizer and recompute (so never better than
    their real step times: the ranking tests above check the order itself)."""
    _, base = prepare(spec, ctx)
    assert base is not None
    options = SearchOptions()
    for tolerance in (None, 0.25):
        space = build_space(spec, base, batch_tolerance=tolerance)
        factory = InputsFactory(spec, base)
        structures = list(space.structures())
        plans = [(dims, list(space.batches(dims[4], dims[1], dims[2])), space.zero_values(dims[1])) for dims in structures]
        plans = [p for p in plans if p[1] and p[2]]
        widest = max(max(b[0] for b in batches) for _, batches, _ in plans)
        rng = random.Random(5)
        checked = 0
        shared: dict = {}  # the costs at the widest micro batch shared by structures of the same TP and CP
        for dims, batches, zeros in rng.sample(plans, min(20, len(plans))):
            tp, pp, vpp, cp, dp = dims
            cache: dict = {}
            own = search_module._structure_bound(dims, batches, zeros, space, factory, cache, options)
            wide = max(search_module._structure_bound(dims, batches, zeros, space, factory, cache, options, widest),
                       search_module._structure_bound(dims, batches, zeros, space, factory, {}, options, widest, shared))
            for zero, _, _ in zeros:
                for dist in space.dist_opt:
                    s = factory.structure(tp, pp, vpp, cp, dp, space.sp_for(tp), zero, dist)
                    for recompute in space.recompute:
                        for micro, ga, gb in batches:
                            i = factory.point(s, micro, ga, gb, recompute)
                            score = -gb * i.seq / step_time_floor(i)
                            assert own <= score and wide <= score
                            checked += 1
        assert checked > 0


@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_a_layouts_bound_never_beats_its_real_score(name, spec, ctx):
    """The lazy search's bound of one layout (search._layout_bound: the floor with the host wait per
    layer, plus the exchange floor) and of one recompute mode of a structure (search._mode_bound) is
    never better than the layout's real score, at every ZeRO stage, optimizer and recompute."""
    _, base = prepare(spec, ctx)
    assert base is not None
    options = SearchOptions()
    space = build_space(spec, base)
    factory = InputsFactory(spec, base)
    rng = random.Random(7)
    structures = list(space.structures())
    checked = 0
    for dims in rng.sample(structures, min(20, len(structures))):
        tp, pp, vpp, cp, dp = dims
        batches = list(space.batches(dp, pp, vpp))[:4]
        if not batches:
            continue
        cache: dict = {}
        for zero, engine, _ in space.zero_values(pp):
            for dist in space.dist_opt:
                s = factory.structure(tp, pp, vpp, cp, dp, space.sp_for(tp), zero, dist)
                most, last = search_module._busiest(s)
                for recompute in space.recompute:
                    row = search_module._Row(s, dims, recompute, zero, engine, dist, batches)
                    mode = search_module._mode_bound((s, most, last), recompute, [(row, k, k) for k in range(len(batches))],
                                                     factory, cache, options)
                    for k in range(len(batches)):
                        floor = search_module._layout_floor(s, search_module.derive(s, recompute=recompute), row, k, most, last,
                                                          factory, cache)
                        bound = search_module._layout_bound(row, k, floor, factory, options)
                        i = row.inputs(k, factory)
                        real = search_module._score(i.global_batch * i.seq / step_time(i).step_time, i.world, options)
                        assert mode <= bound <= real
                        checked += 1
    assert checked > 0


def ranking(result):
    return [(s.rank, s.layout, s.estimate.tokens_per_s, s.spelled) for s in result.suggestions]


@pytest.mark.slow
@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_pruned_search_ranks_as_the_exhaustive_one(name, spec, ctx):
    rules = default_startup_rules()
    for top in (1, 5):
        pruned = search(spec, ctx, SearchOptions(top=top), rules=rules)
        full = search(spec, ctx, SearchOptions(top=top, exhaustive=True), rules=rules)
        assert ranking(pruned) == ranking(full)
        assert pruned.stats.feasible == full.stats.feasible
        assert pruned.stats.checked == full.stats.checked


@pytest.mark.slow
@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_lazy_memory_search_ranks_as_the_exhaustive_one(name, spec, ctx):
    """Memory checked only for the layouts the bounds reach (TL301's search): the same suggestions
    as the exhaustive search, with the global batch held and with it allowed to move; and fewer
    memory checks than the eager search wherever the space has more than a handful of layouts."""
    rules = default_startup_rules()
    for tolerance in (None, 0.25):
        for top in (1, 5):
            lazy = search(spec, ctx, SearchOptions(top=top, batch_tolerance=tolerance, lazy_memory=True), rules=rules)
            eager = search(spec, ctx, SearchOptions(top=top, batch_tolerance=tolerance), rules=rules)
            full = search(spec, ctx, SearchOptions(top=top, batch_tolerance=tolerance, exhaustive=True), rules=rules)
            assert ranking(lazy) == ranking(full)
            assert lazy.stats.checked == full.stats.checked
            assert lazy.stats.structures == eager.stats.structures
            assert lazy.stats.evaluated <= eager.stats.evaluated
            assert lazy.stats.feasible <= eager.stats.feasible


@pytest.mark.slow
@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_lazy_memory_search_truncates_where_the_eager_one_does(name, spec, ctx):
    """``max_evaluated`` counts what the eager search evaluates (it stops a row at the first micro
    batch over the headroom); the lazy search settles that count when it gets near the bound, so
    both stop after the same structures and suggest the same layouts."""
    eager = search(spec, ctx, SearchOptions(top=3))
    for limit in sorted({1, eager.stats.evaluated // 3, eager.stats.evaluated // 2, eager.stats.evaluated - 1} - {0}):
        cut = search(spec, ctx, SearchOptions(top=3, max_evaluated=limit))
        lazy = search(spec, ctx, SearchOptions(top=3, max_evaluated=limit, lazy_memory=True))
        assert (lazy.stats.structures, lazy.stats.truncated) == (cut.stats.structures, cut.stats.truncated)
        assert ranking(lazy) == ranking(cut)


def megatron_scripts(corpus: Path) -> list[str]:
    return sorted(str(p) for p in corpus.rglob("*.sh") if p.is_file())


@pytest.mark.slow
def test_tl301_on_the_corpus_is_unchanged_by_pruning(corpus_dir, capsys, monkeypatch):
    files = megatron_scripts(corpus_dir)
    assert files
    args = ["check", "--jobs", "1", "--exit-zero", "--isolated", *files]
    main(args)
    pruned = capsys.readouterr().out
    # TL301's search checks memory lazily (SearchOptions.lazy_memory): the reference is the
    # exhaustive search, every layout's memory and step time computed
    real_search = search_module.search

    def exhaustive_search(spec, ctx, options=None, **kw):
        return real_search(spec, ctx, dataclasses.replace(options or SearchOptions(), exhaustive=True, lazy_memory=False), **kw)

    monkeypatch.setattr(search_module, "search", exhaustive_search)
    main(args)
    full = capsys.readouterr().out
    tl301 = [line for line in pruned.splitlines() if " TL301 " in line]
    assert len(tl301) >= 3, "the corpus should give TL301 findings to compare"
    # TL014 reports reading a framework's argument catalog, cached by the first run: not a search answer
    def answers(out: str) -> list[str]:
        return [line for line in out.splitlines() if " TL014 " not in line and not line.startswith("Found ")]

    assert answers(pruned) == answers(full)
    assert sum(" TL301 " in line for line in answers(full)) == len(tl301)


@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_a_search_stopped_by_worth_stops_only_when_no_layout_is_worth_it(name, spec, ctx):
    """SearchOptions.worth (TL301: only a layout more than max_gap faster matters): the search stops
    before timing anything only when every layout is slower than asked (the exhaustive ranking's
    real estimates say so); otherwise its suggestions are exactly the exhaustive ones."""
    rules = default_startup_rules()
    full = search(spec, ctx, SearchOptions(top=5, exhaustive=True), rules=rules)
    assert full.suggestions
    fastest = max(s.estimate.tokens_per_s for s in full.suggestions)
    stopped = 0
    for factor in (0.5, 0.999, 1.001, 1.05, 1.2, 2.0, 10.0):
        worth = fastest * factor
        result = search(spec, ctx, SearchOptions(top=5, lazy_memory=True, worth=worth), rules=rules)
        if result.stats.below_worth:
            stopped += 1
            assert result.suggestions == [] and result.stats.feasible == 0
            assert all(s.estimate.tokens_per_s < worth for s in full.suggestions)
        else:
            assert ranking(result) == ranking(full)
    assert stopped >= 1  # 10x the fastest layout: no bound gets there


@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_the_searchs_own_figure_is_the_suggestions_real_estimate(name, spec, ctx, monkeypatch):
    """What makes the bounds of the search bounds on the real estimates TL301 compares: the search's
    tokens/s of a layout (its score) is the estimate of the rewritten config."""
    seen = []
    real = search_module._in_tie_order

    def spy(points, cur):
        for score, layout in real(points, cur):
            seen.append((layout, -score))
            yield score, layout

    monkeypatch.setattr(search_module, "_in_tie_order", spy)
    result = search(spec, ctx, SearchOptions(top=5, lazy_memory=True))
    scores = dict(seen)
    assert result.suggestions
    for s in result.suggestions:
        assert s.estimate.tokens_per_s == pytest.approx(scores[s.layout], rel=1e-9)


def generated_specs(n: int, seed: int) -> list[tuple[str, object, object]]:
    """Random Megatron runs, from host-bound tiny models (where the host wait per layer is most of a
    step: the bound's term that matters most there) to large ones, dense and MoE, on several GPUs."""
    from test_suggest import synthetic

    rng = random.Random(seed)
    out = []
    for k in range(n):
        heads = rng.choice([4, 8, 16, 32])
        fields = {"model.num_layers": rng.choice([2, 4, 12, 24, 40]), "model.num_attention_heads": heads,
                  "model.hidden_size": heads * rng.choice([32, 64, 128]), "model.seq_length": rng.choice([512, 2048, 4096]),
                  "model.max_position_embeddings": 4096, "model.vocab_size": rng.choice([32000, 50257]),
                  "batch.global_batch": rng.choice([8, 32, 128, 512]),
                  "memory.recompute": rng.choice(["none", "none", "full", "selective"])}
        if rng.random() < 0.25:
            fields.update({"model.num_experts": 8, "model.moe_top_k": 2, "parallel.expert": rng.choice([1, 2, 8])})
        world = rng.choice([1, 8, 16, 64])
        gpu = rng.choice(["h100-sxm", "a100-80gb", "a100-40gb", "l4", "b200"])
        spec, ctx = synthetic(world=world, gpu=gpu, **fields)
        out.append((f"gen{k}-{gpu}-w{world}", spec, ctx))
    return out


GENERATED = generated_specs(10, 33)


@pytest.mark.slow
@pytest.mark.parametrize("name, spec, ctx", GENERATED, ids=[c[0] for c in GENERATED])
def test_lazy_search_ranks_generated_runs_as_the_exhaustive_one(name, spec, ctx):
    """The bounds (host wait and exchange terms included) never drop the best layout of generated runs:
    TL301's lazy search gives the exhaustive ranking, with and without a worth to beat."""
    from trainlint.layout.search import SearchError

    try:
        full = search(spec, ctx, SearchOptions(top=3, exhaustive=True))
    except SearchError:
        pytest.skip("the estimator does not model this run")
    lazy = search(spec, ctx, SearchOptions(top=3, lazy_memory=True))
    assert ranking(lazy) == ranking(full)
    if full.suggestions:
        fastest = max(s.estimate.tokens_per_s for s in full.suggestions)
        for factor in (0.9, 1.001, 2.0):
            stopped = search(spec, ctx, SearchOptions(top=3, lazy_memory=True, worth=fastest * factor))
            if stopped.stats.below_worth:
                assert all(s.estimate.tokens_per_s < fastest * factor for s in full.suggestions)
            else:
                assert ranking(stopped) == ranking(full)
