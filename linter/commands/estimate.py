"""``trainlint estimate PATH``: memory per GPU, step time, tokens/s, MFU and the bound."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainlint.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS


def register(sub: argparse._SubParsersAction) -> None:
    from trainlint.commands.check import add_context_arguments, add_input_arguments

    p = sub.add_parser("estimate", help="estimate memory per GPU, step time, tokens/s and MFU of a run",
                       description="Estimate memory per GPU (by component and pipeline stage), time per step, "
                                   "tokens/s, MFU and what bounds the run. Inputs not in the config come from the "
                                   "flags, [tool.trainlint], or stated assumptions.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="config file(s)")
    add_context_arguments(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    add_input_arguments(p)
    p.add_argument("--tokens", metavar="N", help="tokens to train (e.g. 2T); overrides the config's run length")
    p.add_argument("--train-samples", type=int, metavar="N", help="samples to train (x sequence length = tokens)")
    p.add_argument("--price-per-gpu-hour", type=float, metavar="USD",
                   help="price per GPU-hour for the run cost (default: project `prices`/`price-per-gpu-hour`)")
    p.add_argument("--compare-gpus", nargs="?", const="all", metavar="IDS|all",
                   help="re-estimate on each catalog GPU (comma-separated ids, default all); table sorted by cost")
    p.add_argument("--same-throughput", action="store_true",
                   help="with --compare-gpus: size each GPU kind for the current tokens/s (whole nodes)")
    p.set_defaults(func=run)


def _value(v: object) -> float | None:
    raw = getattr(v, "value", v)
    try:
        return float(raw) if raw is not None and not isinstance(raw, bool) else None
    except (TypeError, ValueError):
        return None


def run_tokens(spec: object, est: object, args: argparse.Namespace) -> tuple[float | None, str]:
    """Tokens of the whole run and where they come from (flag, train-iters, train-samples)."""
    from trainlint.planning import parse_count
    if getattr(args, "tokens", None):
        return parse_count(args.tokens), "--tokens"
    if getattr(args, "train_samples", None):
        return args.train_samples * est.inputs.seq, "--train-samples x sequence length"
    run_sec = getattr(spec, "run", None)
    iters = _value(getattr(run_sec, "train_iters", None))
    if iters:
        return iters * est.tokens_per_step, "train iters x global batch x sequence length"
    samples = _value(getattr(run_sec, "train_samples", None))
    if samples:
        return samples * est.inputs.seq, "train samples x sequence length"
    return None, "no run length in the config (give --tokens or --train-samples)"


def price_for(gpu_id: str, args: argparse.Namespace, project_raw: dict | None) -> tuple[float | None, str]:
    """Price per GPU-hour: the flag, else the project's `prices` for this GPU kind, else `price-per-gpu-hour`."""
    if getattr(args, "price_per_gpu_hour", None):
        return float(args.price_per_gpu_hour), "--price-per-gpu-hour"
    raw = project_raw or {}
    prices = raw.get("prices")
    if isinstance(prices, dict) and _value(prices.get(gpu_id)):
        return _value(prices.get(gpu_id)), f"project prices.{gpu_id}"
    if _value(raw.get("price-per-gpu-hour")):
        return _value(raw.get("price-per-gpu-hour")), "project price-per-gpu-hour"
    return None, "no price"


def render_run(totals: dict) -> str:
    if totals.get("tokens") is None:
        return f"run: {totals['tokens_source']}\n"
    cost = (f"USD {totals['cost']:,.0f} at {totals['price_per_gpu_hour']:g}/GPU-hour ({totals['price_source']})"
            if totals.get("cost") is not None else "no price (--price-per-gpu-hour or project prices)")
    return (f"run: {totals['tokens']:.4g} tokens ({totals['tokens_source']})\n"
            f"  time to train   {totals['days']:.2f} days ({totals['time_s']:.4g} s)\n"
            f"  GPU-hours       {totals['gpus']} x {totals['time_s'] / 3600:.1f} h = {totals['gpu_hours']:,.0f}\n"
            f"  model FLOPs     {totals['model_flops']:.3e} (hardware {totals['hardware_flops']:.3e})\n"
            f"  cost            {cost}\n")


