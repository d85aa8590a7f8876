"""Format adapters: DeepSpeed JSON, Megatron-LM arguments, GPT-NeoX YAML.

Each adapter turns one file (and what it references) into Documents with positions and one
TrainingSpec per training run. See :mod:`trainlint.adapters.base` for the interface.
"""

from __future__ import annotations

from trainlint.adapters.base import Adapter


def builtin_adapters() -> list[Adapter]:
    """The adapters trainlint ships, in tie-break order."""
    from trainlint.adapters.deepspeed import DeepSpeedAdapter
    from trainlint.adapters.hf_launch import HFLaunchScriptAdapter
    from trainlint.adapters.hf_yaml import HFTrainerYamlAdapter
    from trainlint.adapters.megatron import MegatronAdapter
    from trainlint.adapters.neox_detect import NeoXAdapter

    return [DeepSpeedAdapter(), HFTrainerYamlAdapter(), NeoXAdapter(), MegatronAdapter(), HFLaunchScriptAdapter()]
