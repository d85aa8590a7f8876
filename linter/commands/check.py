"""``trainlint check PATH...``: read configs, report what is wrong, exit 0/1/2."""

from __future__ import annotations

from trainlint.commands.argtypes import int_at_most

import argparse
import sys
from itertools import groupby
from pathlib import Path
from typing import Any, Iterator, Sequence

from trainlint.core.exit_codes import EXIT_ERROR
from trainlint.output.style import COLOR_CHOICES
from trainlint.commands.check_report import at_least, baseline_file  # noqa: F401 - also check's API
from trainlint.project.session import Session, SessionOptions, open_session


TEXT_FORMATS = ("full", "concise", "grouped", "text")
"""The text layouts for people (``text`` is the old name of ``full``); the rest are for tools."""

OUTPUT_FORMATS = ("full", "concise", "grouped", "json", "sarif", "github", "markdown", "text")
"""Every --output-format of check (and of run, which reports the same way); render_results dispatches on it."""

SEVERITY_CHOICES = ("info", "warning", "error")

ARG_HELP = ("a launch script's positional argument: the first --arg is $1, the second $2, ... (as "
            "`bash train.sh VALUE...` gives them; an argument not given is empty); repeatable. "
            "An explicit --env N=VALUE wins")


def register(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser("check", help="check config files and directories",
                           description="Check config files; directories are searched recursively.")
    check.add_argument("paths", nargs="*", default=[], metavar="PATH",
                       help="files or directories (default: ., or only the --run files when --run is given)")
    add_output_arguments(check)
    check.add_argument("--statistics", action="store_true",
                       help="print how often each code was reported at each severity, most frequent first, instead of the "
                            "findings: "
                            "a table with text and github, a JSON list of {code, name, count, severity} with json, "
                            "a table with markdown; not with sarif (exit 2). The exit code is the same as without it")
    check.add_argument("--jobs", "-j", type=_jobs, default=0, metavar="N",
                       help="processes to check files on (default 0: one per CPU, for directories of more than a "
                            "few dozen files; 1: no extra processes). The report is the same either way")
    check.add_argument("--exit-zero", action="store_true",
                       help="exit 0 even when errors are found (2 still means trainlint failed)")
    check.add_argument("--run", action="append", default=[], metavar="FILE,FILE...",
                       help="files that form one run, merged in order (NeoX: deepy.py train.py a.yml b.yml); repeatable")
    check.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                       help="value of a launch-script variable for static resolution "
                            "(never read from the real environment); repeatable")
    check.add_argument("--arg", action="append", default=[], metavar="VALUE", dest="script_args",
                       help=ARG_HELP)
    check.add_argument("--config", metavar="FILE", help="project config to use instead of searching for one")
    check.add_argument("--isolated", action="store_true", help="ignore every project config file")
    check.add_argument("--framework-source", metavar="PATH", help=FRAMEWORK_SOURCE_HELP)
    check.add_argument("--allow-plugins", action="store_true",
                       help="import the local plugins the project config names (see docs/plugins.md: Trust); "
                             "also TRAINLINT_ALLOW_PLUGINS=1 or the trusted-projects list")
    check.add_argument("--no-summary", action="store_true", help="text output: no summary line")
    check.add_argument("--fix", action="store_true",
                       help="apply the safe fixes in place (in the file's own format; a fix that does not remove its "
                            "finding is reverted), then report what remains")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff: also apply the fixes that may change what the run does")
    check.add_argument("--write-baseline", metavar="FILE",
                       help="record every finding reported now in FILE (JSON) and exit 0; later runs with --baseline FILE "
                            "report only new findings")
    check.add_argument("--baseline", metavar="FILE",
                       help="report only the findings not recorded in FILE (default: baseline in the project config), "
                            "and say how many recorded ones no longer occur")
    check.add_argument("--diff", action="store_true",
                       help="print the changes --fix would make as a unified diff, write nothing; exit 1 when any")
    add_selection_arguments(check)
    add_context_arguments(check)
    check.set_defaults(func=run)


