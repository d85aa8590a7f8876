"""``trainlint plan``: the budget / time / MFU triangle without a config.

C = 6 * P * D; time = C / (gpus * peak * MFU); cost = gpus * hours * price per GPU-hour.
Any two of days, budget and MFU determine the third (and the GPU count when not given).
Without ``--tokens`` the run is compute-optimal, D = 20 P (Hoffmann et al. 2022; "Transformer Math 101").
``--target-tokens-per-s`` sizes the cluster for a throughput (G = ceil(R / r_gpu), as Hodge 2025, "Sizing AI
Training by Cost per Memory Bandwidth"); ``--compare-gpus`` solves the same plan on each GPU kind, with the cost
per memory bandwidth of the same paper.
"""

from __future__ import annotations

from trainlint.commands.argtypes import int_at_most

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainlint.commands.estimate import positive_count
from trainlint.planning.gpu_plan import (Model, PlanInputError, PlanRequest, Solved, by_cost, model_from_count,
                                         model_from_preset, model_from_shape, si as _si, solve_on_gpu, target_days)
from trainlint.project.session import Session, SessionOptions, open_session
from trainlint.core.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from trainlint.core.escape import printable, printable_lines

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.presets.catalog import GPU


def _mfu(text: str) -> float:
    s = text.strip()
    try:
        v = float(s[:-1]) / 100 if s.endswith("%") else float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r} (0.45 or 45%)") from None
    if v > 1:  # "45" means 45 %
        v /= 100
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError("MFU must be in (0, 1] or a percentage")
    return v


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="solve the budget / time / MFU triangle for a model and token count",
                       description="Training FLOPs C = 6*P*D; time = C / (GPUs * peak * MFU); cost = GPU-hours * "
                                   "price. Give two of --days (or --target-tokens-per-s), --budget, --mfu; the rest "
                                   "(and --gpus if absent) is solved. Without --tokens: compute-optimal D = 20 P.")
    p.add_argument("paths", nargs="*", metavar="CONFIG",
                   help="the run's config (Megatron script, DeepSpeed JSON, NeoX YAML): the plan is sized with the "
                        "estimator, as `trainlint estimate` (its layout's GPUs, step time and memory); without "
                        "one, 6PD arithmetic at a given MFU")
    p.add_argument("--nodes", type=int_at_most(1_000_000), metavar="N", help="with a CONFIG: number of nodes")
    p.add_argument("--gpus-per-node", type=int_at_most(1024), metavar="N", help="with a CONFIG: GPUs per node")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--model", metavar="PRESET|PATH", help="model preset id or a local HF config.json")
    g.add_argument("--params", metavar="N", help="parameter count, e.g. 30B")
    g.add_argument("--layers", type=int_at_most(1_000_000), metavar="L", help="with --hidden (and --vocab): P = 12 L H^2 + 2 V H")
    p.add_argument("--hidden", type=int_at_most(10_000_000), metavar="H", help="hidden size, with --layers")
    p.add_argument("--vocab", type=int_at_most(1_000_000_000), default=0, metavar="V", help="vocabulary size, with --layers (default 0: "
                                                                      "embeddings not counted)")
    p.add_argument("--tokens", metavar="N", help="training tokens, e.g. 2T or 600B (default: compute-optimal 20 x P)")
    p.add_argument("--gpu", metavar="ID", help="GPU catalog id (default: the project config's gpu, else h100-sxm)")
    p.add_argument("--dtype", default="bf16", help="dtype of the peak (default bf16)")
    p.add_argument("--gpus", type=int_at_most(100_000_000), metavar="N", help="number of GPUs (solved when absent)")
    p.add_argument("--round-gpus", type=int_at_most(1_000_000), default=8, metavar="M",
                   help="round a solved GPU count to a multiple of M (default 8, whole nodes)")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--days", type=positive_count, metavar="D")
    when.add_argument("--target-tokens-per-s", type=positive_count, metavar="R",
                      help="throughput to size for (GPUs = ceil(target / tokens/s per GPU)); the same as --days tokens / R")
    p.add_argument("--budget", type=positive_count, metavar="USD", help="e.g. 2000000 or 2M")
    p.add_argument("--mfu", type=_mfu, metavar="F", help="0.45 or 45%%")
    p.add_argument("--price-per-gpu-hour", type=positive_count, metavar="USD",
                   help="default: prices.<gpu> or price-per-gpu-hour in the project config")
    p.add_argument("--compare-gpus", nargs="?", const="all", metavar="IDS|all",
                   help="solve the same plan on each GPU kind (comma-separated ids, default all), sorted by cost")
    p.add_argument("--config", metavar="FILE", help="project config to use instead of searching for one")
    p.add_argument("--isolated", action="store_true", help="ignore every project config file")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def _bytes(x: float) -> str:
    """Decimal units, as the planning literature writes memory (1 GB = 1e9 bytes)."""
    for f, s in ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB")):
        if abs(x) >= f:
            return f"{x / f:.3g} {s}"
    return f"{x:.3g} B"


