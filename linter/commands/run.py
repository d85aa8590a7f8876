"""``trainlint run [options] -- <launch command...>``: the gate before launch.

It lints what the command would train with (see :mod:`trainlint.adapters.launch.command_line`: Megatron flags
in the argument list, the ``--deepspeed_config`` JSON with the launcher's world size, the YAML
files of a NeoX ``deepy.py`` command, a launch script run by ``bash``/``sbatch``), prints the
findings, and only when none reaches ``--fail-level`` runs the command unchanged: the same argument
list, no shell, the same standard streams and environment. Its exit code is passed through.

Output: findings go to **stderr**, so that the command's own stdout stays exactly what it prints
(``trainlint run -- python eval.py > scores.json`` works). ``--dry-run`` prints the command that
would run (shell-quoted) on stdout and runs nothing.

Exit codes: the command's own; 1 when findings block it; 2 for a usage error or when trainlint
itself failed (TL998/TL999: the command is not run); 127 when the command is not found and 126
when it cannot be executed, as shells do; 128+N when the command is killed by signal N.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from trainlint.commands.check import TEXT_FORMATS, add_context_arguments, add_output_arguments, add_selection_arguments
from trainlint.core.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS
from trainlint.core.escape import printable

EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127
FORWARDED_SIGNALS = ("SIGINT", "SIGTERM")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "run", help="lint a launch command, then run it unless a finding blocks it",
        usage="trainlint run [options] -- COMMAND [ARG...]",
        description="Lint the configs a launch command uses (Megatron arguments, the --deepspeed_config JSON with "
                    "the launcher's world size, NeoX deepy.py YAMLs, a launch script), print the findings on "
                    "stderr, and run the command unchanged only when no finding reaches --fail-level; its exit "
                    "code is passed through.")
    parser.add_argument("--dry-run", action="store_true",
                        help="lint and print the command that would run (on stdout); never run it")
    parser.add_argument("--fail-level", choices=("error", "warning"), default="error",
                        help="lowest severity that blocks the command (default: error)")
    add_output_arguments(parser, progress=False)  # the findings are written to stderr
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="value of a launch-script variable for static resolution (bash train.sh); repeatable")
    parser.add_argument("--config", metavar="FILE", help="project config to use instead of searching for one")
    parser.add_argument("--isolated", action="store_true", help="ignore every project config file")
    parser.add_argument("--no-summary", action="store_true", help="text output: no summary line")
    add_selection_arguments(parser)
    add_context_arguments(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="the launch command and its arguments, after --")
    # What check's renderers may read from the namespace.
    # report_stream: the findings go to stderr, so colour follows whether stderr is a terminal.
    parser.set_defaults(func=run, exit_zero=False, statistics=False, run=[], report_stream="stderr")


def run(args: argparse.Namespace) -> int:
    from trainlint.files.config_files import ConfigError

    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("trainlint run: error: no command given (usage: trainlint run [options] -- COMMAND [ARG...])",
              file=sys.stderr)
        return EXIT_ERROR
    try:
        from trainlint.commands.check import session_options
        from trainlint.project.session import open_session

        session = open_session(session_options(args), Path.cwd())
    except (ValueError, ConfigError) as exc:
        print(printable(f"trainlint: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR

    results, report = lint_command(argv, args, session)
    if report:
        # rendered: every piece from the command line went through printable, colours added after
        getattr(sys.stderr, "write_rendered", sys.stderr.write)(report)
    blocked = decide(results, args.fail_level)
    if blocked is not None:
        code, reason = blocked
        print(printable(f"trainlint: not running the command: {reason}"), file=sys.stderr)
        return code
    if args.dry_run:
        print(shell_words(argv))
        return EXIT_CLEAN
    sys.stdout.flush()
    sys.stderr.flush()
    return execute(argv)


def shell_words(argv: list[str]) -> str:
    """``argv`` as one line of shell that runs it again: words holding a control or bidi character are
    written in bash's ``$'...'`` quoting with the character as an escape, so the line cannot break or
    rewrite the terminal and still means the same words."""
    import shlex

    words = []
    for word in argv:
        if printable(word) == word:
            words.append(shlex.quote(word))
        else:
            words.append("$'" + "".join(_ansi_c(ch) for ch in word) + "'")
    return " ".join(words)


def _ansi_c(ch: str) -> str:
    """One character inside bash's ``$'...'``: backslash and quote escaped, a control as its escape (a
    C1 control as ``\\u00XX``: bash's ``\\xXX`` would be a raw byte, not the character)."""
    if ch in "\\'":
        return "\\" + ch
    if printable(ch) == ch:
        return ch
    return printable(ch) if ord(ch) < 0x80 else f"\\u{ord(ch):04x}"


