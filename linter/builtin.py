"""trainlint's own contributions, registered as a plugin through the public hooks."""

from __future__ import annotations

from trainlint import hookimpl


@hookimpl
def trainlint_adapters():
    from trainlint.adapters import builtin_adapters

    return builtin_adapters()


@hookimpl
def trainlint_rules():
    from trainlint.rules.builtin import builtin_rules

    return builtin_rules()


@hookimpl
def trainlint_frameworks():
    from trainlint.adapters import builtin_frameworks

    return builtin_frameworks()
