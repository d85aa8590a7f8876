"""How many real configs that state a model get an estimate with only ``--gpu`` given.

Over a directory (default ../shared/corpus), every file an adapter claims is read the way
``trainlint estimate`` / ``check`` read it (check_paths over the built-in adapters, no project
config, no --env), and each spec that states the model's shape (layers, hidden size and attention
heads known) is estimated through build_context + estimate with only ``--gpu`` given. A config is
*covered* when every such spec gets an estimate, or when trainlint says in one TL900 why it does not
estimate it (an inference/evaluation entry point, an architecture the estimator does not model).
The rest are grouped by the first reason the estimator gives, counted, and (with --list) listed.

A printed estimate is not a judged one: the rules stay silent on an estimate whose world size, micro
batch or sequence length trainlint assumed. So two more figures, through the rules' own gates: the
configs on which the memory rules (TL201, TL202) judge (``world_bound.memory_verdict``: a stated
world size, or memory bounded over every data-parallel size), and those on which every estimation
rule judges, MFU (TL301) and the DP network rules included (``scope.usable_estimate``); the reasons
the others are not judged are grouped and counted too.

    python benchmarks/estimate_coverage.py [DIR] [--gpu h100-sxm] [--list] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths
from trainlint.estimator import ContextError, InvariantError, build_context, estimate
from trainlint.estimator.inputs import unjudged
from trainlint.rules.estimation.scope import unmodelled, usable_estimate
from trainlint.rules.estimation.world_bound import memory_verdict

REPO = Path(__file__).resolve().parents[1]
SHAPE = ("model.num_layers", "model.hidden_size", "model.num_attention_heads")
ASSUMED_FIELDS = ("cluster.world_size", "model.vocab_size", "batch.micro_batch", "model.seq_length")
"""Inputs trainlint assumes (stated in the estimate) when nothing gives them: counted among the estimated."""


def states_shape(spec: object) -> bool:
    """Layers, hidden size and heads all known from the config (a framework default is not a statement)."""
    for name in SHAPE:
        entry = spec.get(name)
        if entry is None or entry.value is None or entry.provenance.origin.value == "default":
            return False
    return True


SANITY: list[tuple[float, float, str]] = []
"""(MFU, worst-stage GiB, label) of every estimate made: the benchmark reports the extremes."""


JUDGED: dict[str, tuple[str, str]] = {}
"""Per estimated spec ("path: label"): (memory rules' reason, all rules' reason), "" when they judge."""

_NAMES = {"cluster.world_size": "world size", "batch.micro_batch": "micro batch", "model.seq_length": "sequence length"}


def judged(spec: object, est: object, gpu: str) -> tuple[str, str]:
    """Why the memory rules, and why all estimation rules, do not judge ``est`` ("" when they do),
    asked of the gates the rules themselves call."""
    def estimator(s):
        return estimate(s, build_context(s, gpu=gpu))

    assumed = [_NAMES[a.field] for a in unjudged(est)]
    why_all = "" if usable_estimate(spec, est) is not None else (
        "assumed " + " and ".join(assumed) if assumed else "unmodelled")
    if memory_verdict(spec, est, estimator) is not None:
        return "", why_all
    if assumed == ["world size"] and spec.framework == "megatron" and not spec.entry_point:
        return "assumed world size of a Megatron argument list with no launch (another script decides the layout)", why_all
    return why_all, why_all


def classify(spec: object, gpu: str) -> tuple[str, str]:
    """("estimate" | "scope" | "missing", reason) for one spec, through estimate's own path."""
    why = unmodelled(spec)
    try:
        ctx = build_context(spec, gpu=gpu)
    except ContextError as exc:
        return "missing", f"context: {exc}"
    if why and not all(w.training for w in why):
        return "scope", "not training: inference, evaluation, conversion or quantization entry point"
    est = estimate(spec, ctx)
    if est.ok:
        if why:
            return "scope", f"unmodelled: {why[0].why}"
        SANITY.append((est.mfu, est.worst_stage.total / 2**30, f"{spec.path}: {spec.label}"))
        JUDGED[f"{spec.path}: {spec.label}"] = judged(spec, est, gpu)
        assumed = sorted(a.field for a in est.assumptions if a.origin == "assumed" and a.field in ASSUMED_FIELDS)
        return "estimate", ", ".join(assumed)
    if why:
        return "scope", f"unmodelled: {why[0].why}"
    first = est.missing[0]
    return "missing", f"{first.field}: {first.what}" + "".join(f" | {m.field}" for m in est.missing[1:])


class InternalError(Exception):
    """trainlint failed on a file (TL999) or an estimate broke the estimator's invariants."""