def run(args: argparse.Namespace) -> int:
    from trainlint.adapters import builtin_adapters
    from trainlint.checker import check_paths
    from trainlint.commands.check import parse_env
    from trainlint.config import ConfigError, discover
    from trainlint.estimator import ContextError, build_context, estimate
    from trainlint.estimator.render import render_json, render_text

    runs = [[p.strip() for p in spec.split(",") if p.strip()] for spec in args.run]
    missing = [p for p in args.paths if not Path(p).exists()] + [p for r in runs for p in r if not Path(p).is_file()]
    if missing:
        print(f"trainlint: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_ERROR
    try:
        environment = parse_env(args.env)
        project = discover(Path(args.paths[0]), getattr(args, "config", None), getattr(args, "isolated", False))
    except (ValueError, ConfigError) as exc:
        print(f"trainlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    results = check_paths(args.paths, builtin_adapters(), runs=project.runs + runs,
                          environment={**project.environment, **environment})
    outputs = []
    totals_by_id: dict[int, dict] = {}
    comparisons: list[tuple[str, list[dict]]] = []
    problems = False
    for result in results:
        errors = [d for d in result.diagnostics if d.severity.value == "error"]
        if result.internal_error or (not result.specs and errors):
            for d in errors:
                print(f"{result.path}: {d.code} {d.message}", file=sys.stderr)
            problems = True
            continue
        if not result.specs:
            if result.format is None:
                print(f"trainlint: {result.path}: not a DeepSpeed, Megatron-LM or GPT-NeoX config", file=sys.stderr)
                problems = True
            continue
        for spec in result.specs:
            try:
                ctx = build_context(spec, gpu=args.gpu, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
                                    model=args.model, project_raw=project.raw, project_path=project.path)
            except ContextError as exc:
                print(f"trainlint: error: {exc}", file=sys.stderr)
                return EXIT_ERROR
            est = estimate(spec, ctx)
            problems |= not est.ok
            outputs.append((result.path, est))
            if est.ok:
                totals_by_id[id(est)] = _totals(spec, est, args, ctx, project.raw)
                if getattr(args, "compare_gpus", None):
                    comparisons.append((result.path, compare_gpus(spec, est, args, project)))
    if comparisons:
        if args.format == "json":
            import json
            data = [{"path": p, "compare_gpus": rows} for p, rows in comparisons]
            sys.stdout.write(json.dumps(data[0] if len(data) == 1 else data, indent=2) + "\n")
        else:
            sys.stdout.write("\n".join(f"{p}:\n{render_comparison(rows)}" for p, rows in comparisons))
        return EXIT_CLEAN if outputs else EXIT_ERROR
    if args.format == "json":
        if not outputs:
            sys.stdout.write("[]\n")
        else:
            import json
            data = []
            for path, e in outputs:
                d = e.to_dict()
                d["path"] = path
                if id(e) in totals_by_id:
                    d["run"] = totals_by_id[id(e)]
                data.append(d)
            sys.stdout.write(json.dumps(data[0] if len(data) == 1 else data, indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(render_text(e) + (render_run(totals_by_id[id(e)]) if id(e) in totals_by_id else "")
                                   for _, e in outputs))
    if not outputs:
        return EXIT_ERROR
    return EXIT_FINDINGS if problems else EXIT_CLEAN


def _totals(spec: object, est: object, args: argparse.Namespace, ctx: object, project_raw: dict | None) -> dict:
    from trainlint.planning import run_totals
    tokens, source = run_tokens(spec, est, args)
    if tokens is None:
        return {"tokens": None, "tokens_source": source}
    gpu_id = getattr(est.inputs, "gpu_id", None) or getattr(getattr(est.inputs, "gpu", None), "id", None) or args.gpu or ""
    price, price_source = price_for(str(gpu_id), args, project_raw)
    d = run_totals(est, tokens, price).to_dict()
    d["tokens_source"] = source
    d["price_source"] = price_source
    return d


def compare_gpus(spec: object, base: object, args: argparse.Namespace, project: object) -> list[dict]:
    """Re-estimate `spec` on each catalog GPU. Same world size, or (--same-throughput) the GPUs needed for the
    current tokens/s: per-GPU tokens/s at the config's world size, scaled linearly and rounded up to whole
    nodes (an approximation: communication at the new size is not re-estimated)."""
    import math

    from trainlint.catalog import load_gpus
    from trainlint.estimator import ContextError, build_context, estimate
    catalog = load_gpus()
    ids = list(catalog) if args.compare_gpus in ("all", "") else [i.strip() for i in args.compare_gpus.split(",") if i.strip()]
    tokens, _ = run_tokens(spec, base, args)
    rows: list[dict] = []
    for gid in ids:
        row: dict = {"gpu": gid}
        try:
            ctx = build_context(spec, gpu=gid, nodes=args.nodes, gpus_per_node=args.gpus_per_node, model=args.model,
                                project_raw=project.raw, project_path=project.path)
            est = estimate(spec, ctx)
        except (ContextError, ValueError) as exc:
            row["error"] = str(exc)
            rows.append(row)
            continue
        if not est.ok:
            row["error"] = "cannot estimate: " + ", ".join(m.what if hasattr(m, "what") else str(m) for m in est.missing)
            rows.append(row)
            continue
        gpu = est.inputs.gpu
        price, price_source = price_for(gid, args, project.raw)
        gpus = int(est.inputs.world)
        tps = est.tokens_per_s
        if args.same_throughput:
            per_node = est.inputs.gpus_per_node or 8
            gpus = max(per_node, math.ceil(base.tokens_per_s / est.tokens_per_s_per_gpu / per_node) * per_node)
            tps = est.tokens_per_s_per_gpu * gpus
        time_s = tokens / tps if tokens else None
        hours = gpus * time_s / 3600 if time_s else None
        row.update({
            "name": gpu.name, "fits": est.fits,
            "memory_pct": 100 * est.worst_stage.total / est.capacity_bytes if hasattr(est.worst_stage, "total") else None,
            "gpus": gpus, "tokens_per_s": tps, "mfu": est.mfu, "bound": est.bound,
            "days": time_s / 86400 if time_s else None, "gpu_hours": hours,
            "price_per_gpu_hour": price, "price_source": price_source,
            "cost": hours * price if (hours and price) else None,
            "usd_per_tbps_hour": price / gpu.hbm_bandwidth_tbps if (price and gpu.hbm_bandwidth_tbps) else None,
        })
        rows.append(row)
    rows.sort(key=lambda r: ("error" in r, not r.get("fits", False), r.get("cost") is None,
                             r.get("cost") or 0, r.get("days") or float("inf")))
    return rows


def render_comparison(rows: list[dict]) -> str:
    head = f"{'gpu':<16} {'fits':>4} {'mem%':>6} {'gpus':>5} {'tokens/s':>10} {'MFU':>6} {'bound':<12} {'days':>8} {'cost':>14} {'$/TB/s.h':>9}"
    out = [head, "-" * len(head)]
    for r in rows:
        if "error" in r:
            out.append(f"{r['gpu']:<16} {r['error'][:90]}")
            continue
        mem = f"{r['memory_pct']:.0f}" if r.get("memory_pct") is not None else "?"
        days = f"{r['days']:.1f}" if r.get("days") is not None else "-"
        cost = f"USD {r['cost']:,.0f}" if r.get("cost") is not None else "no price"
        bw = f"{r['usd_per_tbps_hour']:.2f}" if r.get("usd_per_tbps_hour") is not None else "-"
        out.append(f"{r['gpu']:<16} {'yes' if r['fits'] else 'no':>4} {mem:>6} {r['gpus']:>5} {r['tokens_per_s']:>10,.0f} "
                   f"{r['mfu'] * 100:>5.1f}% {str(r['bound']):<12} {days:>8} {cost:>14} {bw:>9}")
    return "\n".join(out) + "\n"