# ------------------------------------------------------------------------------------ linting


def lint_command(argv: list[str], args: argparse.Namespace, session) -> tuple[list, str]:
    """Lint what the command uses; (results after the rules, the report to print or '')."""
    from trainlint.commands.check import finish
    from trainlint.adapters.launch.command_line import COMMAND_LINE, command_text, parse_launch

    launch = None
    try:
        launch = parse_launch(argv, frameworks=list(session.registry.frameworks))
        results = session.check_command(launch)
    except Exception as exc:  # noqa: BLE001 - a trainlint bug is reported, and blocks the command
        from trainlint.core.results import FileResult
        from trainlint.core.input_codes import input_diagnostic

        results = [FileResult(COMMAND_LINE, None, [input_diagnostic(
            "TL999", f"internal error: {type(exc).__name__}: {exc}", path=COMMAND_LINE)])]
    if not any(r.format or r.diagnostics for r in results):
        return [], ""  # nothing trainlint reads (echo ok, a script it does not recognise)
    out = io.StringIO()
    results, _ = finish(results, args, session, out=out)
    report = out.getvalue()
    if args.format in TEXT_FORMATS and any((d.path or r.path) == COMMAND_LINE for r in results for d in r.diagnostics):
        # Columns in <command line> count characters of these words joined by single spaces.
        report = printable(f"{COMMAND_LINE}: {command_text(argv)}") + "\n" + report
    return results, report


# ------------------------------------------------------------------------------- the decision


def decide(results: list, fail_level: str) -> tuple[int, str] | None:
    """None when the command may run; else (exit code, why not)."""
    diagnostics = [d for r in results for d in r.diagnostics]
    failed = [d for d in diagnostics if d.code in ("TL998", "TL999")]
    if failed:
        return EXIT_ERROR, f"trainlint itself failed ({failed[0].code} above)"
    rank = {"error": 2, "warning": 1}[fail_level]
    blocking = [d for d in diagnostics if d.severity.rank >= rank]
    if blocking:
        what = "error" if fail_level == "error" else "warning or error"
        plural = "s" if len(blocking) != 1 else ""
        return EXIT_FINDINGS, f"{len(blocking)} finding{plural} at {what} level (--fail-level {fail_level})"
    return None


# ---------------------------------------------------------------------------------- execution


def execute(argv: list[str]) -> int:
    """Run the command as it is (no shell), wait, and return its exit code as a shell reports it."""
    try:
        child = subprocess.Popen(argv)  # the user's own command, run unchanged
    except FileNotFoundError:
        print(f"trainlint: {argv[0]}: command not found", file=sys.stderr)
        return EXIT_NOT_FOUND
    except (PermissionError, IsADirectoryError, OSError) as exc:
        print(f"trainlint: {argv[0]}: cannot execute: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_CANNOT_EXECUTE
    with forwarded_signals(child):
        code = child.wait()
    return 128 - code if code < 0 else code


@contextmanager
def forwarded_signals(child: subprocess.Popen) -> Iterator[None]:
    """Pass SIGTERM (and SIGINT, see :func:`_terminal_delivered`) on to the child while it runs;
    trainlint itself stays alive to report the child's exit code."""
    previous = {}

    def forward(signum, _frame) -> None:
        if signum == signal.SIGINT and _terminal_delivered(child):
            return
        try:
            child.send_signal(signum)
        except (ProcessLookupError, OSError):
            pass  # already gone: wait() returns its status

    for name in FORWARDED_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            previous[signum] = signal.signal(signum, forward)
        except (ValueError, OSError):  # not the main thread, or not supported here
            continue
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _terminal_delivered(child: subprocess.Popen) -> bool:
    """True when a SIGINT came from the terminal (Ctrl-C) and so already reached the child: it is
    in trainlint's process group and that group is the terminal's foreground group. Forwarding it
    again would interrupt the child twice (uv run decides the same way)."""
    if not hasattr(os, "getpgid") or not hasattr(os, "tcgetpgrp"):
        return False
    try:
        own = os.getpgrp()
        if os.getpgid(child.pid) != own:
            return False
        for fd in (0, 1, 2):
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == own
    except OSError:
        return False
    return False
