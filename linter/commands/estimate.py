"""``trainlint estimate PATH``: memory per GPU, step time, tokens/s, MFU and the bound."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainlint.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="estimate memory per GPU, step time, tokens/s and MFU of a run",
                       description="Estimate memory per GPU (by component and pipeline stage), time per step, "
                                   "tokens/s, MFU and what bounds the run. Inputs not in the config come from the "
                                   "flags, [tool.trainlint], or stated assumptions.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="config file(s)")
    p.add_argument("--gpu", metavar="ID", help="GPU catalog id (default: the project config, else h100-sxm, assumed)")
    p.add_argument("--nodes", type=int, metavar="N", help="number of nodes")
    p.add_argument("--gpus-per-node", type=int, metavar="N", help="GPUs per node (default 8)")
    p.add_argument("--model", metavar="PRESET|PATH", help="model preset id (e.g. llama2-7b) or a local HF config.json")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--run", action="append", default=[], metavar="FILE,FILE...",
                   help="files that form one run, merged in order; repeatable")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a launch-script variable for static resolution; repeatable")
    p.add_argument("--config", metavar="FILE", help="project config to use instead of searching for one")
    p.add_argument("--isolated", action="store_true", help="ignore every project config file")
    p.set_defaults(func=run)


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
    if args.format == "json":
        sys.stdout.write(render_json(outputs) if outputs else "[]\n")
    else:
        sys.stdout.write("\n".join(render_text(e) for _, e in outputs))
    if not outputs:
        return EXIT_ERROR
    return EXIT_FINDINGS if problems else EXIT_CLEAN
