"""``trainlint lsp``: the language server over stdio (needs ``pip install 'trainlint[lsp]'``)."""

from __future__ import annotations

import argparse
import sys

from trainlint.core.exit_codes import EXIT_ERROR

INSTALL_HINT = "pip install 'trainlint[lsp]'"


def register(sub: argparse._SubParsersAction) -> None:
    lsp = sub.add_parser("lsp", help="run the language server over stdio (for editors)",
                         description="Language server over stdio: diagnostics and hover for editors "
                                     "(docs/editors.md). Needs the optional extra: " + INSTALL_HINT + ".")
    # vscode-languageclient appends --stdio when told to use the stdio transport
    lsp.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default and only transport)")
    lsp.add_argument("-v", "--verbose", action="store_true",
                     help="log every lint (with its time) and hover failure to stderr")
    lsp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError as exc:
        print(f"trainlint: error: the language server needs pygls and lsprotocol ({exc}); {INSTALL_HINT}",
              file=sys.stderr)
        return EXIT_ERROR
    from trainlint.lsp.server import main

    return main(verbose=args.verbose)
