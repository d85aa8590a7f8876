"""trainlint's own contributions, registered as a plugin through the public hooks: the adapters, and
(in :mod:`trainlint.plugins`' list of built-ins) one rule bundle per rule family, each its own plugin."""

from __future__ import annotations

from trainlint import hookimpl


@hookimpl
def trainlint_adapters():
    from trainlint.adapters import builtin_adapters

    return builtin_adapters()
