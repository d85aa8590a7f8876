"""``trainlint plan``: the budget / time / MFU triangle without a config.

C = 6 * P * D; time = C / (gpus * peak * MFU); cost = gpus * hours * price per GPU-hour.
Any two of days, budget and MFU determine the third (and the GPU count when not given).
Without ``--tokens`` the run is compute-optimal, D = 20 P (Hoffmann et al. 2022; "Transformer Math 101"). ``--target-tokens-per-s``
sizes the cluster for a throughput (G = ceil(R / r_gpu), as Hodge 2025, "Sizing AI Training by Cost per Memory Bandwidth"); ``--compare-gpus`` solves the
same plan on each GPU kind, with the cost per memory bandwidth of the same paper.
"""

from __future__ import annotations

from trainlint.commands.argtypes import int_at_most

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainlint.commands.estimate import positive_count
from trainlint.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from trainlint.output.escape import printable, printable_lines


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
    g = p.add_mutually_exclusive_group(required=True)
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


def _si(x: float, unit: str = "") -> str:
    for f, s in ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= f:
            return f"{x / f:.3g}{s}{unit}"
    return f"{x:.3g}{unit}"


def _bytes(x: float) -> str:
    """Decimal units, as the planning literature writes memory (1 GB = 1e9 bytes)."""
    for f, s in ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB")):
        if abs(x) >= f:
            return f"{x / f:.3g} {s}"
    return f"{x:.3g} B"


@dataclass
class Model:
    params: float  # active parameters: the FLOPs of a token (6 P)
    total: float  # all parameters: the memory (16 bytes each)
    label: str
    note: str = ""


@dataclass
class Solved:
    """One GPU kind's plan and the figures derived from it."""

    gpu: Any
    peak_t: float
    plan: Any
    price_source: str
    static_gpus: int
    notes: list[str] = field(default_factory=list)

    @property
    def per_gpu_tokens_per_s(self) -> float:
        from trainlint.planning.sizing import per_gpu_tokens_per_s

        return per_gpu_tokens_per_s(self.plan.params, self.plan.peak_flops_per_gpu, self.plan.mfu)

    @property
    def infeasible(self) -> bool:
        return self.plan.mfu > 1.0 or self.plan.over_budget or self.plan.over_days or self.plan.gpus < self.static_gpus

    def to_dict(self) -> dict[str, Any]:
        from trainlint.planning.sizing import usd_per_tbps_hour

        d = self.plan.to_dict()
        price = self.plan.price_per_gpu_hour
        d.update(gpu=self.gpu.id, name=self.gpu.name, peak_tflops=self.peak_t, price_source=self.price_source,
                 tokens_per_s=self.per_gpu_tokens_per_s * self.plan.gpus,
                 tokens_per_s_per_gpu=self.per_gpu_tokens_per_s,
                 cost_per_hour=self.plan.gpus * price if price else None,
                 usd_per_tbps_hour=usd_per_tbps_hour(price, self.gpu.hbm_bandwidth_tbps),
                 hbm_bandwidth_tbps=self.gpu.hbm_bandwidth_tbps,
                 min_gpus_for_static_memory=self.static_gpus, infeasible=self.infeasible, notes=self.notes)
        return d


class PlanInputError(ValueError):
    pass


def _model(args: argparse.Namespace) -> Model:
    from trainlint.planning import parse_count

    if args.model:
        from trainlint.estimator.context import resolve_model
        from trainlint.provenance import Origin

        preset = resolve_model(args.model, Origin.CLI).value
        count = preset.params()
        moe = count.active != count.total
        return Model(float(count.active), float(count.total), preset.id,
                     f"{_si(count.active)} active of {_si(count.total)}" if moe else "")
    if args.layers is not None:
        if not args.hidden or args.layers < 1 or args.hidden < 1 or args.vocab < 0:
            raise PlanInputError("--layers needs --hidden (positive), and --vocab must not be negative")
        params = 12.0 * args.layers * args.hidden ** 2 + 2.0 * args.vocab * args.hidden
        note = f"12 x {args.layers} x {args.hidden}^2 + 2 x {args.vocab} x {args.hidden}"
        return Model(params, params, f"{_si(params)}", note)
    try:
        params = parse_count(args.params)
    except ValueError as exc:
        raise PlanInputError(f"--params: {exc}") from None
    if params <= 0:
        raise PlanInputError("--params must be > 0")
    return Model(params, params, _si(params))


