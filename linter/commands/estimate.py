"""``trainlint estimate PATH``: memory per GPU, step time, tokens/s, MFU and the bound."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainlint.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from trainlint.output.escape import printable, printable_lines


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
    p.add_argument("--micro-batch-size", type=int, metavar="N",
                   help="micro batch per GPU when the config does not state it (a Trainer's DeepSpeed JSON: "
                        "--per_device_train_batch_size); a value the config states wins")
    p.add_argument("--seq-length", type=int, metavar="N", help="sequence length when the config does not state it")
    p.add_argument("--grad-accum", type=int, metavar="N", help="gradient accumulation steps when the config does not state them")
    p.add_argument("--tokens", type=positive_count, metavar="N",
                   help="tokens to train (e.g. 2T, 300B, 1.5e12); overrides the config's run length")
    p.add_argument("--train-samples", type=positive_count, metavar="N", help="samples to train (x sequence length = tokens)")
    p.add_argument("--price-per-gpu-hour", type=positive_count, metavar="USD",
                   help="price per GPU-hour for the run cost (default: project `prices`/`price-per-gpu-hour`)")
    p.add_argument("--compare-gpus", nargs="?", const="all", metavar="IDS|all",
                   help="re-estimate on each catalog GPU (comma-separated ids, default all); table sorted by cost")
    p.add_argument("--same-throughput", action="store_true",
                   help="with --compare-gpus: size each GPU kind for the current tokens/s (whole nodes)")
    p.set_defaults(func=run)


def positive_count(text: str) -> float:
    """2T, 300B, 1.5e12, 2,000,000: a positive finite number (argparse reports anything else).
    The argument type of every count and price of estimate and plan."""
    from trainlint.planning import parse_count

    try:
        value = parse_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    from trainlint.commands.argtypes import COUNT_MAX, COUNT_MIN

    if not COUNT_MIN <= value <= COUNT_MAX:
        raise argparse.ArgumentTypeError(f"must be between {COUNT_MIN:g} and {COUNT_MAX:g}, got {text!r}")
    return value


def run_tokens(spec: object, est: object, args: argparse.Namespace) -> tuple[float | None, str]:
    """Tokens of the whole run and where they come from (flag, train-iters, train-samples)."""
    from trainlint.planning.inputs import spec_tokens

    if getattr(args, "tokens", None):
        return float(args.tokens), "--tokens"
    if getattr(args, "train_samples", None):
        return args.train_samples * est.inputs.seq, "--train-samples x sequence length"
    return spec_tokens(spec, tokens_per_step=est.tokens_per_step, seq=est.inputs.seq)


def price_for(gpu_id: str, args: argparse.Namespace, project_raw: dict | None) -> tuple[float | None, str]:
    """Price per GPU-hour: the flag, else the project's `prices` for this GPU kind, else `price-per-gpu-hour`."""
    from trainlint.planning.inputs import price_for as lookup

    return lookup(gpu_id, getattr(args, "price_per_gpu_hour", None), project_raw)


def render_run(totals: dict) -> str:
    if totals.get("tokens") is None:
        return printable(f"run: {totals['tokens_source']}") + "\n"
    cost = (f"USD {totals['cost']:,.0f} at {totals['price_per_gpu_hour']:g}/GPU-hour ({totals['price_source']})"
            if totals.get("cost") is not None else "no price (--price-per-gpu-hour or project prices)")
    per_param = f", {totals['tokens_per_param']:.1f} per parameter" if totals.get("tokens_per_param") else ""
    steps = ([f"  steps           {totals['steps']:,.0f} x {totals['tokens_per_step']:,.0f} tokens"]
             if totals.get("steps") else [])
    # The token and price sources can quote a config value or a path: one line each, escaped.
    return printable_lines([f"run: {totals['tokens']:.4g} tokens ({totals['tokens_source']}{per_param})",
                            *steps,
                            f"  time to train   {totals['days']:.2f} days ({totals['time_s']:.4g} s)",
                            f"  GPU-hours       {totals['gpus']} x {totals['time_s'] / 3600:.1f} h = {totals['gpu_hours']:,.0f}",
                            f"  model FLOPs     {totals['model_flops']:.3e} (6PD {totals['flops_6pd']:.3e}; hardware, recompute "
                            f"included, {totals['hardware_flops']:.3e})",
                            f"  cost            {cost}"]) + "\n"


