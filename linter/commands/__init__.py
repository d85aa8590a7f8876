"""One module per ``trainlint`` subcommand.

Each module has ``register(subparsers)`` (adds its parser and sets ``func``) and keeps heavy
imports inside the function that runs the command, so ``trainlint check`` starts fast.
"""

COMMAND_MODULES = ("check", "rules", "estimate", "run", "suggest", "lsp", "plan")
