"""Time of ``trainlint suggest``'s search on the full layout space of a 1T-parameter model on 3072 GPUs
(issue 6 acceptance: under 1 s).

    .venv/bin/python benchmarks/suggest_speed.py          # the 1T case, best / median of several runs
    .venv/bin/python benchmarks/suggest_speed.py --more   # also 7B / 70B / 175B shapes on 3072 GPUs
    .venv/bin/python benchmarks/suggest_speed.py --verify # and check the best against an exhaustive search

The model is Megatron-LM's 1T configuration (Narayanan et al. 2021, Table 1: 128 layers, hidden
25600, 160 heads, sequence 2048, vocabulary 51200, global batch 3072, TP 8 x PP 64 on 3072
A100 80 GB, fp16, full recompute). The space: every TP (1-8, dividing the heads and the node),
PP (dividing the layers), virtual stages, CP (sequence a multiple of 2 CP), DP = the rest, every
micro batch the fixed global batch allows, recompute none / selective / full, distributed
optimizer on / off. The search runs the launch-time rules (TL1xx) and the real estimator on its
finalists, exactly as the command does.

Figures are printed against baselines measured in the same run (no absolute timing is asserted
anywhere in the tests): one full ``estimate()`` of the same config, and the brute force (one
estimate per layout of the space, extrapolated from a timed random sample). The three are timed in
alternating rounds (estimate, search, sample; then the reverse order), so that a machine getting
busier or quieter weighs on each alike; medians of the rounds, and their ratios, are printed.

Exit status 2 on an internal error (the config does not estimate, the search or the estimator
raises); 1 when the 1T search misses its target.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import traceback

from trainlint.estimator import build_context, estimate, estimate_inputs
from trainlint.layout import SearchOptions, search
from trainlint.project.engine import startup_rules
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.layout.search import InputsFactory, _neutral, prepare
from trainlint.layout.space import build_space
from trainlint.adapters.engine import set_engine
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import MEGATRON_LM, TrainingSpec

TARGET_S = 1.0
F = Provenance(Origin.FILE, path="bench.sh", key="--x")


def megatron_spec(world: int, fields: dict) -> TrainingSpec:
    spec = TrainingSpec(framework="megatron", path="bench.sh", label="bench", dialect=MEGATRON_LM)
    for name, value in {"cluster.world_size": world, **fields}.items():
        spec.set(name, Value(value, F))
    set_engine(spec)
    return spec


def one_t():
    spec = megatron_spec(3072, {
        "model.num_layers": 128, "model.hidden_size": 25600, "model.num_attention_heads": 160,
        "model.seq_length": 2048, "model.max_position_embeddings": 2048, "model.vocab_size": 51200,
        "parallel.tensor": 8, "parallel.pipeline": 64, "batch.micro_batch": 1, "batch.global_batch": 3072,
        "precision.dtype": "fp16", "memory.recompute": "full", "memory.recompute_method": "uniform",
        "memory.recompute_num_layers": 1})
    return "1T (Narayanan 2021), 3072 x A100 80GB", spec, build_context(spec, gpu="a100-80gb")


def preset(name: str, world: int, global_batch: int, seq: int):
    spec = megatron_spec(world, {"batch.micro_batch": 1, "batch.global_batch": global_batch, "precision.dtype": "bf16",
                                 "model.seq_length": seq})
    return f"{name}, {world} x H100, global batch {global_batch}", spec, build_context(spec, gpu="h100-sxm", model=name)


def space_of(spec, ctx):
    """(resolved inputs, space) as ``search`` builds them: from the config's own estimate, or, when its
    written layout cannot be estimated (a batch triple that does not divide the world), from the neutral
    layout the search starts from, with the written layout as the current one."""
    current, base = prepare(spec, ctx)
    written = None
    if base is None:
        neutral, written = _neutral(spec, current)
        fallback = estimate(neutral, ctx) if neutral is not None else None
        if fallback is None or not fallback.ok:
            raise SystemExit(f"benchmark case {spec.label}: neither the layout as written nor a neutral one estimates")
        base = fallback.inputs
    return base, build_space(spec, base, written=written)


class InternalError(Exception):
    """The benchmark's config does not estimate: a figure would time an error path."""