FRAMEWORK_SOURCE_HELP = ("the framework checkout (Megatron-LM or a fork, GPT-NeoX, DeepSpeed) the configs are judged "
                         "against, when it is not inside the project (also framework-source in the project config)")


def add_output_arguments(parser: argparse.ArgumentParser, *, progress: bool = True) -> None:
    """--output-format (alias --format), --color, --quiet, --min-severity: how the findings are shown."""
    parser.add_argument("--output-format", "--format", dest="format", choices=OUTPUT_FORMATS, default="full",
                        metavar="FORMAT",
                        help="output format (default: full): full (one line per finding with its severity, and "
                             "the fix hint under it; `text` is the same), concise (one line per finding), grouped "
                             "(findings under each file's name), json for tools, sarif for code scanning (SARIF "
                             "2.1.0), github for Actions annotations, markdown for a job summary "
                             "($GITHUB_STEP_SUMMARY); sarif, github and markdown give paths relative to the "
                             "enclosing git checkout. --format is another name of this option")
    parser.add_argument("--color", choices=COLOR_CHOICES, default="auto",
                        help="colour the text formats: auto (default) on a terminal only, or with FORCE_COLOR "
                             "set, never with NO_COLOR set; always; never")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print the findings only: no summary, no fixable footer" +
                             (", no progress" if progress else ""))
    parser.add_argument("--min-severity", choices=SEVERITY_CHOICES, default="info",
                        help="report only findings at this severity or above (default: info, every finding); "
                             "the exit code is the same as without it")


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """How files become runs: --run, --env, and which project config (estimate, suggest)."""
    parser.add_argument("--run", action="append", default=[], metavar="FILE,FILE...",
                        help="files that form one run, merged in order; repeatable")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="value of a launch-script variable for static resolution; repeatable")
    parser.add_argument("--arg", action="append", default=[], metavar="VALUE", dest="script_args", help=ARG_HELP)
    parser.add_argument("--config", metavar="FILE", help="project config to use instead of searching for one")
    parser.add_argument("--isolated", action="store_true", help="ignore every project config file")
    parser.add_argument("--framework-source", metavar="PATH", help=FRAMEWORK_SOURCE_HELP)
    parser.add_argument("--allow-plugins", action="store_true",
                        help="import the local plugins the project config names (see docs/plugins.md: Trust); "
                             "also TRAINLINT_ALLOW_PLUGINS=1 or the trusted-projects list")


def add_context_arguments(parser: argparse.ArgumentParser) -> None:
    """What the estimate needs that a config may not say (also [tool.trainlint] gpu, nodes, ...)."""
    parser.add_argument("--gpu", metavar="ID", help="GPU catalog id (default: the project config, else h100-sxm, assumed)")
    parser.add_argument("--nodes", type=int_at_most(1_000_000), metavar="N", help="number of nodes")
    parser.add_argument("--gpus-per-node", type=int_at_most(1024), metavar="N", help="GPUs per node (default 8)")
    parser.add_argument("--model", metavar="PRESET|PATH", help="model preset id (e.g. llama2-7b) or a local HF config.json")
    parser.add_argument("--vocab-size", type=int_at_most(1_000_000_000), metavar="N",
                        help="vocabulary (embedding rows) when the config's tokenizer options do not give it "
                             "(also `vocab-size` in [tool.trainlint]); a size the config states wins")


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 (one per CPU) or more")
    return value


def _selectors(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--select", type=_selectors, metavar="CODES",
                        help="report only these codes, prefixes or rule names (comma-separated; ALL for every rule); "
                             "replaces the project config's select")
    parser.add_argument("--extend-select", type=_selectors, default=[], metavar="CODES",
                        help="add to the selected codes")
    parser.add_argument("--ignore", type=_selectors, default=[], metavar="CODES", help="codes not to report")
    parser.add_argument("--preview", action=argparse.BooleanOptionalAction, default=None,
                        help="run the preview rules too (new rules still being measured); over the project config's preview")


