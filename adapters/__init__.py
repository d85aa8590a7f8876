"""Formats and frameworks: DeepSpeed JSON (and the HF Trainer / accelerate forms of it),
Megatron-LM arguments and Megatron-Bridge ConfigContainers (both on the Megatron engine), GPT-NeoX YAML.

Each adapter turns one file (and what it references) into Documents with positions and one
TrainingSpec per training run (the interface: :mod:`trainlint.adapters.base`). Each framework
(:class:`trainlint.core.framework.Framework`) holds everything of one framework: its adapters, engine
semantics, layout search space, launch forms and capabilities.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainlint.adapters.base import Adapter

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.core.framework import Framework


def builtin_adapters() -> list[Adapter]:
    """The adapters trainlint ships, in tie-break order."""
    from trainlint.adapters.bridge.adapter import BridgeAdapter
    from trainlint.adapters.deepspeed.adapter import DeepSpeedAdapter
    from trainlint.adapters.hf.launch_script import HFLaunchScriptAdapter
    from trainlint.adapters.hf.trainer_yaml import HFTrainerYamlAdapter
    from trainlint.adapters.megatron import MegatronAdapter
    from trainlint.adapters.neox.detect import NeoXAdapter

    return [DeepSpeedAdapter(), HFTrainerYamlAdapter(), NeoXAdapter(), MegatronAdapter(), HFLaunchScriptAdapter(),
            BridgeAdapter()]


def builtin_frameworks() -> list[Framework]:
    """The frameworks trainlint ships (registered by :mod:`trainlint.builtin` through the
    ``trainlint_frameworks`` hook, as a plugin registers its own)."""
    from trainlint.adapters.deepspeed.framework import DeepSpeedFramework
    from trainlint.adapters.megatron.framework import MegatronFramework
    from trainlint.adapters.neox.framework import NeoXFramework

    return [DeepSpeedFramework(), MegatronFramework(), NeoXFramework()]
