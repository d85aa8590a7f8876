"""Formats and frameworks: DeepSpeed JSON (and the HF Trainer / accelerate forms of it),
Megatron-LM arguments, GPT-NeoX YAML.

Each adapter turns one file (and what it references) into Documents with positions and one
TrainingSpec per training run (the interface: :mod:`trainlint.adapters.base`). Each framework
(:class:`trainlint.framework.Framework`) holds everything of one framework: its adapters, engine
semantics, layout search space, launch forms and capabilities.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from trainlint.adapters.base import Adapter

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.framework import Framework, Frameworks
    from trainlint.spec import TrainingSpec


def builtin_adapters() -> list[Adapter]:
    """The adapters trainlint ships, in tie-break order."""
    from trainlint.adapters.deepspeed.adapter import DeepSpeedAdapter
    from trainlint.adapters.hf.launch_script import HFLaunchScriptAdapter
    from trainlint.adapters.hf.trainer_yaml import HFTrainerYamlAdapter
    from trainlint.adapters.megatron import MegatronAdapter
    from trainlint.adapters.neox.detect import NeoXAdapter

    return [DeepSpeedAdapter(), HFTrainerYamlAdapter(), NeoXAdapter(), MegatronAdapter(), HFLaunchScriptAdapter()]


def builtin_frameworks() -> list[Framework]:
    """The frameworks trainlint ships (registered by :mod:`trainlint.builtin` through the
    ``trainlint_frameworks`` hook, as a plugin registers its own)."""
    from trainlint.adapters.deepspeed.framework import DeepSpeedFramework
    from trainlint.adapters.megatron.framework import MegatronFramework
    from trainlint.adapters.neox.framework import NeoXFramework

    return [DeepSpeedFramework(), MegatronFramework(), NeoXFramework()]


_KNOWN: dict[str, Framework] = {}
"""Frameworks met in this process: the built-in ones, and every one a session's registry holds
(:func:`remember_frameworks`), for callers that have a spec but no session (a library call, the
layout search's candidate specs)."""


def remember_frameworks(frameworks: Sequence[Framework]) -> None:
    """Make ``frameworks`` (a session's, plugin frameworks included) known to :func:`framework_of`."""
    for framework in frameworks:
        _KNOWN.setdefault(framework.name, framework)


def known_frameworks() -> list[Framework]:
    """The frameworks known to this process (the built-in ones, and those of the sessions opened)."""
    if not _KNOWN:
        remember_frameworks(builtin_frameworks())
    return list(_KNOWN.values())


def framework_of(spec: TrainingSpec | str, frameworks: Frameworks | None = None) -> Framework:
    """The Framework of ``spec``'s run (or of a framework name): among ``frameworks`` (the
    session's), else among those known to this process; the neutral Framework for a run no
    framework names (a plugin format without a framework object)."""
    from trainlint.framework import NEUTRAL

    name = spec if isinstance(spec, str) else spec.framework
    if frameworks is not None:
        found = frameworks.by_name.get(name)
        if found is not None:
            return found
    if not _KNOWN:
        remember_frameworks(builtin_frameworks())
    return _KNOWN.get(name, NEUTRAL)  # never a family of known_frameworks() missing: builtins come first