def alternated(actions: dict[str, object], rounds: int) -> dict[str, list[float]]:
    """Seconds of each action in ``rounds`` rounds, the order reversed every other round."""
    times: dict[str, list[float]] = {name: [] for name in actions}
    order = list(actions)
    for round_ in range(rounds):
        for name in order if round_ % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            actions[name]()  # type: ignore[operator]
            times[name].append(time.perf_counter() - t0)
    return times


def brute_force_sample(spec, ctx, sample: int = 300) -> tuple[list, int]:
    """A random sample of the space's layouts as estimator inputs, and the number of layouts."""
    base, space = space_of(spec, ctx)
    factory = InputsFactory(spec, base)
    points = []
    for tp, pp, vpp, cp, dp in space.structures():
        for zero, _, _ in space.zero_values(pp):
            for dist in space.dist_opt:
                for recompute in space.recompute:
                    for micro, ga, gb in space.batches(dp, pp, vpp):
                        points.append((tp, pp, vpp, cp, dp, zero, dist, recompute, micro, ga, gb))
    rng = random.Random(0)
    chosen = rng.sample(points, min(sample, len(points)))
    inputs = []
    for tp, pp, vpp, cp, dp, zero, dist, recompute, micro, ga, gb in chosen:
        s = factory.structure(tp, pp, vpp, cp, dp, space.sp_for(tp), zero, dist)
        inputs.append(factory.point(s, micro, ga, gb, recompute))
    return inputs, len(points)


def exhaustive_best(spec, ctx, headroom: float = 0.90) -> tuple[float, int, float]:
    """(best tokens/s, layouts under the headroom, seconds) with one full estimate per layout of
    the space: what the search must agree with."""
    base, space = space_of(spec, ctx)
    factory = InputsFactory(spec, base)
    t0 = time.perf_counter()
    best, fit = 0.0, 0
    for tp, pp, vpp, cp, dp in space.structures():
        for zero, _, most_accum in space.zero_values(pp):
            for dist in space.dist_opt:
                if dp * cp == 1 and dist != space.current.dist_opt and space.framework == "megatron":
                    continue  # the search leaves out flags that change nothing
                s = factory.structure(tp, pp, vpp, cp, dp, space.sp_for(tp), zero, dist)
                for recompute in space.recompute:
                    for micro, ga, gb in space.batches(dp, pp, vpp):
                        if most_accum is not None and ga > most_accum:
                            continue
                        e = estimate_inputs(factory.point(s, micro, ga, gb, recompute))
                        if e.worst_stage.total <= headroom * e.capacity_bytes and e.mfu <= 1.0:
                            fit += 1
                            best = max(best, e.tokens_per_s)
    return best, fit, time.perf_counter() - t0


ESTIMATES_PER_ROUND = 20
"""One estimate takes about a millisecond: each round times this many, the figure is one's share."""