def launch_environment(args: argparse.Namespace) -> dict[str, str]:
    """--arg values as $1 $2 ..., then --env (so an explicit ``--env 2=...`` wins over the second --arg).
    Raises ValueError on a malformed --env item."""
    positional = {str(i): value for i, value in enumerate(getattr(args, "script_args", None) or [], 1)}
    return {**positional, **parse_env(getattr(args, "env", None) or [])}


def parse_env(items: list[str]) -> dict[str, str]:
    """``["TP=4"]`` -> ``{"TP": "4"}``; raises ValueError on a malformed item."""
    environment: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not (name.isidentifier() or (name.isdigit() and name != "0")):
            raise ValueError(f"--env expects NAME=VALUE (or N=VALUE for the script's argument $N), got {item!r}")
        environment[name] = value
    return environment


def parse_runs(items: list[str] | None) -> list[list[str]]:
    """``--run a.yml,b.yml`` items as lists of files; raises ValueError on one that names none (``--run ,``)."""
    runs = []
    for item in items or ():
        files = [p.strip() for p in item.split(",") if p.strip()]
        if not files:
            raise ValueError(f"--run expects FILE,FILE... (the files of one run), got {item!r}")
        runs.append(files)
    return runs


def session_options(args: argparse.Namespace) -> SessionOptions:
    """What the flags of :func:`add_input_arguments`, :func:`add_context_arguments` and
    :func:`add_selection_arguments` say, as the typed options of :func:`trainlint.project.session.open_session`
    (a face without some of the flags gets the defaults). Raises ValueError on a malformed --env."""
    from trainlint.project.session import EstimateOptions, SessionOptions

    def given(name: str):
        return getattr(args, name, None)

    select = given("select")
    return SessionOptions(
        config=given("config"), isolated=bool(given("isolated")), allow_plugins=bool(given("allow_plugins")),
        select=tuple(select) if select is not None else None, extend_select=tuple(given("extend_select") or ()),
        ignore=tuple(given("ignore") or ()), preview=given("preview"), environment=launch_environment(args),
        runs=tuple(tuple(run) for run in parse_runs(given("run"))),
        estimate=EstimateOptions(gpu=given("gpu"), nodes=given("nodes"), gpus_per_node=given("gpus_per_node"),
                                 model=given("model"), vocab_size=given("vocab_size"),
                                 micro_batch=given("micro_batch_size"), seq_length=given("seq_length"),
                                 grad_accum=given("grad_accum")),
        framework_source=given("framework_source"))


def lint_results(results: list, args: argparse.Namespace, session: Session) -> list:
    """The declared cluster, then rules, severities, selection and suppressions."""
    return session.lint(results)


def report(linted: list, args: argparse.Namespace, session: Session, out=None,
           owners: Sequence[Session] | None = None) -> tuple[list, int]:
    """Plugin failures added to linted results, rendered in ``args.format``; the exit code.
    ``owners[i]``: the session of ``linted[i]`` when files of several project configs were checked
    (each config's unused suppressions, plugin failures and baseline apply to its own files);
    ``session`` renders (the first config's). Returns the results as reported (after the
    baselines, before --min-severity). ``check`` itself feeds a :class:`CheckReport` one result at
    a time instead of a list."""
    from trainlint.commands.check_report import CheckReport

    owners = list(owners) if owners is not None else [session] * len(linted)
    reporter = CheckReport(args, session, owners, keep=True)
    for result, owner in zip(linted, owners, strict=True):
        reporter.add(result, owner)
    return reporter.finish(out, render_pieces)


def finish(results: list, args: argparse.Namespace, session: Session, out=None) -> tuple[list, int]:
    """Declared cluster, rules, selection; render in ``args.format``; the exit code."""
    return report(lint_results(results, args, session), args, session, out)


def statistics_conflict(args: argparse.Namespace) -> str | None:
    """Why --statistics cannot go with this --format (None when it can)."""
    if getattr(args, "statistics", False) and args.format == "sarif":
        return "--statistics cannot be combined with --format sarif (a SARIF log holds findings); use --format json"
    return None