def _solve_one(gpu: Any, model: Model, tokens: float, args: argparse.Namespace, raw: dict) -> Solved:
    from trainlint.planning import PlanError, solve
    from trainlint.planning.budget import SECONDS_PER_DAY
    from trainlint.planning.inputs import price_for
    from trainlint.planning.sizing import min_gpus_for_static_memory, mfu_verdict

    peak_t = gpu.peak_tflops(args.dtype)
    if not peak_t:
        raise PlanError(f"{gpu.id} has no {args.dtype} peak in the catalog")
    price, source = price_for(gpu.id, args.price_per_gpu_hour, raw)
    days = args.days
    if args.target_tokens_per_s:
        days = tokens / args.target_tokens_per_s / SECONDS_PER_DAY
    plan = solve(params=model.params, tokens=tokens, peak_flops_per_gpu=peak_t * 1e12, gpus=args.gpus, days=days,
                 budget=args.budget, mfu=args.mfu, price_per_gpu_hour=price, gpu_multiple=args.round_gpus)
    static = min_gpus_for_static_memory(model.total, gpu.memory_bytes)
    notes = []
    verdict = mfu_verdict(plan.mfu) if "mfu" in plan.solved else None
    if verdict:
        notes.append(verdict)
    if plan.over_budget:
        notes.append(f"over budget: USD {plan.budget:,.0f} > USD {plan.budget_limit:,.0f}")
    if plan.over_days:
        notes.append(f"over time: {plan.days:.1f} days > {plan.days_limit:g}")
    if plan.gpus < static:
        notes.append(f"too few GPUs: {plan.gpus} < {static} needed to hold weights, gradients and Adam states")
    return Solved(gpu, peak_t, plan, source, static, notes)


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
    from trainlint.catalog import CatalogError
    from trainlint.config import ConfigError, discover
    from trainlint.estimator.context import ContextError, custom_gpus
    from trainlint.planning import PlanError, parse_count
    from trainlint.planning.sizing import compute_optimal_tokens

    try:
        project = discover(Path.cwd(), args.config, args.isolated)
        table = custom_gpus(project.raw, project.path)
        model = _model(args)
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
        gpu_name = args.gpu or project.raw.get("gpu") or "h100-sxm"
        if args.compare_gpus:
            ids = list(table) if args.compare_gpus == "all" else [i.strip() for i in args.compare_gpus.split(",") if i.strip()]
            rows = []
            for gid in ids:
                from trainlint.catalog import find_gpu

                gpu = find_gpu(gid, table)
                try:
                    rows.append(_solve_one(gpu, model, tokens, args, project.raw))
                except PlanError as exc:
                    rows.append((gpu, str(exc)))
            return _render_comparison(rows, model, tokens, tokens_note, args)
        from trainlint.catalog import find_gpu

        one = _solve_one(find_gpu(str(gpu_name), table), model, tokens, args, project.raw)
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


def _render_one(s: Solved, model: Model, tokens: float, tokens_note: str, args: argparse.Namespace) -> str:
    from trainlint.planning.sizing import STATIC_BYTES_PER_PARAM, usd_per_tbps_hour

    plan, gpu, peak_t = s.plan, s.gpu, s.peak_t
    params = model.params
    secs = plan.days * 86400
    head = f"plan: {_si(params)} parameters" + (f" ({model.note})" if model.note else "")
    out = [f"{head}, {_si(tokens)} tokens, {gpu.name} ({args.dtype} peak {peak_t:g} TFLOP/s)"]
    if tokens_note:
        out.append(f"  tokens          {tokens_note}")
    out += [f"  training FLOPs  C = 6 x {_si(params)} x {_si(tokens)} = {plan.flops:.3e}",
            f"  tokens/param    {plan.tokens_per_param:.1f} (compute-optimal about 20)"]
    if args.target_tokens_per_s:
        target_days = tokens / args.target_tokens_per_s / 86400
        out.append(f"  target          {_si(tokens)} tokens / {args.target_tokens_per_s:,.0f} tokens/s = "
                   f"{target_days:.2f} days")
    if plan.gpus_from_budget is not None:
        out.append(f"  GPUs by budget  {plan.budget_limit:,.0f} / ({plan.price_per_gpu_hour:g} x 24 x {plan.days:g}) = "
                   f"{plan.gpus_from_budget:.1f} -> {plan.gpus}" + ("" if "gpus" in plan.solved else " (given)"))
    else:
        out.append(f"  GPUs            {plan.gpus}" + (" (solved)" if "gpus" in plan.solved else ""))
    out.append(f"  time            {plan.days:.2f} days = {secs:.4g} s"
               + (f" (limit {plan.days_limit:g} days)" if plan.days_limit is not None else ""))
    out.append(f"  required FLOP/s C / time = {plan.required_flops_per_s:.3e}")
    out.append(f"  peak FLOP/s     {plan.gpus} x {peak_t:g}e12 = {plan.gpus * plan.peak_flops_per_gpu:.3e}")
    out.append(f"  MFU             {plan.mfu * 100:.1f}%" + (" (required)" if "mfu" in plan.solved else ""))
    out.append(f"  tokens/s        {s.per_gpu_tokens_per_s:,.0f} per GPU x {plan.gpus} = "
               f"{s.per_gpu_tokens_per_s * plan.gpus:,.0f}")
    out.append(f"  static memory   {STATIC_BYTES_PER_PARAM} B x {_si(model.total)} = {_bytes(STATIC_BYTES_PER_PARAM * model.total)}: "
               f"at least {s.static_gpus} x {gpu.memory_gb:g} GB GPUs before activations")
    out.append(f"  GPU-hours       {plan.gpus} x {secs / 3600:.1f} h = {plan.gpu_hours:,.0f}")
    if plan.budget is not None:
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
    # Cheapest first (equal costs: the lowest required MFU, the easiest plan); plans without a price by
    # time; impossible ones last.
    solved.sort(key=lambda s: (s.infeasible, s.plan.budget is None, round(s.plan.budget or 0.0, 2),
                               s.plan.mfu if "mfu" in s.plan.solved else 0.0, s.plan.days))
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
