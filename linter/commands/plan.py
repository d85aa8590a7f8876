"""``trainlint plan``: the budget / time / MFU triangle (seed 000) without a config.

C = 6 * P * D; time = C / (gpus * peak * MFU); cost = gpus * hours * price per GPU-hour.
Any two of days, budget and MFU determine the third (and the GPU count when not given).
"""

from __future__ import annotations

import argparse
import json
import sys

from trainlint.exit_codes import EXIT_CLEAN, EXIT_ERROR


def _positive(text: str) -> float:
    v = float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return v


def _mfu(text: str) -> float:
    s = text.strip()
    v = float(s[:-1]) / 100 if s.endswith("%") else float(s)
    if v > 1:  # "45" means 45 %
        v /= 100
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError("MFU must be in (0, 1] or a percentage")
    return v


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="solve the budget / time / MFU triangle for a model and token count",
                       description="Training FLOPs C = 6*P*D; time = C / (GPUs * peak * MFU); cost = GPU-hours * "
                                   "price. Give two of --days, --budget, --mfu; the rest (and --gpus if absent) "
                                   "is solved.")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", metavar="PRESET", help="model preset id (parameter count from the catalog)")
    g.add_argument("--params", metavar="N", help="parameter count, e.g. 30B")
    p.add_argument("--tokens", required=True, metavar="N", help="training tokens, e.g. 2T or 600B")
    p.add_argument("--gpu", default="h100-sxm", metavar="ID", help="GPU catalog id (default h100-sxm)")
    p.add_argument("--dtype", default="bf16", help="dtype of the peak (default bf16)")
    p.add_argument("--gpus", type=int, metavar="N", help="number of GPUs (solved when absent)")
    p.add_argument("--round-gpus", type=int, default=8, metavar="M",
                   help="round a solved GPU count to a multiple of M (default 8, whole nodes; seed 000 uses 128)")
    p.add_argument("--days", type=_positive, metavar="D")
    p.add_argument("--budget", type=_positive, metavar="USD")
    p.add_argument("--mfu", type=_mfu, metavar="F", help="0.45 or 45%%")
    p.add_argument("--price-per-gpu-hour", type=_positive, metavar="USD")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def _si(x: float, unit: str = "") -> str:
    for f, s in ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= f:
            return f"{x / f:.3g}{s}{unit}"
    return f"{x:.3g}{unit}"


def run(args: argparse.Namespace) -> int:
    from trainlint.catalog import CatalogError, find_gpu, find_model_preset
    from trainlint.planning import PlanError, parse_count, solve

    try:
        if args.model:
            preset = find_model_preset(args.model)
            params = float(preset.params().active)
        else:
            params = parse_count(args.params)
        tokens = parse_count(args.tokens)
        gpu = find_gpu(args.gpu)
        peak_t = gpu.peak_tflops(args.dtype)
        if not peak_t:
            raise PlanError(f"{gpu.name} has no {args.dtype} peak in the catalog")
        plan = solve(params=params, tokens=tokens, peak_flops_per_gpu=peak_t * 1e12, gpus=args.gpus, days=args.days,
                     budget=args.budget, mfu=args.mfu, price_per_gpu_hour=args.price_per_gpu_hour,
                     gpu_multiple=args.round_gpus)
    except (PlanError, CatalogError, ValueError) as exc:
        print(f"trainlint plan: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.format == "json":
        d = plan.to_dict()
        d["gpu"] = args.gpu
        d["dtype"] = args.dtype
        print(json.dumps(d, indent=2))
        return EXIT_CLEAN
    secs = plan.days * 86400
    out = [f"plan: {_si(params)} parameters, {_si(tokens)} tokens, {gpu.name} ({args.dtype} peak {peak_t:g} TFLOP/s)",
           f"  training FLOPs  C = 6 x {_si(params)} x {_si(tokens)} = {plan.flops:.3e}",
           f"  tokens/param    {plan.tokens_per_param:.1f} (compute-optimal about 20)"]
    if plan.gpus_from_budget is not None:
        out.append(f"  GPUs by budget  {plan.budget_limit:,.0f} / ({plan.price_per_gpu_hour:g} x 24 x {plan.days:g}) = "
                   f"{plan.gpus_from_budget:.1f} -> {plan.gpus}" + ("" if "gpus" in plan.solved else " (given)"))
    else:
        out.append(f"  GPUs            {plan.gpus}" + (" (solved)" if "gpus" in plan.solved else ""))
    out.append(f"  time            {plan.days:.2f} days = {secs:.4g} s")
    out.append(f"  required FLOP/s C / time = {plan.required_flops_per_s:.3e}")
    out.append(f"  peak FLOP/s     {plan.gpus} x {peak_t:g}e12 = {plan.gpus * plan.peak_flops_per_gpu:.3e}")
    out.append(f"  MFU             {plan.mfu * 100:.1f}%" + (" (required)" if "mfu" in plan.solved else ""))
    out.append(f"  GPU-hours       {plan.gpus} x {secs / 3600:.1f} h = {plan.gpu_hours:,.0f}")
    if plan.budget is not None:
        out.append(f"  cost            {plan.gpu_hours:,.0f} x {plan.price_per_gpu_hour:g} = USD {plan.budget:,.0f}"
                   + (f" (budget USD {plan.budget_limit:,.0f})" if plan.budget_limit else ""))
    else:
        out.append("  cost            no price (--price-per-gpu-hour)")
    print("\n".join(out))
    return EXIT_CLEAN
