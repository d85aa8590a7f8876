"""The ``trainlint`` command line.

Exit codes follow ruff: 0 no error-level finding, 1 at least one, 2 usage error, bad project
config, or an internal error (TL999), even with ``--exit-zero``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from trainlint import __version__
from trainlint.commands import COMMAND_MODULES
from trainlint.exit_codes import EXIT_ERROR


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainlint",
        description="Lint large-model training configs (DeepSpeed JSON, Megatron-LM arguments, "
                    "GPT-NeoX YAML) before launch.",
    )
    parser.add_argument("--version", action="version", version=f"trainlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"trainlint.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
