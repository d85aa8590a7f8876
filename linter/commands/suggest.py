"""``trainlint suggest PATH``: the parallel layouts that fit in memory, launch, and run fastest."""

from __future__ import annotations

from trainlint.commands.argtypes import int_at_most

import argparse
import sys
from pathlib import Path

from trainlint.core.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from trainlint.core.escape import printable

DIMENSION_NAMES = ("tp", "pp", "vpp", "cp", "micro", "batch", "recompute", "zero", "dist-opt")


def _dimensions(text: str) -> frozenset[str]:
    names = {n.strip().lower() for n in text.split(",") if n.strip()}
    unknown = names - set(DIMENSION_NAMES)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown dimension(s) {', '.join(sorted(unknown))}; "
                                         f"choose from {', '.join(DIMENSION_NAMES)}")
    return frozenset("micro" if n == "batch" else n for n in names)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text}")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    from trainlint.commands.check import add_context_arguments, add_input_arguments

    p = sub.add_parser(
        "suggest", help="search the parallel layouts that fit in memory and run fastest",
        description="Search tensor / pipeline (and virtual) / context / data parallelism, micro batch and "
                    "accumulation, recompute and ZeRO stage / distributed optimizer for a config; keep the "
                    "layouts that stay under the memory headroom and pass every launch-time rule (TL1xx); "
                    "rank them by estimated tokens/s (or cost per token) and show the change in the config's "
                    "own terms.")
    p.add_argument("path", metavar="PATH", help="config file (DeepSpeed JSON, Megatron-LM launch script, GPT-NeoX YAML)")
    add_context_arguments(p)
    add_input_arguments(p)
    p.add_argument("--top", type=int_at_most(10_000), default=5, metavar="K", help="how many layouts to show (default 5)")
    p.add_argument("--headroom", type=_fraction, metavar="FRACTION",
                   help="keep the worst stage under this fraction of the GPU's memory "
                        "(default: TL201's headroom option, else 0.90)")
    p.add_argument("--allow-batch-change", nargs="?", const=0.25, type=_fraction, metavar="FRACTION",
                   help="let the global batch move to the nearest size a layout can make, by at most FRACTION "
                        "(default 0.25); without it the global batch is held fixed")
    p.add_argument("--price-per-gpu-hour", type=_positive, metavar="PRICE",
                   help="rank by cost per token at this price per GPU-hour (shown per million tokens)")
    p.add_argument("--fix", type=_dimensions, default=frozenset(), metavar="DIMS",
                   help=f"dimensions to keep as they are (comma-separated: {', '.join(DIMENSION_NAMES)})")
    p.add_argument("--vary", type=_dimensions, metavar="DIMS",
                   help="search only these dimensions (comma-separated); the others stay as they are")
    p.add_argument("--max-micro", type=int_at_most(1_000_000), default=64, metavar="N", help="largest micro batch tried (default 64)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--write-to", metavar="FILE",
                   help="write the chosen layout (see --pick) back in the config's own format to FILE "
                        "(a directory for a multi-file run; - for standard output)")
    p.add_argument("--pick", type=int_at_most(10_000), default=1, metavar="N", help="which suggestion --write-to writes (default 1)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainlint.commands.check import session_options
    from trainlint.files.config_files import ConfigError
    from trainlint.estimator import ContextError
    from trainlint.layout import SearchError, SearchOptions, search
    from trainlint.layout.render import render_json, render_text
    from trainlint.files.safe_write import WriteBackError
    from trainlint.project.session import open_session

    if args.top < 1 or args.pick < 1 or args.max_micro < 1:
        print("trainlint: error: --top, --pick and --max-micro must be at least 1", file=sys.stderr)
        return EXIT_ERROR
    runs = [[p.strip() for p in spec.split(",") if p.strip()] for spec in args.run]
    missing = [p for p in [args.path] if not Path(p).exists()] + [p for r in runs for p in r if not Path(p).is_file()]
    if missing:
        print(printable(f"trainlint: error: no such file or directory: {', '.join(missing)}"), file=sys.stderr)
        return EXIT_ERROR
    try:
        session = open_session(session_options(args), Path(args.path))
        rules = session.startup_rules()
    except (ValueError, ConfigError) as exc:
        print(f"trainlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    project = session.project
    try:
        # what --write-to FILE holds now, before the search: a change to it meanwhile is refused
        target_before = _target_before(args.write_to)
    except WriteBackError as exc:
        print(printable(f"trainlint: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    headroom = args.headroom if args.headroom is not None else _project_headroom(project)
    options = SearchOptions(headroom=headroom, top=max(args.top, args.pick), fix=args.fix, vary=args.vary,
                            batch_tolerance=args.allow_batch_change, price_per_gpu_hour=args.price_per_gpu_hour,
                            max_micro=args.max_micro, adapters=tuple(session.adapters))
    results = session.check_paths([args.path])
    outputs = []
    sources = []
    problems = False
    for result in results:
        errors = [d for d in result.diagnostics if d.severity.value == "error"]
        if result.internal_error or (not result.specs and errors):
            for d in errors:
                print(printable(f"{result.path}: {d.code} {d.message}"), file=sys.stderr)
            return EXIT_ERROR
        if not result.specs:
            print(printable(f"trainlint: {result.path}: not a DeepSpeed, Megatron-LM or GPT-NeoX config"), file=sys.stderr)
            return EXIT_ERROR
        for spec in result.specs:
            try:
                found = search(spec, session.context(spec), options, rules=rules, project=project)
            except ContextError as exc:
                print(f"trainlint: error: {exc}", file=sys.stderr)
                return EXIT_ERROR
            except SearchError as exc:
                print(printable(f"trainlint: {spec.label or result.path}: {exc}"), file=sys.stderr)
                problems = True
                continue
            problems |= not found.suggestions
            outputs.append((result.path, found))
            sources.append(result)
    shown = [(path, _trim(found, args.top)) for path, found in outputs]
    # with --write-to - standard output carries the file and nothing else: the report goes to stderr
    report = sys.stderr if args.write_to == "-" else sys.stdout
    if args.format == "json":
        report.write(render_json(shown) if shown else "[]\n")
    else:
        report.write(render_text(shown))
    if args.write_to:
        report.flush()
        code = _write_back(args, outputs, sources, session.environment, target_before, session.adapters)
        if code != EXIT_CLEAN:
            return code
    if not outputs:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if problems else EXIT_CLEAN


def _project_headroom(project) -> float:
    """TL201's headroom option from the project config (by code or name), else 0.90."""
    for key in ("TL201", "oom-risk"):
        value = (project.rule_options or {}).get(key, {}).get("headroom")
        if isinstance(value, (int, float)) and 0 < value <= 1:
            return float(value)
    return 0.90


def _trim(found, top: int):
    """The search keeps max(top, pick) suggestions; show ``top``."""
    import copy

    if len(found.suggestions) <= top:
        return found
    shown = copy.copy(found)
    shown.suggestions = found.suggestions[:top]
    return shown


def _target_before(write_to: str | None):
    """``--write-to FILE``'s state now (None for no file, ``-`` or a directory: a directory's
    files are known only once the layout is rewritten, and are looked at before any is written)."""
    from trainlint.files.safe_write import snapshot_target

    if not write_to or write_to == "-" or Path(write_to).is_dir():
        return None
    return snapshot_target(write_to)


def _write_back(args: argparse.Namespace, outputs, sources, environment: dict[str, str], target_before,
                adapters) -> int:
    if len(outputs) != 1:
        print(f"trainlint: error: --write-to needs one run, {args.path} has {len(outputs)}", file=sys.stderr)
        return EXIT_ERROR
    (_, found), result = outputs[0], sources[0]
    if len(found.suggestions) < args.pick:
        print(f"trainlint: error: --pick {args.pick}: only {len(found.suggestions)} suggestion(s)", file=sys.stderr)
        return EXIT_FINDINGS
    chosen = found.suggestions[args.pick - 1]
    from trainlint.layout.writeback import rewrite_files
    from trainlint.files.safe_write import WriteBackError, distinct_targets, render_like, snapshot_target, write_back

    try:
        files = rewrite_files(result, found.spec, dict(chosen.changes), environment=environment, adapters=adapters)
    except (ValueError, NotImplementedError) as exc:
        print(f"trainlint: error: cannot write the layout back: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if not files:
        print(f"suggestion {chosen.rank} ({chosen.layout.short()}) changes nothing; nothing written", file=sys.stderr)
        return EXIT_CLEAN
    target = Path(args.write_to)
    try:
        if args.write_to == "-":
            if len(files) != 1:
                print(f"trainlint: error: the layout changes {len(files)} files ({', '.join(f.path for f in files)}); "
                      "give a directory to --write-to", file=sys.stderr)
                return EXIT_ERROR
            data = render_like(files[0].path, files[0].text, files[0].original_hash)
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return EXIT_CLEAN
        if target.is_dir():
            places = distinct_targets([f.path for f in files], target)
            before = {f.path: snapshot_target(places[f.path]) for f in files}  # all, before any is written
            written = []
            for f in files:
                places[f.path].parent.mkdir(parents=True, exist_ok=True)
                written.append(write_back(f.path, f.text, f.original_hash, to=places[f.path], target=before[f.path]).target)
        elif len(files) == 1:
            if target_before is None:  # the directory went away meanwhile: look at the file now
                target_before = snapshot_target(target)
            written = [write_back(files[0].path, files[0].text, files[0].original_hash, to=target,
                                  target=target_before).target]
        else:
            print(f"trainlint: error: the layout changes {len(files)} files ({', '.join(f.path for f in files)}); "
                  "give a directory to --write-to", file=sys.stderr)
            return EXIT_ERROR
    except WriteBackError as exc:
        print(f"trainlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # making a subdirectory of --write-to DIR
        print(f"trainlint: error: cannot write to {args.write_to}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"wrote suggestion {chosen.rank} ({chosen.layout.short()}) to {', '.join(written)}", file=sys.stderr)
    return EXIT_CLEAN