def _model(args: argparse.Namespace, session: Session) -> Model:
    if args.model:
        return model_from_preset(session.find_model(args.model))
    if args.layers is not None:
        return model_from_shape(args.layers, args.hidden, args.vocab)
    return model_from_count(args.params)


def _request(args: argparse.Namespace) -> PlanRequest:
    return PlanRequest(dtype=args.dtype, gpus=args.gpus, days=args.days, target_tokens_per_s=args.target_tokens_per_s,
                       budget=args.budget, mfu=args.mfu, round_gpus=args.round_gpus)


def _solve_one(gpu: Any, model: Model, tokens: float, args: argparse.Namespace, session: Session) -> Solved:
    from trainlint.planning.inputs import price_for

    price, source = price_for(gpu.id, args.price_per_gpu_hour, session.project)
    return solve_on_gpu(gpu, model, tokens, _request(args), price, source)


def run(args: argparse.Namespace) -> int:
    """:func:`_run`, with arithmetic that still fails on extreme inputs (a product of values each
    in range) reported as a usage error instead of a traceback."""
    try:
        return _run(args)
    except (ArithmeticError, ValueError) as exc:
        print(f"trainlint plan: the values given are out of the range trainlint can plan with "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)
        return EXIT_ERROR


def _run(args: argparse.Namespace) -> int:
    from trainlint.presets.catalog import CatalogError
    from trainlint.files.config_files import ConfigError
    from trainlint.estimator.context import ContextError
    from trainlint.planning import PlanError, parse_count
    from trainlint.planning.sizing import compute_optimal_tokens

    if args.paths:
        return _run_layout(args)
    if not (args.model or args.params or args.layers is not None):
        print("trainlint plan: give the run's CONFIG, or one of --model, --params, --layers", file=sys.stderr)
        return EXIT_ERROR
    if args.nodes is not None or args.gpus_per_node is not None:
        print("trainlint plan: --nodes / --gpus-per-node size a CONFIG's layout; without one use --gpus", file=sys.stderr)
        return EXIT_ERROR
    try:
        # plan reads no config file: the session gives the project's GPUs, prices and the plugin
        # GPUs and model presets (installed plugins; a project's local ones under the same trust rule)
        session = open_session(SessionOptions(config=args.config, isolated=args.isolated), Path.cwd())
        model = _model(args, session)
        if args.tokens:
            tokens, tokens_note = parse_count(args.tokens), ""
            if tokens <= 0:
                raise PlanInputError("--tokens must be > 0")
        else:
            tokens = compute_optimal_tokens(model.params)
            tokens_note = f"20 x {_si(model.params)} = {_si(tokens)} (compute-optimal D = 20 P; --tokens to change)"
        from trainlint.commands.argtypes import COUNT_MAX, COUNT_MIN

        for what, value in (("the parameter count", model.params), ("--tokens", tokens)):
            if not COUNT_MIN <= value <= COUNT_MAX:
                raise PlanInputError(f"{what} must be between {COUNT_MIN:g} and {COUNT_MAX:g}, got {value:g}")
        if args.gpus is not None and args.gpus < 1:
            raise PlanInputError("--gpus must be >= 1")
        if args.round_gpus < 1:
            raise PlanInputError("--round-gpus must be >= 1")
        gpu_name = args.gpu or session.project.estimation.gpu or "h100-sxm"
        if args.compare_gpus:
            ids = list(session.gpus) if args.compare_gpus == "all" else \
                [i.strip() for i in args.compare_gpus.split(",") if i.strip()]
            rows: list[Solved | tuple[GPU, str]] = []  # a solved plan, or the GPU and why it has none
            for gid in ids:
                gpu = session.find_gpu(gid)
                try:
                    rows.append(_solve_one(gpu, model, tokens, args, session))
                except PlanError as exc:
                    rows.append((gpu, str(exc)))
            return _render_comparison(rows, model, tokens, tokens_note, args)
        one = _solve_one(session.find_gpu(str(gpu_name)), model, tokens, args, session)
    except (PlanError, PlanInputError, CatalogError, ContextError, ConfigError, ValueError) as exc:
        print(printable(f"trainlint plan: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    if args.format == "json":
        d = one.to_dict()
        d.update(model=model.label, total_params=model.total, dtype=args.dtype, tokens_source=tokens_note or "--tokens")
        print(json.dumps(d, indent=2))
    else:
        print(_render_one(one, model, tokens, tokens_note, args))
    return EXIT_FINDINGS if one.infeasible else EXIT_CLEAN


def _run_layout(args: argparse.Namespace) -> int:
    """``trainlint plan CONFIG``: the run as ``trainlint estimate`` reads and estimates it (same session,
    same context, same estimator), planned over its tokens: the days, GPU-hours and cost follow from the
    estimated step time, the memory verdict from the estimated memory per GPU."""
    from trainlint.presets.catalog import CatalogError
    from trainlint.files.config_files import ConfigError
    from trainlint.estimator import ContextError, InvariantError
    from trainlint.planning import PlanError
    from trainlint.planning.compare import RunLength, run_tokens
    from trainlint.planning.gpu_plan import solve_from_estimate
    from trainlint.planning.inputs import price_for
    from trainlint.project.session import EstimateOptions, SessionOptions

    if args.params or args.layers is not None or args.compare_gpus:
        print("trainlint plan: with a CONFIG the model and layout come from it (--params, --layers and "
              "--compare-gpus are for planning without one; `trainlint estimate --compare-gpus` compares GPUs "
              "for a config)", file=sys.stderr)
        return EXIT_ERROR
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(printable(f"trainlint plan: no such file or directory: {', '.join(missing)}"), file=sys.stderr)
        return EXIT_ERROR
    options = SessionOptions(config=args.config, isolated=args.isolated,
                             estimate=EstimateOptions(gpu=args.gpu, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
                                                      model=args.model))
    try:
        session = open_session(options, Path(args.paths[0]))
        runs = [(spec, session.context(spec)) for result in session.check_paths(args.paths) for spec in result.specs]
        if len(runs) != 1:
            print(f"trainlint plan: {len(runs)} training runs read from {', '.join(args.paths)}; plan one run at a time",
                  file=sys.stderr)
            return EXIT_ERROR
        spec, ctx = runs[0]
        est = session.estimate(spec, ctx)
        if not est.ok:
            what = "; ".join(f"{m.field}: {m.how}" for m in est.missing)
            print(printable(f"trainlint plan: the run cannot be estimated: {what}"), file=sys.stderr)
            return EXIT_ERROR
        tokens, source = run_tokens(spec, est, RunLength(tokens=parse_count_arg(args.tokens)))
        if tokens is None:
            tokens, source = 20.0 * est.num_params, (f"20 x {_si(est.num_params)} = {_si(20.0 * est.num_params)} "
                                                     "(compute-optimal D = 20 P; --tokens to change)")
        price, price_source = price_for(est.inputs.gpu.id, args.price_per_gpu_hour, session.project)
        one = solve_from_estimate(est, tokens, _request(args), price, price_source)
    except (PlanError, PlanInputError, CatalogError, ContextError, ConfigError, InvariantError, ValueError) as exc:
        print(printable(f"trainlint plan: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    model = Model(float(est.num_params), float(est.num_params), spec.label or args.paths[0])
    note = "" if source == "--tokens" else source
    if args.format == "json":
        d = one.to_dict()
        d.update(model=model.label, total_params=model.total, dtype=est.inputs.dtype, tokens_source=source)
        print(json.dumps(d, indent=2))
    else:
        print(_render_one(one, model, tokens, note, args))
    return EXIT_FINDINGS if one.infeasible else EXIT_CLEAN


def parse_count_arg(text: str | None) -> float | None:
    from trainlint.planning import parse_count

    if not text:
        return None
    value = parse_count(text)
    if value <= 0:
        raise PlanInputError("--tokens must be > 0")
    return value


def _render_one(s: Solved, model: Model, tokens: float, tokens_note: str, args: argparse.Namespace) -> str:
    from trainlint.planning.sizing import static_bytes_per_param, usd_per_tbps_hour

    plan, gpu, peak_t = s.plan, s.gpu, s.peak_t
    params = model.params
    secs = plan.days * 86400
    head = f"plan: {_si(params)} parameters" + (f" ({model.note})" if model.note else "")
    out = [f"{head}, {_si(tokens)} tokens, {gpu.name} ({args.dtype} peak {peak_t:g} TFLOP/s)",
           f"  basis           {s.basis}"]
    if tokens_note:
        out.append(f"  tokens          {tokens_note}")
    out += [f"  training FLOPs  C = 6 x {_si(params)} x {_si(tokens)} = {plan.flops:.3e}",
            f"  tokens/param    {plan.tokens_per_param:.1f} (compute-optimal about 20)"]
    if args.target_tokens_per_s:
        out.append(f"  target          {_si(tokens)} tokens / {args.target_tokens_per_s:,.0f} tokens/s = "
                   f"{target_days(tokens, args.target_tokens_per_s):.2f} days")
    if plan.gpus_from_budget is not None:
        out.append(f"  GPUs by budget  {plan.budget_limit:,.0f} / ({plan.price_per_gpu_hour:g} x 24 x {plan.days:g}) = "
                   f"{plan.gpus_from_budget:.1f} -> {plan.gpus}" + ("" if "gpus" in plan.solved else " (given)"))
    else:
        out.append(f"  GPUs            {plan.gpus}" + (" (solved)" if "gpus" in plan.solved else ""))
    out.append(f"  time            {plan.days:.2f} days = {secs:.4g} s"
               + (f" (limit {plan.days_limit:g} days)" if plan.days_limit is not None else ""))
    out.append(f"  required FLOP/s C / time = {plan.required_flops_per_s:.3e}")
    out.append(f"  peak FLOP/s     {plan.gpus} x {peak_t:g}e12 = {plan.gpus * plan.peak_flops_per_gpu:.3e}")
    out.append(f"  MFU             {plan.mfu * 100:.1f}%" + (" (required)" if "mfu" in plan.solved else "")
               + (" (estimated)" if s.estimate is not None else ""))
    out.append(f"  tokens/s        {s.per_gpu_tokens_per_s:,.0f} per GPU x {plan.gpus} = "
               f"{s.per_gpu_tokens_per_s * plan.gpus:,.0f}")
    if s.estimate is not None:
        e = s.estimate
        out.append(f"  memory          {e.worst_stage.total / 2**30:.1f} of {e.capacity_bytes / 2**30:.1f} GiB per GPU "
                   f"(estimated, worst pipeline stage {e.worst_stage.stage})")
    else:
        bpp = static_bytes_per_param()
        out.append(f"  static memory   {bpp:g} B x {_si(model.total)} = {_bytes(bpp * model.total)}: "
                   f"at least {s.static_gpus} x {gpu.memory_gb:g} GB GPUs before activations")
    out.append(f"  GPU-hours       {plan.gpus} x {secs / 3600:.1f} h = {plan.gpu_hours:,.0f}")
    if plan.budget is not None and plan.price_per_gpu_hour is not None:  # a budget is priced: both or neither
        bw = usd_per_tbps_hour(plan.price_per_gpu_hour, gpu.hbm_bandwidth_tbps)
        out.append(f"  cost            {plan.gpu_hours:,.0f} x {plan.price_per_gpu_hour:g} = USD {plan.budget:,.0f}"
                   + (f" (budget USD {plan.budget_limit:,.0f})" if plan.budget_limit else "")
                   + ("" if s.price_source == "--price-per-gpu-hour" else f" [price: {s.price_source}]"))
        out.append(f"  per hour        {plan.gpus} x {plan.price_per_gpu_hour:g} = USD {plan.gpus * plan.price_per_gpu_hour:,.2f}"
                   + (f"; USD {bw:.2f} per TB/s-hour of HBM" if bw is not None else ""))
    else:
        out.append("  cost            no price (--price-per-gpu-hour, or prices in the project config)")
    out.extend(f"  note            {n}" for n in s.notes)
    return printable_lines(out)


def _render_comparison(rows: list, model: Model, tokens: float, tokens_note: str, args: argparse.Namespace) -> int:
    solved = [r for r in rows if isinstance(r, Solved)]
    failed = [r for r in rows if not isinstance(r, Solved)]
    solved = by_cost(solved)
    if args.format == "json":
        data = {"model": model.label, "params": model.params, "total_params": model.total, "tokens": tokens,
                "tokens_source": tokens_note or "--tokens",
                "compare_gpus": [s.to_dict() for s in solved] + [{"gpu": g.id, "error": e} for g, e in failed]}
        print(json.dumps(data, indent=2))
        return EXIT_CLEAN if solved else EXIT_ERROR
    given = ", ".join(x for x in (
        f"{args.days:g} days" if args.days else "",
        f"{args.target_tokens_per_s:,.0f} tokens/s" if args.target_tokens_per_s else "",
        f"budget USD {args.budget:,.0f}" if args.budget else "",
        f"MFU {args.mfu:.1%}" if args.mfu else "",
        f"{args.gpus} GPUs" if args.gpus else "") if x)
    out = [f"plan: {_si(model.params)} parameters, {_si(tokens)} tokens" + (" (compute-optimal 20 x P)" if tokens_note else "")
           + f", {given}"]
    head = (f"{'gpu':<12} {'peak TF':>8} {'GPUs':>6} {'tok/s/GPU':>10} {'MFU':>6} {'days':>8} {'GPU-hours':>11} "
            f"{'$/GPU-h':>8} {'$/hour':>10} {'cost':>14} {'$/TB/s.h':>9}")
    out += [head, "-" * len(head)]
    for s in solved:
        p = s.plan
        d = s.to_dict()
        price = f"{p.price_per_gpu_hour:g}" if p.price_per_gpu_hour else "-"
        per_hour = f"{d['cost_per_hour']:,.2f}" if d["cost_per_hour"] else "-"
        cost = f"USD {p.budget:,.0f}" if p.budget is not None else "no price"
        bw = f"{d['usd_per_tbps_hour']:.2f}" if d["usd_per_tbps_hour"] is not None else "-"
        out.append(f"{s.gpu.id:<12} {s.peak_t:>8g} {p.gpus:>6} {s.per_gpu_tokens_per_s:>10,.1f} {p.mfu * 100:>5.1f}% "
                   f"{p.days:>8.1f} {p.gpu_hours:>11,.0f} {price:>8} {per_hour:>10} {cost:>14} {bw:>9}"
                   + ("  " + "; ".join(s.notes) if s.notes else ""))
    out.extend(f"{g.id:<12} {e}" for g, e in failed)
    print(printable_lines(out))
    return EXIT_CLEAN if solved else EXIT_ERROR
