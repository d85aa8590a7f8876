"""``trainlint estimate PATH``: memory per GPU, step time, tokens/s, MFU and the bound."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from trainlint.core.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from trainlint.core.escape import printable, printable_lines


def register(sub: argparse._SubParsersAction) -> None:
    from trainlint.commands.check import add_context_arguments, add_input_arguments

    p = sub.add_parser("estimate", help="estimate memory per GPU, step time, tokens/s and MFU of a run",
                       description="Estimate memory per GPU (by component and pipeline stage), time per step, "
                                   "tokens/s, MFU and what bounds the run. Inputs not in the config come from the "
                                   "flags, [tool.trainlint], or stated assumptions.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="config file(s)")
    add_context_arguments(p)
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help='output format (default: text); json is always {"runs": [...]}, one entry per run estimated')
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
    from trainlint.commands.check import session_options
    from trainlint.files.config_files import ConfigError
    from trainlint.estimator import ContextError, InvariantError
    from trainlint.estimator.render import render_text
    from trainlint.estimator.core import MissingInputs
    from trainlint.estimator.inputs import MissingInput
    from trainlint.estimator.sensitivity import with_sensitivity
    from trainlint.planning.compare import RunLength, compare_gpus, run_tokens, run_totals_for
    from trainlint.rules.estimation.scope import unmodelled
    from trainlint.project import config_groups
    from trainlint.project.session import open_session

    runs = [[p.strip() for p in spec.split(",") if p.strip()] for spec in args.run]
    missing = [p for p in args.paths if not Path(p).exists()] + [p for r in runs for p in r if not Path(p).is_file()]
    if missing:
        print(printable(f"trainlint: error: no such file or directory: {', '.join(missing)}"), file=sys.stderr)
        return EXIT_ERROR
    try:
        # each file with the nearest project config above it, as `check` resolves it: the GPU,
        # cluster and prices of one folder's config never estimate another folder's runs
        plan = config_groups.plan(session_options(args), args.paths, runs,
                                  opener=lambda options, start: open_session(options, start))
    except (ValueError, ConfigError) as exc:
        print(f"trainlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    length = RunLength(tokens=getattr(args, "tokens", None), train_samples=getattr(args, "train_samples", None),
                       price_per_gpu_hour=getattr(args, "price_per_gpu_hour", None))
    checked = [(owner.check_task(task), owner) for task, owner in zip(plan.tasks, plan.owners, strict=True)]
    outputs = []
    totals_by_id: dict[int, dict] = {}
    comparisons: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []  # path, the run it compares, rows
    problems = False
    internal = False
    for result, session in checked:
        errors = [d for d in result.diagnostics if d.severity.value == "error"]
        if result.internal_error or (not result.specs and errors):
            for d in errors:
                print(f"{printable(str(result.path))}: {d.code} {printable(d.message)}", file=sys.stderr)
            problems = True
            continue
        if not result.specs:
            if result.format is None:
                print(f"trainlint: {printable(str(result.path))}: not a DeepSpeed, Megatron-LM or GPT-NeoX config", file=sys.stderr)
            else:
                # read, but no run in it: say why (a launcher whose JSON is not found, a fragment ...)
                why = [d for d in result.diagnostics if d.severity.value == "warning"] or result.diagnostics[:3]
                reasons = "; ".join(f"{d.code} {d.message}" for d in why[:3]) or "no training run found in it"
                print(printable(f"trainlint: {result.path}: not estimated: {reasons}"), file=sys.stderr)
            problems = True
            continue
        for spec in result.specs:
            try:
                ctx = session.context(spec)
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
                est = session.estimate(spec, ctx)
            except InvariantError as exc:  # an estimator bug: never print the broken number
                print(printable(f"{result.path}: TL999 internal error: {exc}"), file=sys.stderr)
                internal = True
                continue
            if est.ok:
                est = with_sensitivity(est)
            problems |= not est.ok
            outputs.append((result.path, est))
            if est.ok:
                totals_by_id[id(est)] = run_totals_for(spec, est, length, session.project, args.gpu)
                if getattr(args, "compare_gpus", None):
                    tokens, source = run_tokens(spec, est, length)
                    comparisons.append((result.path, {"tokens": tokens, "tokens_source": source,
                                                      "base_tokens_per_s": est.tokens_per_s,
                                                      "base_world_size": est.inputs.world,
                                                      "same_throughput": bool(args.same_throughput)},
                                        compare_gpus(spec, est, session, _gpu_ids(args.compare_gpus), length,
                                                     bool(args.same_throughput))))
    if comparisons:
        if args.format == "json":
            _write_json([{"path": p, **head, "compare_gpus": rows} for p, head, rows in comparisons])
        else:
            sys.stdout.write("\n".join(f"{printable(p)}:\n{render_comparison(rows, head)}" for p, head, rows in comparisons))
        return EXIT_CLEAN if outputs else EXIT_ERROR
    if args.format == "json":
        data = []
        for path, e in outputs:
            entry = e.to_dict()
            entry["path"] = path
            if id(e) in totals_by_id:
                entry["run"] = totals_by_id[id(e)]
            data.append(entry)
        _write_json(data)
    else:
        sys.stdout.write("\n".join(render_text(e) + (render_run(totals_by_id[id(e)]) if id(e) in totals_by_id else "")
                                   for _, e in outputs))
    if not outputs or internal:
        return EXIT_ERROR
    return EXIT_FINDINGS if problems else EXIT_CLEAN


def _write_json(runs: list[dict[str, Any]]) -> None:
    """``--format json`` is always one object, ``{"runs": [...]}``: one entry per training run
    estimated (a file can hold several), in the order of the paths; none is ``{"runs": []}``. A
    reader never has to tell one run (once an object) from several (once a list)."""
    import json

    sys.stdout.write(json.dumps({"runs": runs}, indent=2) + "\n")


def _gpu_ids(text: str) -> list[str] | None:
    """``--compare-gpus`` as ids (None: every GPU of the session)."""
    return None if text in ("all", "") else [i.strip() for i in text.split(",") if i.strip()]


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
    head = (f"{'gpu':<16} {'fits':>4} {'mem%':>6} {'gpus':>5} {'tokens/s':>10} {'MFU':>6} {'bound':<12} {'days':>8} "
            f"{'cost':>14} {'$/TB/s.h':>9}")
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
                   f"{r['mfu'] * 100:>5.1f}% {r['bound']!s:<12} {days:>8} {cost:>14} {bw:>9}")
    sizings = [f"  {r['gpu']}: {r['sizing']}" for r in rows if r.get("sizing")]
    if sizings:
        out += ["sizing:", *sizings]
    return printable_lines(out) + "\n"