def render_results(results: Any, args: argparse.Namespace, session: Session, baseline: tuple | None = None,
                   stream=None) -> str:
    """The report in ``args.format`` (``results``: a list of results or a Report); each format's
    module is imported only when it is used. ``baseline``: (path, Outcome) when a baseline left
    findings out (json and sarif say so); ``stream``: where it goes (colour is for a terminal; see
    :func:`trainlint.output.style.use_color`)."""
    return "".join(render_pieces(results, args, session, baseline, stream=stream))


def render_pieces(results: Any, args: argparse.Namespace, session: Session, baseline: tuple | None = None,
                  stream=None) -> Iterator[str]:
    """:func:`render_results` in pieces: the formats a long check writes much of (json, sarif,
    github, the text layouts) one file at a time, never the whole text at once."""
    fmt = args.format
    show_summary = not (getattr(args, "no_summary", False) or getattr(args, "quiet", False))
    # "fixable" is said only by a command that fixes (check; not run), and only of what --fix applies
    fix_marks, unsafe = hasattr(args, "fix"), bool(getattr(args, "unsafe_fixes", False))
    if getattr(args, "statistics", False):
        from trainlint.output.statistics import render
        yield render(results, fmt if fmt in ("json", "markdown") else "text",
                     show_summary=show_summary, fix_marks=fix_marks, unsafe=unsafe)
        return
    # each format's render under its own name: the signatures differ
    if fmt == "json":
        from trainlint.output.json_format import render_pieces as json_pieces
        yield from json_pieces(results, baseline=baseline)
        return
    if fmt == "sarif":
        from trainlint.output.sarif import render_pieces as sarif_pieces
        yield from sarif_pieces(results, registry=session.registry, baseline=baseline)
        return
    if fmt == "github":
        from trainlint.output.github import render_lines as github_lines
        yield from github_lines(results)
        return
    if fmt == "markdown":
        from trainlint.output.markdown import render as render_markdown
        yield render_markdown(results, registry=session.registry)
        return
    from trainlint.output.style import Style, use_color
    from trainlint.output.text import render_lines as text_lines
    # `run` renders into a buffer that it writes to stderr: the terminal to ask about is stderr
    terminal = sys.stderr if getattr(args, "report_stream", None) == "stderr" else stream or sys.stdout
    style = Style(use_color(getattr(args, "color", "auto"), terminal))
    yield from text_lines(results, show_summary=show_summary, fix_marks=fix_marks, unsafe=unsafe,
                          layout="full" if fmt == "text" else fmt, style=style)


