"""The ``trainlint`` command line.

Exit codes follow ruff: 0 no error-level finding, 1 at least one, 2 usage error, bad project
config, or an internal error (TL999), even with ``--exit-zero``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from typing import Any, Sequence

from trainlint import __version__
from trainlint.commands import COMMAND_MODULES
from trainlint.core.exit_codes import EXIT_ERROR


def _terminal_width() -> int:
    """``shutil.get_terminal_size().columns``, as argparse asks it, without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter with the terminal width found without shutil: argparse builds a
    formatter for every ``add_argument`` (to check the metavar), and the first one imports
    shutil (with bz2, lzma, zlib), ~2 ms of every start."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None, **more) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_width() - 2 if width is None else width, **more)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser with :class:`_HelpFormatter`; subcommand parsers are of the same class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def _same(message: str) -> str:
    return message


def _plural(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


_catalog_checked = False


def _argparse_without_catalog() -> None:
    """argparse translates every message it builds with ``gettext``, which searches the locale folders
    for a catalog on each call (a dozen calls, ~5 M instructions of a cold check, issue 33). When the
    search finds no catalog for the current domain and languages, every translation is the message
    itself (and the plural the English rule): argparse then gets those two functions, the same answers
    without the search. The search runs once per process, as the first call would have run it."""
    global _catalog_checked
    if _catalog_checked:
        return
    _catalog_checked = True
    import gettext

    domain = gettext.textdomain()
    if gettext.find(domain, gettext.bindtextdomain(domain)) is None:
        namespace = vars(argparse)  # its module globals, which argparse's functions read at each call
        namespace["_"] = _same
        namespace["ngettext"] = _plural


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with ``only`` (a command name) just that command's subparser: the
    other command modules are then not imported at all, which keeps start-up fast."""
    _argparse_without_catalog()
    parser = _Parser(
        prog="trainlint",
        description="Lint large-model training configs (DeepSpeed JSON, Megatron-LM arguments, "
                    "GPT-NeoX YAML) before launch.",
    )
    parser.add_argument("--version", action="version", version=f"trainlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES if only not in COMMAND_MODULES else (only,):
        importlib.import_module(f"trainlint.commands.{name}").register(sub)
    return parser


GC_THRESHOLD = (100_000, 50, 100)
"""Garbage-collector thresholds while a command runs. trainlint builds many small objects that
live as long as the run (a span for every key and value, a spec and findings per file) and makes
little cyclic garbage: with the default thresholds (a collection every 700 allocations) the
collector takes ~7% of a check over many files, and some of start-up. Memory stays the same."""


EXIT_PIPE_CLOSED = 128 + 13
"""The reader of the output went away (``trainlint rules | head -1``): the exit status of a
process that SIGPIPE ends, as shells report for ``yes | head``."""


EXIT_INTERRUPTED = 128 + 2
"""Ctrl-C (SIGINT): the status a shell reports for a process SIGINT ends, without a traceback."""


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None or sys.stderr is None:  # started with stdout or stderr closed (>&-)
        _report_closed_stream()
        return EXIT_ERROR
    _no_encoding_errors()
    saved_stderr = sys.stderr
    sys.stderr = _PrintableStream(sys.stderr)
    previous = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    from trainlint.core import interrupt

    try:
        with interrupt.installed():
            code = _main(argv)
            try:
                sys.stdout.flush()  # here, not at interpreter exit, so that a closed pipe is handled below
            except ValueError:  # already closed by the command (the language server's `exit`)
                pass
            # a Ctrl-C whose exception Python dropped (raised in a weakref callback or a __del__)
            # still ends the command as a Ctrl-C
            interrupt.stop_if_received()
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        _silence_stdout()
        return EXIT_INTERRUPTED
    except OSError as exc:
        # the output could not be written (a full disk: /dev/full, ENOSPC; a closed descriptor: EBADF)
        if not _is_output_error(exc):
            raise
        _silence_stdout()
        try:
            print(f"trainlint: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        return EXIT_ERROR
    finally:
        if isinstance(sys.stderr, _PrintableStream):
            sys.stderr = saved_stderr
        if argv is None:
            _before_exit()
        gc.set_threshold(*previous)  # in-process callers (tests) get their own settings back


def _before_exit() -> None:
    """The process's own command (the console script, ``python -m trainlint``) is over and the
    interpreter exits next: every object of the run is moved out of the garbage collector's sight
    (``gc.freeze``). Else the exit's last collection (and the one the restored thresholds start)
    walks every module, class, span and finding still alive, all of which the process's end gives
    back to the system anyway: ~13 ms of CPU of a one-file JSON check, ~23 ms of a Megatron
    script's (benchmarks/check_speed.py). The output is flushed already and trainlint closes the
    files it opens, so nothing waits on that collection. An in-process caller (tests, ``main(argv)``)
    keeps a collectable heap."""
    gc.freeze()


class _PrintableStream:
    """stderr as trainlint writes it: each control or bidi character of a message shown as an escape
    (line breaks kept: they separate trainlint's own messages). Messages quote file names, keys and
    values; whatever a message builds from them, no escape sequence reaches the terminal or the CI
    log raw. (Line breaks inside a quoted value are escaped where the message is made:
    ConfigError, the renderers.)"""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from trainlint.core.escape import printable

        self._stream.write(printable(text, keep="\n"))
        return len(text)

    def write_rendered(self, text: str) -> int:
        """Text a renderer made already printable (the findings of ``trainlint run``), with its own
        colour codes: written as it is, or the colours would be shown as ``\\e[1m``."""
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _is_output_error(exc: OSError) -> bool:
    import errno

    return exc.errno in (errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EINVAL)


def _no_encoding_errors() -> None:
    """A character the terminal's encoding lacks (or a lone surrogate from a non-UTF-8 file name)
    is written as a backslash escape instead of raising UnicodeEncodeError mid-report."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass


def _report_closed_stream() -> None:
    import os

    for fd in (2, 1):
        try:
            os.write(fd, b"trainlint: error: standard output or standard error is closed; nothing can be reported\n")
            return
        except OSError:
            continue


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's final flush does not complain again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (tests capture it)
        pass


def _main(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    # The first word names the command (the top level has only --help and --version); anything
    # else (no command, an unknown one, --help) gets the full parser and its usual messages.
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    from trainlint.files import containment

    # `source` and --deepspeed_config follow the project config this command uses (--config /
    # --isolated), not just the one found above each script
    containment.configure(getattr(args, "config", None), getattr(args, "isolated", False),
                          containment.TrustGiven(allow_flag=bool(getattr(args, "allow_plugins", False))))
    try:
        return args.func(args)
    finally:
        # The choice is this command's only: a caller that goes on in the same process (a test, a
        # tool embedding `main`, the language server started after it) reads the next files with
        # the project config found above each of them again, not with a --config whose folder
        # would now confine every `--deepspeed_config` beside another script.
        containment.configure(None, False)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