def report(label, spec, ctx, rules, repeat: int, verify: bool = False) -> float:
    first = estimate(spec, ctx)
    if not first.ok:
        raise InternalError(f"{label}: the config does not estimate ({first})")
    options = SearchOptions()
    result = search(spec, ctx, options, rules=rules)  # warm (imports, caches of the catalog)
    sample, n_points = brute_force_sample(spec, ctx)

    def estimates() -> None:
        for _ in range(ESTIMATES_PER_ROUND):
            estimate(spec, ctx)

    def sampled() -> None:
        for i in sample:
            estimate_inputs(i)

    times = alternated({"estimate": estimates, "search": lambda: search(spec, ctx, options, rules=rules),
                        "sample": sampled}, repeat)
    est_best, est_median = min(times["estimate"]) / ESTIMATES_PER_ROUND, statistics.median(times["estimate"]) / ESTIMATES_PER_ROUND
    best, median = min(times["search"]), statistics.median(times["search"])
    brute = statistics.median(times["sample"]) / len(sample) * n_points
    s = result.stats
    print(label)
    print(f"  space: {s.space_points:,} layouts ({s.structures:,} TP/PP/VP/CP/DP structures); "
          f"{s.static_pruned:,} structure x optimizer branches pruned on static memory, {s.evaluated:,} layouts evaluated "
          f"(the estimator's own memory and step time), {s.memory_pruned:,} over the headroom, {s.feasible:,} fit; {s.checked} finalists estimated "
          f"for real and checked with the TL1xx rules ({s.launch_refused} refused)")
    print(f"  timed in {repeat} alternating rounds (estimate x{ESTIMATES_PER_ROUND}, search, brute-force sample); medians:")
    print(f"  one full estimate():   best {est_best * 1e3:8.3f} ms   median {est_median * 1e3:8.3f} ms")
    print(f"  search (whole space):  best {best * 1e3:8.1f} ms   median {median * 1e3:8.1f} ms   "
          f"= {median / est_median:,.0f} x one estimate")
    print(f"  brute force (one estimate per layout, {n_points:,} layouts, extrapolated): {brute:8.2f} s   "
          f"= {brute / median:,.0f} x the search")
    if verify:
        top, fit, seconds = exhaustive_best(spec, ctx)
        found = max(sg.estimate.tokens_per_s for sg in result.suggestions) if result.suggestions else 0.0
        same = "agrees" if abs(found - top) <= 1e-9 * top and fit == s.feasible else "DISAGREES"
        print(f"  exhaustive (a full estimate of every layout): {fit:,} fit, best {top:,.0f} tokens/s in {seconds:.2f} s; "
              f"the search's best {found:,.0f}, {s.feasible:,} fit: {same}")
    if result.best is not None and result.current.ok:
        b, c = result.best.estimate, result.current
        print(f"  current: {c.tokens_per_s:,.0f} tokens/s, {c.worst_stage.total / 2**30:.1f} GiB; "
              f"best: {result.best.layout.short()}: {b.tokens_per_s:,.0f} tokens/s "
              f"({b.tokens_per_s / c.tokens_per_s:.2f}x), {b.worst_stage.total / 2**30:.1f} GiB, MFU {b.mfu:.1%}")
    print()
    return median


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--more", action="store_true", help="also time other model sizes")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--verify", action="store_true",
                        help="also estimate every layout of the space and compare the best with the search's")
    args = parser.parse_args(argv)
    try:
        return measure(args)
    except InternalError as exc:
        print(f"suggest_speed: error: {exc}; no figure is reported", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a crash of the search or the estimator is an internal error, not a figure
        traceback.print_exc()
        print("suggest_speed: error: internal error (above); no figure is reported", file=sys.stderr)
        return 2


def measure(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    rules = startup_rules(build_registry(create_host()))
    print(f"launch rules loaded once: {len(rules)} TL1xx rules in {(time.perf_counter() - t0) * 1e3:.0f} ms (not in the timings)\n")
    label, spec, ctx = one_t()
    median = report(label, spec, ctx, rules, args.repeat, args.verify)
    verdict = "PASS" if median < TARGET_S else "FAIL"
    print(f"{verdict}: 1T on 3072 GPUs searched in {median:.3f} s (target < {TARGET_S:.0f} s)\n")
    if args.more:
        for case in (preset("gpt3-175b", 3072, 1536, 2048), preset("llama2-70b", 3072, 1536, 4096),
                     preset("llama2-7b", 3072, 3072, 4096), preset("llama2-7b", 512, 1024, 4096)):
            report(*case, rules, 3, args.verify)
    return 0 if median < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