def run(args: argparse.Namespace) -> int:
    from trainlint.files.config_files import ConfigError
    from trainlint.project.process_pool import run_tasks

    conflict = statistics_conflict(args)
    if conflict:
        print(f"trainlint: error: {conflict}", file=sys.stderr)
        return EXIT_ERROR
    try:
        runs = parse_runs(args.run)
    except ValueError as exc:
        print(f"trainlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if not args.paths and not runs:
        args.paths = ["."]  # `check --run a.yml,b.yml` alone lints only that run
    missing = [p for p in args.paths if not Path(p).exists()]
    missing += [p for run in runs for p in run if not Path(p).is_file()]
    if missing:
        print(f"trainlint: error: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_ERROR
    from trainlint.project import config_groups

    try:
        # each file with the nearest project config above it (one session per config), as ruff
        # resolves it: a config in one folder never governs the files of another
        plan = config_groups.plan(session_options(args), args.paths, runs,
                                  opener=lambda options, start: open_session(options, start))
    except (ValueError, ConfigError) as exc:
        print(f"trainlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    sessions = plan.sessions
    session = sessions[0]
    for said in dict.fromkeys(w for one in sessions for w in one.settings.warnings):
        print(f"trainlint: warning: {said}", file=sys.stderr)

    progress = None

    def checked(one, task):
        result = one.check_task(task)
        if progress is not None:
            progress.advance()  # in a forked worker it writes nothing: run_tasks counts its chunk
        return result

    fixing = bool(getattr(args, "fix", False) or getattr(args, "diff", False))

    def start_progress() -> None:
        from trainlint.output import progress as progress_line

        nonlocal progress
        progress = progress_line.Progress(plan.count, sys.stderr) if progress_line.wanted(
            sys.stderr, args.format, args.quiet) else None

    def lint_all() -> list:
        """Every file's result, kept with its specs and documents (--fix and --diff fix them)."""
        from trainlint.frameworks.locate import once_per_run

        start_progress()
        tasks, owners = plan.tasks, plan.owners
        results: list = [None] * len(tasks)
        try:
            for one in sessions:
                indexes = [i for i, owner in enumerate(owners) if owner is one]

                def check_and_lint(chunk, one=one):
                    return one.lint([checked(one, task) for task in chunk])

                done = run_tasks([tasks[i] for i in indexes], check_and_lint, args.jobs,
                                 progress.advance if progress is not None else None)
                for i, result in zip(indexes, done, strict=True):
                    results[i] = result
        finally:
            if progress is not None:
                progress.finish()
        return once_per_run(results)

    def report_all(results: list):
        if args.format == "sarif":
            # SARIF carries the edits themselves (`fixes`), which a code-scanning tool may apply
            # without trainlint: each is checked as --fix checks it first (the text and JSON marks
            # say what --fix applies, and --fix refuses, on stderr, what fails that check)
            from trainlint.commands.check_fix import honest_marks

            results = honest_marks(results, session)
        return report(results, args, session, owners=plan.owners)

    def check_streamed() -> int:
        """Each file checked, linted and handed to the report as it is done (on the workers, in
        check order): no file's result is kept, nor a list of the files (the plan is walked as the
        check goes): memory flat in the number of files."""
        from collections import deque

        from trainlint.commands.check_report import CheckReport
        from trainlint.project.process_pool import iter_results

        reporter = CheckReport(args, session, sessions, once_per_run=True, files=plan.count)
        sarif = args.format == "sarif"
        numbers = {id(one): n for n, one in enumerate(sessions)}
        owners: deque = deque()  # the session of each task sent and not yet reported, in order

        def tasks() -> Iterator[tuple[int, Any]]:
            # (the session's number, the task): what a forked worker is sent (a session cannot be pickled)
            for task, one in plan.items():
                owners.append(one)
                yield numbers[id(one)], task

        def check_and_lint(chunk: Sequence[tuple[int, Any]]) -> list:
            out: list = []
            for number, group in groupby(chunk, key=lambda item: item[0]):
                one = sessions[number]
                linted = one.lint([checked(one, task) for _, task in group])
                if sarif:
                    # SARIF carries the edits themselves (`fixes`), which a code-scanning tool may
                    # apply without trainlint: each is checked as --fix checks it, by reading the
                    # fixed file again, while the file's documents are at hand
                    from trainlint.commands.check_fix import honest_marks

                    linted = [honest_marks([result], one)[0] for result in linted]
                out += linted
            return out

        start_progress()
        try:
            for result in iter_results(tasks(), check_and_lint, args.jobs,
                                       progress.advance if progress is not None else None, count=plan.count):
                reporter.add(result, owners.popleft())
        finally:
            if progress is not None:
                progress.finish()
        return reporter.finish(render=render_pieces)[1]

    # rules' layout changes become edits (the run's adapter writes them), so that what is marked
    # fixable (text [*], the footer, JSON applicability) is what --fix --unsafe-fixes would apply
    for one in sessions:
        one.settings.write_fixes = True
    try:
        if fixing:
            from trainlint.commands.check_fix import fix_then_report

            return fix_then_report(args, session, lint_all, report_all)
        return check_streamed()
    except _baseline_error() as exc:
        print(f"trainlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _baseline_error() -> type[Exception]:
    """:class:`trainlint.project.baseline.BaselineError`. An ``except`` clause evaluates its class only when
    something was raised, so a check that uses no baseline never imports the baseline module
    (with hashlib, ~4 ms of a one-file check)."""
    from trainlint.project.baseline import BaselineError

    return BaselineError
