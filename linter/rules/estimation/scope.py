"""Which specs the estimate describes well enough for a rule to act on it.

The estimator models a decoder-only transformer (dense or MoE) whose parameters all train. A run
that departs from that in a way that moves memory or time a lot (Mamba layers in a hybrid
pattern, a frozen language model, a vision encoder the config only names) still gets an
estimate, but a finding built on it would be a guess: the rules stay silent and TL900 says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trainlint.spec import TrainingSpec


@dataclass(frozen=True)
class Unmodelled:
    setting: str
    """The setting (or entry point) as written."""
    why: str
    """What the estimate would get wrong."""


# Megatron-LM settings (argparse dests) whose models the estimator does not describe.
_MEGATRON_SETTINGS = (
    ("hybrid_layer_pattern", "--hybrid-layer-pattern", "Mamba layers of a hybrid model are not modelled"),
    ("hybrid_override_pattern", "--hybrid-override-pattern", "Mamba layers of a hybrid model are not modelled"),
    ("freeze_LM", "--freeze-LM", "a frozen language model keeps no gradients or optimizer states"),
    ("use_megatron_fsdp", "--use-megatron-fsdp", "Megatron-FSDP's sharding of parameters and gradients is not modelled"),
    ("use_torch_fsdp2", "--use-torch-fsdp2", "PyTorch FSDP2's sharding of parameters and gradients is not modelled"),
)

# Entry points that train a vision encoder beside (or instead of) the language model.
_MULTIMODAL_ENTRY = re.compile(r"(^|/)(pretrain_vlm|pretrain_mimo|multimodal/train|mimo/train|pretrain_vision_\w+)\.py$")
# Entry points that do not train: text generation servers, offline inference, quantisation and
# export (Megatron's tools/ and examples/). They hold no gradients or optimizer states and size
# their batches differently; a training estimate of them is wrong by that much.
_NOT_TRAINING_ENTRY = re.compile(
    r"(^|[/.])(\w*(generat|inference|text_gen|ptq|quantiz|export|convert|evaluat)\w*)(\.py)?$", re.IGNORECASE)


def _truthy(value: Any) -> bool:
    return value not in (None, False, "", 0, "false", "False")


def unmodelled(spec: TrainingSpec) -> list[Unmodelled]:
    """What in ``spec`` the estimator does not model (empty when the estimate can be trusted)."""
    out: list[Unmodelled] = []
    if spec.framework == "megatron":
        for key, flag, why in _MEGATRON_SETTINGS:
            setting = spec.settings.get(key)
            if setting is not None and _truthy(setting.value):
                out.append(Unmodelled(flag, why))
        entry = spec.entry_point or ""
        if _MULTIMODAL_ENTRY.search(entry):
            out.append(Unmodelled(entry, "the vision encoder and multimodal inputs are not modelled"))
        elif _NOT_TRAINING_ENTRY.search(entry) and "pretrain" not in entry.rsplit("/", 1)[-1]:
            out.append(Unmodelled(entry, "it does not train (generation, inference, quantisation or export): "
                                         "the estimate is of a training step"))
    return out


def usable_estimate(spec: TrainingSpec, estimate: Any) -> Any:
    """``estimate`` when a rule may act on it: made (not MissingInputs) and for a spec the
    estimator models; None otherwise."""
    if not getattr(estimate, "ok", False) or unmodelled(spec):
        return None
    return estimate