def measure(directory: Path, gpu: str) -> dict:
    SANITY.clear()
    JUDGED.clear()
    results = check_paths([str(directory)], builtin_adapters())
    broken = [r.path for r in results if any(d.code == "TL999" for d in r.diagnostics)]
    if broken:  # a file trainlint failed on would count as "not claimed": no figure stands
        raise InternalError(f"internal error (TL999) in {len(broken)} files, e.g. {broken[0]}")
    claimed = [r for r in results if r.format is not None]
    stating: dict[str, list[tuple[str, str]]] = {}
    judging: dict[str, list[tuple[str, str]]] = {}
    for result in claimed:
        rows = [classify(spec, gpu) for spec in result.specs if states_shape(spec)]
        if rows:
            stating[result.path] = rows
            judging[result.path] = [JUDGED[f"{spec.path}: {spec.label}"] for spec in result.specs
                                    if f"{spec.path}: {spec.label}" in JUDGED]
    outcome: dict[str, tuple[str, str]] = {}
    for path, rows in stating.items():
        bad = [r for r in rows if r[0] == "missing"]
        if bad:
            outcome[path] = bad[0]
        elif any(r[0] == "scope" for r in rows):
            outcome[path] = next(r for r in rows if r[0] == "scope")
        else:
            outcome[path] = ("estimate", ", ".join(sorted({f for r in rows for f in r[1].split(", ") if f})))
    reasons: dict[str, list[str]] = defaultdict(list)
    for path, (kind, reason) in outcome.items():
        if kind != "estimate":
            reasons[f"{kind}: {_group(reason)}"].append(path)
    # A config is judged when every estimated spec in it is (the first reason of its first unjudged one otherwise).
    memory_not: dict[str, list[str]] = defaultdict(list)
    all_not: dict[str, list[str]] = defaultdict(list)
    memory_judged = all_judged = 0
    for path, (kind, _) in outcome.items():
        if kind != "estimate":
            continue
        mem = next((m for m, _ in judging[path] if m), "")
        every = next((a for _, a in judging[path] if a), "")
        memory_judged += not mem
        all_judged += not every
        if mem:
            memory_not[mem].append(path)
        if every:
            all_not[every].append(path)
    kinds = Counter(kind for kind, _ in outcome.values())
    assumed = Counter(f for kind, fields in outcome.values() if kind == "estimate" for f in fields.split(", ") if f)
    return {"directory": str(directory), "gpu": gpu, "files": len(results), "claimed": len(claimed),
            "stating_shape": len(outcome), "estimated": kinds["estimate"], "scope": kinds["scope"],
            "covered": kinds["estimate"] + kinds["scope"], "estimated_with_assumed": dict(assumed),
            "mfu_max": max(SANITY)[0] if SANITY else None, "mfu_above_1": [s[2] for s in SANITY if s[0] > 1],
            "memory_gib_max": max((s[1], s[2]) for s in SANITY) if SANITY else None,
            "memory_judged": memory_judged, "all_judged": all_judged,
            "memory_not_judged": _by_count(memory_not), "all_not_judged": _by_count(all_not),
            "largest_memory": sorted(((s[1], s[0], s[2]) for s in SANITY), reverse=True)[:10],
            "reasons": _by_count(reasons)}


def _by_count(groups: dict[str, list[str]]) -> dict[str, list[str]]:
    return {k: sorted(v) for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))}


def _group(reason: str) -> str:
    """One group per kind of reason: numbers and names inside it are dropped."""
    import re

    head, _, rest = reason.partition(" | ")
    return re.sub(r"\d[\d,.]*", "N", head.split(" (")[0])[:120] + (f" (also {rest})" if rest else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--gpu", default="h100-sxm", help="the one context flag given (default h100-sxm)")
    parser.add_argument("--list", action="store_true", help="list every config that is not covered, by reason")
    parser.add_argument("--json", action="store_true", help="print the whole measurement as JSON")
    args = parser.parse_args(argv)
    directory = Path(args.directory)
    if not directory.is_dir():
        print(f"estimate_coverage: no such directory: {directory}", file=sys.stderr)
        return 2
    try:
        m = measure(directory, args.gpu)
    except (InternalError, InvariantError) as exc:
        print(f"estimate_coverage: error: {exc}; no figure is reported", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(m, indent=2))
        return 0
    total = m["stating_shape"]
    pct = 100.0 * m["covered"] / total if total else 0.0
    print(f"{m['directory']}: {m['files']} files, {m['claimed']} claimed by an adapter, "
          f"{total} state the model's shape (layers, hidden, heads)")
    print(f"covered with only --gpu {m['gpu']}: {m['covered']} / {total} = {pct:.1f}% "
          f"({m['estimated']} estimated, {m['scope']} out of scope with a TL900 saying why)")
    if m["mfu_max"] is not None:
        gib, where = m["memory_gib_max"]
        print(f"  estimates made: highest MFU {m['mfu_max']:.1%} ({len(m['mfu_above_1'])} above 100%); "
              f"largest memory per GPU {gib:,.1f} GiB ({where})")
    for name, count in sorted(m["estimated_with_assumed"].items()):
        print(f"  of the estimated, {count} with an assumed {name} (stated in the estimate)")
    est_n = m["estimated"]
    print(f"printed estimate: {est_n} / {total}; of these, judged by the rules (--gpu given, so no GPU is assumed):")
    for what, key, why_key in (("memory rules TL201/TL202", "memory_judged", "memory_not_judged"),
                               ("every estimation rule (also MFU TL301, DP network TL4xx)", "all_judged", "all_not_judged")):
        print(f"  {what}: {m[key]} / {est_n} estimated ({m[key]} / {total} of the shape-stating configs)")
        for reason, paths in m[why_key].items():
            print(f"    {len(paths):4d}  not judged: {reason}")
            if args.list:
                for p in paths:
                    print(f"            {p}")
    if args.list:
        print("the ten largest memory totals per GPU (GiB, MFU, config):")
        for gib, mfu, where in m["largest_memory"]:
            print(f"  {gib:12,.1f}  {mfu:6.1%}  {where}")
    print("not estimated, by reason (scope: covered, a TL900 says why):" if m["reasons"] else "not estimated: none")
    for reason, paths in m["reasons"].items():
        print(f"  {len(paths):4d}  {reason}")
        if args.list:
            for p in paths:
                print(f"          {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