def run(args: argparse.Namespace) -> int:
    from trainlint.adapters import builtin_adapters
    from trainlint.checker import check_paths
    from trainlint.commands.check import launch_environment
    from trainlint.config import ConfigError, discover
    from trainlint.estimator import ContextError, InvariantError, build_context, estimate
    from trainlint.estimator.render import render_text
    from trainlint.estimator.core import MissingInputs
    from trainlint.estimator.inputs import MissingInput
    from trainlint.estimator.sensitivity import with_sensitivity
    from trainlint.rules.estimation.scope import unmodelled

    runs = [[p.strip() for p in spec.split(",") if p.strip()] for spec in args.run]
    missing = [p for p in args.paths if not Path(p).exists()] + [p for r in runs for p in r if not Path(p).is_file()]
    if missing:
        print(printable(f"trainlint: error: no such file or directory: {', '.join(missing)}"), file=sys.stderr)
        return EXIT_ERROR
    try:
        environment = launch_environment(args)
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
    internal = False
    for result in results:
        errors = [d for d in result.diagnostics if d.severity.value == "error"]
        if result.internal_error or (not result.specs and errors):
            for d in errors:
                print(f"{printable(str(result.path))}: {d.code} {printable(d.message)}", file=sys.stderr)
            problems = True
            continue
        if not result.specs:
            if result.format is None:
                print(f"trainlint: {printable(str(result.path))}: not a DeepSpeed, Megatron-LM or GPT-NeoX config", file=sys.stderr)
                problems = True
            continue
        for spec in result.specs:
            try:
                ctx = build_context(spec, gpu=args.gpu, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
                                    model=args.model, vocab_size=args.vocab_size, micro_batch=args.micro_batch_size,
                                    seq_length=args.seq_length, grad_accum=args.grad_accum, project_raw=project.raw,
                                    project_path=project.path)
            except ContextError as exc:
                print(f"trainlint: error: {exc}", file=sys.stderr)
                return EXIT_ERROR
            gaps = unmodelled(spec)
            if gaps and not all(g.training for g in gaps):
                # an inference / evaluation / conversion entry point: no training estimate to give
                outputs.append((result.path, MissingInputs(spec.label or spec.path, [
                    MissingInput("entry_point", f"{g.setting}: {g.why}", "nothing to supply: this is not a training run")
                    for g in gaps])))
                problems = True
                continue
            if gaps:
                print(f"trainlint: {printable(str(spec.label or result.path))}: the estimator does not model this run ("
                      + "; ".join(f"{g.setting}: {g.why}" for g in gaps) + "); the figures describe a GPT decoder "
                      "of the same shape", file=sys.stderr)
            try:
                est = estimate(spec, ctx)
            except InvariantError as exc:  # an estimator bug: never print the broken number
                print(printable(f"{result.path}: TL999 internal error: {exc}"), file=sys.stderr)
                internal = True
                continue
            if est.ok:
                est = with_sensitivity(est)
            problems |= not est.ok
            outputs.append((result.path, est))
            if est.ok:
                totals_by_id[id(est)] = _totals(spec, est, args, ctx, project.raw)
                if getattr(args, "compare_gpus", None):
                    tokens, source = run_tokens(spec, est, args)
                    comparisons.append((result.path, {"tokens": tokens, "tokens_source": source,
                                                      "base_tokens_per_s": est.tokens_per_s,
                                                      "base_world_size": est.inputs.world,
                                                      "same_throughput": bool(args.same_throughput)},
                                        compare_gpus(spec, est, args, project)))
    if comparisons:
        if args.format == "json":
            import json
            data = [{"path": p, **head, "compare_gpus": rows} for p, head, rows in comparisons]
            sys.stdout.write(json.dumps(data[0] if len(data) == 1 else data, indent=2) + "\n")
        else:
            sys.stdout.write("\n".join(f"{printable(p)}:\n{render_comparison(rows, head)}" for p, head, rows in comparisons))
        return EXIT_CLEAN if outputs else EXIT_ERROR
    if args.format == "json":
        if not outputs:
            sys.stdout.write("[]\n")
        else:
            import json
            data = []
            for path, e in outputs:
                entry = e.to_dict()
                entry["path"] = path
                if id(e) in totals_by_id:
                    entry["run"] = totals_by_id[id(e)]
                data.append(entry)
            sys.stdout.write(json.dumps(data[0] if len(data) == 1 else data, indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(render_text(e) + (render_run(totals_by_id[id(e)]) if id(e) in totals_by_id else "")
                                   for _, e in outputs))
    if not outputs or internal:
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
    d["steps"] = tokens / est.tokens_per_step
    d["tokens_per_step"] = est.tokens_per_step
    d["tokens_per_param"] = tokens / est.num_params if est.num_params else None
    d["flops_6pd"] = 6.0 * est.num_params * tokens  # C = 6PD (Transformer Math 101), beside the estimator's per-layer count
    return d


def compare_gpus(spec: object, base: object, args: argparse.Namespace, project: object) -> list[dict]:
    """Re-estimate `spec` on each GPU kind (the catalog plus the project's custom GPUs): same world size, or
    (--same-throughput) the smallest cluster that keeps the layout valid and reaches the current tokens/s."""
    from trainlint.estimator import ContextError, build_context, estimate
    from trainlint.estimator.context import custom_gpus
    from trainlint.planning.sizing import usd_per_tbps_hour

    table = custom_gpus(project.raw, project.path)
    ids = list(table) if args.compare_gpus in ("all", "") else [i.strip() for i in args.compare_gpus.split(",") if i.strip()]
    tokens, _ = run_tokens(spec, base, args)
    rows: list[dict] = []
    for gid in ids:
        row: dict = {"gpu": gid}
        try:
            ctx = build_context(spec, gpu=gid, nodes=args.nodes, gpus_per_node=args.gpus_per_node, model=args.model,
                                vocab_size=args.vocab_size, micro_batch=args.micro_batch_size,
                                seq_length=args.seq_length, grad_accum=args.grad_accum,
                                project_raw=project.raw, project_path=project.path)
            est = estimate(spec, ctx)
        except (ContextError, ValueError, RuntimeError) as exc:  # RuntimeError: InvariantError (an estimator bug)
            row["error"] = str(exc)
            rows.append(row)
            continue
        if not est.ok:
            row["error"] = "cannot estimate: " + ", ".join(m.what if hasattr(m, "what") else str(m) for m in est.missing)
            rows.append(row)
            continue
        row["gpu"] = est.inputs.gpu.id
        sizing = None
        if args.same_throughput:
            est, sizing = size_for_throughput(est, base.tokens_per_s)
        gpu = est.inputs.gpu
        price, price_source = price_for(gpu.id, args, project.raw)
        gpus = int(est.inputs.world)
        tps = est.tokens_per_s
        time_s = tokens / tps if tokens else None
        hours = gpus * time_s / 3600 if time_s else None
        row.update({
            "name": gpu.name, "fits": est.fits,
            "memory_pct": 100 * est.worst_stage.total / est.capacity_bytes,
            "gpus": gpus, "tokens_per_s": tps, "mfu": est.mfu, "bound": est.bound,
            "days": time_s / 86400 if time_s else None, "gpu_hours": hours,
            "price_per_gpu_hour": price, "price_source": price_source,
            "cost": hours * price if (hours and price) else None,
            "cost_per_hour": gpus * price if price else None,
            "usd_per_tbps_hour": usd_per_tbps_hour(price, gpu.hbm_bandwidth_tbps),
        })
        if sizing is not None:
            row["sizing"] = sizing
        rows.append(row)
    rows.sort(key=lambda r: ("error" in r, not r.get("fits", False), r.get("cost") is None,
                             r.get("cost") or 0, r.get("days") or float("inf")))
    return rows


def size_for_throughput(est: object, target_tokens_per_s: float) -> tuple[object, str]:
    """The estimate on the smallest cluster that reaches ``target_tokens_per_s`` with the same layout: whole
    nodes, DP an integer, the global batch kept with a whole number of accumulation steps (Hodge 2025:
    G = ceil(R_target / r_gpu), but every candidate size is re-estimated, communication included).
    Returns the estimate and a sentence saying how the size was chosen."""
    import dataclasses

    from trainlint.estimator.core import estimate_inputs
    from trainlint.planning.sizing import valid_world_sizes

    i = est.inputs
    model_parallel = i.tp * i.pp * i.cp
    units = i.global_batch // i.micro if i.micro and i.global_batch % i.micro == 0 else None
    need = target_tokens_per_s / est.tokens_per_s_per_gpu
    last = None
    for n, world in enumerate(valid_world_sizes(need, gpus_per_node=i.gpus_per_node, model_parallel=model_parallel,
                                                 batch_units=units)):
        dp = world // model_parallel
        accum = units // dp if units else i.grad_accum
        last = estimate_inputs(dataclasses.replace(i, world=world, dp=dp, grad_accum=accum), est.spec_label)
        if last.tokens_per_s >= target_tokens_per_s * (1 - 1e-9):
            return last, (f"{world} GPUs = DP {dp} x TP {i.tp} x PP {i.pp} x CP {i.cp}, micro batch {i.micro} x "
                          f"accumulation {accum}: the smallest valid size reaching {target_tokens_per_s:,.0f} tokens/s")
        if n >= 256:
            break
    if last is not None:
        return last, (f"no valid size reaches {target_tokens_per_s:,.0f} tokens/s with global batch {i.global_batch}; "
                      f"the largest tried: {last.inputs.world} GPUs")
    limit = f"at most {units * model_parallel} GPUs (DP <= global batch {i.global_batch} / micro batch {i.micro})" \
        if units else f"a global batch {i.global_batch} that micro batch {i.micro} does not divide"
    return est, (f"{target_tokens_per_s:,.0f} tokens/s needs about {need:,.0f} GPUs, but this layout allows {limit} "
                 f"in whole nodes of {i.gpus_per_node}: shown at the config's own size")


def render_comparison(rows: list[dict], about: dict | None = None) -> str:
    out = []
    if about is not None:
        if about["tokens"]:
            out.append(f"{about['tokens']:.4g} tokens ({about['tokens_source']}); "
                       + (f"each GPU kind sized for {about['base_tokens_per_s']:,.0f} tokens/s"
                          if about["same_throughput"] else f"{about['base_world_size']} GPUs each")
                       + "; sorted by cost to train")
        else:
            out.append(f"{about['tokens_source']}: no time or cost to train")
    head = f"{'gpu':<16} {'fits':>4} {'mem%':>6} {'gpus':>5} {'tokens/s':>10} {'MFU':>6} {'bound':<12} {'days':>8} {'cost':>14} {'$/TB/s.h':>9}"
    out += [head, "-" * len(head)]
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
    sizings = [f"  {r['gpu']}: {r['sizing']}" for r in rows if r.get("sizing")]
    if sizings:
        out += ["sizing:", *sizings]
    return printable_lines(out) + "\n"
