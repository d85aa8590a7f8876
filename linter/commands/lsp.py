"""``trainlint lsp``: the language server over stdio (needs ``pip install 'trainlint[lsp]'``)."""

from __future__ import annotations

import argparse
import sys

from trainlint.exit_codes import EXIT_ERROR


def register(sub: argparse._SubParsersAction) -> None:
    lsp = sub.add_parser("lsp", help="run the language server over stdio (for editors)",
                         description="Language server over stdio: diagnostics and hover for editors. "
                                     "Needs the optional extra: pip install 'trainlint[lsp]'.")
    lsp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from trainlint.lsp.server import main
    except ImportError as exc:  # pygls / lsprotocol not installed
        print(f"trainlint: error: the language server needs pygls ({exc}); pip install 'trainlint[lsp]'",
              file=sys.stderr)
        return EXIT_ERROR
    return main()
