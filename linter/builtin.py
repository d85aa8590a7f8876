"""trainlint's own contributions, registered as a plugin through the public hooks: the adapters, the
shipped GPUs (``gpus.json``) and model presets (``models.json``); the rules are one bundle per rule
family, each its own plugin (:data:`trainlint.project.plugins.BUILTIN_PLUGINS`). Nothing of them is read
another way: a session's GPU table and model presets are what these hooks and the plugins' return."""

from __future__ import annotations

from trainlint import hookimpl


@hookimpl
def trainlint_adapters():
    from trainlint.adapters import builtin_adapters

    return builtin_adapters()


@hookimpl
def trainlint_gpus():
    from trainlint.presets.catalog import load_gpus

    return list(load_gpus().values())


@hookimpl
def trainlint_model_presets():
    from trainlint.presets.models import load_model_presets

    return list(load_model_presets().values())


@hookimpl
def trainlint_frameworks():
    from trainlint.adapters import builtin_frameworks

    return builtin_frameworks()
