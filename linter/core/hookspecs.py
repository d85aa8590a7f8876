"""The hooks a trainlint plugin can implement.

Built-in adapters, GPUs and model presets are registered through these same hooks, by the plugin in
:mod:`trainlint.builtin` (the GPUs and presets of the catalog files ``gpus.json`` and ``models.json``
of the ``trainlint.data`` package), and the built-in rules by one plugin per rule family (each family
package's ``trainlint_rules``; :mod:`trainlint.rules.codes`).
A team's plugin is a module (or a package with an entry point in the ``trainlint`` group, or a
file named in ``[tool.trainlint] plugins``) that implements any of them with ``@trainlint.hookimpl``.
Hooks are called with keyword arguments only; an implementation may accept fewer arguments than the spec names.

Every hook is called once per project session (:func:`trainlint.project.session.open_session`), so
``check``, ``run``, ``estimate``, ``suggest``, ``plan`` and the language server all see the same
contributions. A hook that raises, or returns an entry that cannot be built, is reported as
one TL998 naming the plugin; the other plugins' contributions still count. So is an implementation
of a hook not specified here (``trainlint_rulez``), which would otherwise never be called (unless
it is marked ``@trainlint.hookimpl(optionalhook=True)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainlint.core.hook_markers import HookspecMarker

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.base import Adapter
    from trainlint.core.framework import Framework

hookspec = HookspecMarker("trainlint")
"""As ``pluggy.HookspecMarker("trainlint")`` (pluggy is imported only when a manager is made)."""


# -- what a plugin contributes ---------------------------------------------------------------

@hookspec
def trainlint_rules() -> list[type]:
    """Return the rule classes this plugin provides.

    Each class derives from :class:`trainlint.rules.Rule` and declares ``code``, ``name``,
    ``default_severity``, ``summary`` and its documentation. Import rule modules inside the
    implementation, not at module top, so that start-up stays fast. Or return a
    :class:`trainlint.rules.DeferredRule` per rule (its code, name, module and the capabilities it
    requires): its module is imported only when a check selects the rule for a run that has them,
    as trainlint's own rules are.

    :return: a list of rule classes (not instances) or rule declarations.
    """


@hookspec
def trainlint_adapters() -> list[Adapter]:
    """Return adapter instances for config formats this plugin reads.

    A file is claimed by the adapter whose ``sniff()`` scores highest, so a plugin adapter
    for a new format (an accelerate YAML, a NeMo config) takes only files it recognises.

    :return: a list of :class:`trainlint.adapters.base.Adapter` instances.
    """


@hookspec
def trainlint_frameworks() -> list[Framework]:
    """Return :class:`trainlint.core.framework.Framework` instances for the training frameworks this
    plugin knows: everything of one framework in one object (its formats' adapters, the
    capabilities its runs support, its engine semantics, its layout search space and how a layout
    change is written, its argument catalogs, its ``trainlint run`` launch forms, its own start-up
    rules). trainlint's DeepSpeed, Megatron-LM and GPT-NeoX are registered through this hook too
    (:mod:`trainlint.builtin`).

    A framework's ``name`` is the ``TrainingSpec.framework`` its adapters write; the core looks the
    run's framework up by it and never switches on a framework name. A framework's ``adapters()``
    are added to the session's adapters (after those of ``trainlint_adapters``, so an adapter both
    hooks return counts once); its ``rules()`` are registered as the rules of ``trainlint_rules`` are.
    A name registered twice is one TL998; the first registration stays. The contract a framework
    implements is the docstring of :mod:`trainlint.core.framework`.

    :return: a list of Framework instances.
    """


@hookspec
def trainlint_gpus() -> list[dict[str, Any]]:
    """Return GPU catalog entries (same fields as trainlint's own ``gpus.json`` entries), usable
    with ``--gpu ID``, ``gpu = "ID"`` in the project config, ``estimate --compare-gpus`` and
    ``plan``, and by the rules that read the target GPU (TL112, TL201).

    An entry whose ``id`` equals a shipped one replaces it; the project config's
    ``[tool.trainlint.gpus.<id>]`` tables replace both.

    :return: a list of dicts with at least ``id``, ``memory_gb`` and ``bf16_tflops`` (or
        ``fp16_tflops``); ``name`` defaults to the id.
    """


@hookspec
def trainlint_model_presets() -> list[dict[str, Any]]:
    """Return model presets usable with ``--model ID`` and ``model = "ID"`` (same fields as
    ``models.json``). An entry whose ``id`` equals a shipped one replaces it.

    :return: a list of dicts with at least ``id``, ``num_layers``, ``hidden_size``,
        ``num_attention_heads``, ``ffn_hidden_size`` and ``vocab_size``.
    """
