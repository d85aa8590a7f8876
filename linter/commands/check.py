"""``trainlint check PATH...``: read configs, report what is wrong, exit 0/1/2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainlint.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS


def register(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser("check", help="check config files and directories",
                           description="Check config files; directories are searched recursively.")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or directories (default: .)")
    check.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    check.add_argument("--exit-zero", action="store_true",
                       help="exit 0 even when errors are found (2 still means trainlint failed)")
    check.add_argument("--run", action="append", default=[], metavar="FILE,FILE...",
                       help="files that form one run, merged in order (NeoX: deepy.py train.py a.yml b.yml); repeatable")
    check.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                       help="value of a launch-script variable for static resolution "
                            "(never read from the real environment); repeatable")
    check.add_argument("--config", metavar="FILE", help="project config to use instead of searching for one")
    check.add_argument("--isolated", action="store_true", help="ignore every project config file")
    check.add_argument("--no-summary", action="store_true", help="text output: no summary line")
    add_selection_arguments(check)
    add_context_arguments(check)
    check.set_defaults(func=run)


def add_context_arguments(parser: argparse.ArgumentParser) -> None:
    """What the estimate needs that a config may not say (also [tool.trainlint] gpu, nodes, ...)."""
    parser.add_argument("--gpu", metavar="ID", help="GPU catalog id (default: the project config, else h100-sxm, assumed)")
    parser.add_argument("--nodes", type=int, metavar="N", help="number of nodes")
    parser.add_argument("--gpus-per-node", type=int, metavar="N", help="GPUs per node (default 8)")
    parser.add_argument("--model", metavar="PRESET|PATH", help="model preset id (e.g. llama2-7b) or a local HF config.json")


def declare_cluster(results, args: argparse.Namespace, project) -> None:
    """Put what the user declared about the cluster (--gpu/--nodes/--gpus-per-node, or the
    project config's keys) into the specs, where the config itself says nothing, so that
    launch-time rules (bf16 on a V100, world size divisibility) see it with its provenance."""
    from trainlint.provenance import Origin, Provenance, Value, derived

    declared = []
    for name, field_name, cli_value in (("gpu", "cluster.gpu", args.gpu), ("nodes", "cluster.nodes", args.nodes),
                                        ("gpus-per-node", "cluster.gpus_per_node", args.gpus_per_node)):
        if cli_value is not None:
            declared.append((field_name, Value(cli_value, Provenance(Origin.CLI, key=f"--{name}", note=f"--{name} {cli_value}"))))
        elif project.raw.get(name) is not None:
            declared.append((field_name, Value(project.raw[name], Provenance(
                Origin.PROJECT_CONFIG, path=project.path, key=name, note=f"{name} in {project.path}"))))
    for result in results:
        for spec in result.specs:
            for field_name, value in declared:
                if spec.get(field_name) is None:
                    spec.set(field_name, value)
            nodes, per_node = spec.cluster.nodes, spec.cluster.gpus_per_node
            if spec.cluster.world_size is None and nodes is not None and per_node is not None \
                    and isinstance(nodes.value, int) and isinstance(per_node.value, int):
                spec.cluster.world_size = derived(nodes.value * per_node.value, "nodes x GPUs per node", nodes, per_node)


def make_estimator(args: argparse.Namespace, project):
    """spec -> Estimate | MissingInputs in the context the flags and project config give.
    Raises ContextError (a usage error) when a named GPU or model does not exist."""
    from trainlint.estimator import build_context, estimate

    build_context(None, gpu=args.gpu, nodes=args.nodes, gpus_per_node=args.gpus_per_node, model=args.model,
                  project_raw=project.raw, project_path=project.path)  # validate names once, up front

    def run_estimate(spec):
        ctx = build_context(spec, gpu=args.gpu, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
                            model=args.model, project_raw=project.raw, project_path=project.path)
        return estimate(spec, ctx)

    return run_estimate


def _selectors(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--select", type=_selectors, metavar="CODES",
                        help="report only these codes, prefixes or rule names (comma-separated; ALL for every rule); "
                             "replaces the project config's select")
    parser.add_argument("--extend-select", type=_selectors, default=[], metavar="CODES",
                        help="add to the selected codes")
    parser.add_argument("--ignore", type=_selectors, default=[], metavar="CODES", help="codes not to report")


def parse_env(items: list[str]) -> dict[str, str]:
    """``["TP=4"]`` -> ``{"TP": "4"}``; raises ValueError on a malformed item."""
    environment: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise ValueError(f"--env expects NAME=VALUE, got {item!r}")
        environment[name] = value
    return environment


def run(args: argparse.Namespace) -> int:
    from trainlint.checker import check_paths
    from trainlint.config import ConfigError, discover
    from trainlint.engine import check_settings, lint, plugin_failures, settings_from
    from trainlint.plugins import create_host
    from trainlint.registry import build_registry

    missing = [p for p in args.paths if not Path(p).exists()]
    runs = [[p.strip() for p in spec.split(",") if p.strip()] for spec in args.run]
    missing += [p for run in runs for p in run if not Path(p).is_file()]
    if missing:
        print(f"trainlint: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_ERROR
    try:
        environment = parse_env(args.env)
        project = discover(Path(args.paths[0] if args.paths else "."), args.config, args.isolated)
        host = create_host(project.plugins, Path(project.root) if project.root else None)
        registry = build_registry(host)
        settings = settings_from(project, select=args.select, extend_select=args.extend_select, ignore=args.ignore)
        check_settings(registry, settings)
        settings.estimate = make_estimator(args, project)
    except (ValueError, ConfigError) as exc:
        print(f"trainlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    runs = project.runs + runs
    environment = {**project.environment, **environment}

    results = check_paths(args.paths, registry.adapters, runs=runs, environment=environment)
    declare_cluster(results, args, project)
    results = plugin_failures(registry, project) + lint(results, registry, settings)

    if args.format == "json":
        from trainlint.output.json_format import render
        sys.stdout.write(render(results))
    else:
        from trainlint.output.text import render
        sys.stdout.write(render(results, show_summary=not args.no_summary))

    if any(d.code in ("TL998", "TL999") for r in results for d in r.diagnostics):
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    has_error = any(d.severity.value == "error" for r in results for d in r.diagnostics)
    return EXIT_FINDINGS if has_error else EXIT_CLEAN
