"""The hooks a trainlint plugin can implement.

Built-in rules, adapters, GPUs and model presets are registered through these same hooks,
by the plugins in :mod:`trainlint.builtin`. A team's plugin is a module (or a package with an
entry point in the ``trainlint`` group, or a file named in ``[tool.trainlint] plugins``) that
implements any of them with ``@trainlint.hookimpl``. Hooks are called with keyword arguments
only; an implementation may accept fewer arguments than the spec names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.base import Adapter

hookspec = pluggy.HookspecMarker("trainlint")


# -- what a plugin contributes ---------------------------------------------------------------

@hookspec
def trainlint_rules() -> list[type]:
    """Return the rule classes this plugin provides.

    Each class derives from :class:`trainlint.rules.Rule` and declares ``code``, ``name``,
    ``default_severity``, ``summary`` and its documentation. Import rule modules inside the
    implementation, not at module top, so that start-up stays fast.

    :return: a list of rule classes (not instances).
    """


@hookspec
def trainlint_adapters() -> list[Adapter]:
    """Return adapter instances for config formats this plugin reads.

    A file is claimed by the adapter whose ``sniff()`` scores highest, so a plugin adapter
    for a new format (an accelerate YAML, a NeMo config) takes only files it recognises.

    :return: a list of :class:`trainlint.adapters.base.Adapter` instances.
    """


@hookspec
def trainlint_gpus() -> list[dict[str, Any]]:
    """Return GPU catalog entries (same fields as trainlint's own ``gpus.json`` entries).

    An entry whose ``id`` equals a built-in one replaces it.

    :return: a list of dicts with at least ``id``, ``memory_gib`` and ``bf16_tflops``.
    """


@hookspec
def trainlint_model_presets() -> list[dict[str, Any]]:
    """Return model presets usable with ``--model NAME`` (same fields as ``models.json``).

    :return: a list of dicts with at least ``id``, ``num_layers``, ``hidden_size`` and
        ``num_attention_heads``.
    """


# -- being told about the run ----------------------------------------------------------------

@hookspec(historic=True)
def trainlint_configure(config: Any) -> None:
    """Called once the project config is read, before any file is checked.

    Historic: a plugin registered later (a local plugin file) is still called.

    :param config: the :class:`trainlint.config.ProjectConfig` in force.
    """
