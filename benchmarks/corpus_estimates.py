"""The estimates trainlint makes over a directory of real configs (default ../shared/corpus) with only
``--gpu`` given, checked against the engine-following invariants of issue 15:

* estimates with MFU > 1 (the estimator raises TL999 instead: they are counted as internal errors);
* Megatron-DeepSpeed runs (``--deepspeed`` with a DeepSpeed JSON) whose memory ignores their ZeRO
  stage: the engine must be DeepSpeed's, its shard stage the JSON's (BF16_Optimizer at ZeRO 0 in
  bf16), and the memory must not stay the same when the stage changes;
* the configs predicted above the GPU's capacity, listed with their numbers for judgement.

    python benchmarks/corpus_estimates.py [DIR] [--gpu a100-80gb] [--json]

Exit status 2 on an internal error: a file read with a TL999, or an estimate that breaks the
estimator's invariants (both are listed, with the rest of the report).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections import Counter
from pathlib import Path

from trainlint.adapters import builtin_adapters
from trainlint.adapters.engine import set_engine
from trainlint.files.checker import check_paths
from trainlint.estimator import ContextError, InvariantError, build_context, estimate
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.rules.estimation.scope import unmodelled

REPO = Path(__file__).resolve().parents[1]
GIB = 2**30


def zero_followed(spec, ctx, est) -> str:
    """'' when a Megatron-DeepSpeed run's memory follows its ZeRO stage, else why not."""
    stage = spec.value("parallel.zero_stage")
    if spec.value("engine.optimizer_owner", "") not in ("deepspeed-zero", "deepspeed-bf16", "deepspeed"):
        return f"engine {spec.value('engine.optimizer_owner')!r} is not DeepSpeed's"
    if isinstance(stage, int) and stage >= 1 and spec.value("engine.shard_stage") != stage:
        return f"shard stage {spec.value('engine.shard_stage')} != ZeRO {stage}"
    if est.inputs.dp == 1:
        return ""  # ZeRO shards over data parallel: with one replica every stage holds the same
    other = copy.copy(spec)
    other.parallel = copy.copy(spec.parallel)
    target = 3 if stage in (0, 1, 2) else 1
    other.parallel.zero_stage = Value(target, Provenance(Origin.ASSUMED, note="corpus check"))
    set_engine(other)
    try:
        moved = estimate(other, ctx)
    except InvariantError:
        return ""
    if moved.ok and moved.worst_stage.total == est.worst_stage.total:
        return f"memory the same at ZeRO {stage} and {target}"
    return ""


def survey(directory: Path, gpu: str) -> dict:
    results = check_paths([str(directory)], builtin_adapters())
    counts: Counter[str] = Counter()
    over: list[dict] = []
    internal: list[dict] = []
    ignored_zero: list[dict] = []
    for result in results:
        for d in result.diagnostics:
            if d.code == "TL999":
                internal.append({"path": str(Path(result.path).relative_to(directory)), "label": "(reading)",
                                 "error": d.message})
        for spec in result.specs:
            counts["runs"] += 1
            try:
                ctx = build_context(spec, gpu=gpu)
            except ContextError:
                counts["context error"] += 1
                continue
            try:
                est = estimate(spec, ctx)
            except InvariantError as exc:
                internal.append({"path": str(Path(result.path).relative_to(directory)), "label": spec.label, "error": str(exc)})
                continue
            if not est.ok:
                counts["no estimate"] += 1
                continue
            counts["estimates"] += 1
            rel = str(Path(result.path).relative_to(directory))
            if est.mfu > 1:
                counts["mfu > 1"] += 1
            mds = spec.framework == "megatron" and spec.dialect in ("megatron-deepspeed", "legacy") \
                and getattr(spec.settings.get("deepspeed"), "value", None) is True
            if mds:
                counts["megatron-deepspeed runs (--deepspeed)"] += 1
                why = zero_followed(spec, ctx, est)
                if why:
                    ignored_zero.append({"path": rel, "label": spec.label, "why": why})
            if not est.fits:
                i, w = est.inputs, est.worst_stage
                gaps = unmodelled(spec)
                over.append({
                    "path": rel, "label": spec.label,
                    "scope": "; ".join(g.why for g in gaps) if gaps else "", "framework": spec.framework, "dialect": spec.dialect,
                    "total_gib": round(w.total / GIB, 1), "capacity_gib": round(est.capacity_bytes / GIB, 1),
                    "params_b": round(est.num_params / 1e9, 2), "world": i.world,
                    "layout": f"TP {i.tp} PP {i.pp} DP {i.dp} CP {i.cp} micro {i.micro} seq {i.seq} "
                              f"{i.owner} stage {i.shard_stage} recompute {i.recompute} "
                              f"{'flash' if i.flash else 'unfused attention'} {i.dtype}",
                    "parts_gib": {k: round(getattr(w, k) / GIB, 1) for k in ("params", "grads", "optimizer", "activations",
                                                                            "buffers", "overhead")},
                    "world_from": next((a.source for a in est.assumptions if a.field == "cluster.world_size"), "the file"),
                })
    return {"gpu": gpu, "counts": dict(counts), "internal_errors": internal, "megatron_deepspeed_zero_ignored": ignored_zero,
            "over_capacity": sorted(over, key=lambda o: o["path"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", nargs="?", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--gpu", default="a100-80gb")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = survey(Path(args.directory).resolve(), args.gpu)
    status = 0
    if report["internal_errors"]:
        print(f"corpus_estimates: error: {len(report['internal_errors'])} internal errors (TL999 or a broken "
              "invariant)", file=sys.stderr)
        status = 2
    if args.json:
        print(json.dumps(report, indent=2))
        return status
    c = report["counts"]
    print(f"{args.directory}: {c.get('runs', 0)} runs, {c.get('estimates', 0)} estimates on {args.gpu} (only --gpu given)")
    print(f"  estimates with MFU > 1: {c.get('mfu > 1', 0)}; internal errors (broken invariants): {len(report['internal_errors'])}")
    for e in report["internal_errors"]:
        print(f"    {e['path']} ({e['label']}): {e['error']}")
    print(f"  Megatron-DeepSpeed runs (Megatron front end with --deepspeed, incl. DeepSpeedExamples' Megatron-LM v1.1.5 copies): "
          f"{c.get('megatron-deepspeed runs (--deepspeed)', 0)}; "
          f"memory ignoring the ZeRO stage: {len(report['megatron_deepspeed_zero_ignored'])}")
    for e in report["megatron_deepspeed_zero_ignored"]:
        print(f"    {e['path']} ({e['label']}): {e['why']}")
    inside = [o for o in report["over_capacity"] if not o["scope"]]
    print(f"  predicted above capacity: {len(report['over_capacity'])}, of which {len(inside)} judged by TL201 "
          f"(the others are outside what the estimator models, and TL900 says why)")
    for o in sorted(report["over_capacity"], key=lambda o: (bool(o["scope"]), o["path"])):
        print(f"    {o['path']} ({o['label']}): {o['total_gib']} of {o['capacity_gib']} GiB, {o['params_b']}B params, "
              f"{o['world']} GPUs [{o['layout']}] {o['parts_gib']}" + (f"\n      not judged: {o['scope']}" if o["scope"] else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
