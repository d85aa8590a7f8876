"""What the cross-framework start-up rules share: the places a finding also points at, the text edits of
a value or global-batch fix, the GPU a run declares."""

from __future__ import annotations


from trainlint.core.provenance import Value
from trainlint.rules.startup.derive import (
    as_int,
    as_str,
)
from trainlint.core.spec import TrainingSpec




def _also(*pairs: tuple[Value | str | None, str]) -> tuple[tuple[Value | str | None, str], ...]:
    return tuple((t, n) for t, n in pairs if t is not None)


def _mamba(spec: TrainingSpec) -> bool:
    return as_str(spec.model.architecture) in ("mamba", "hybrid")


def _experts(value: Value | None) -> int | None:
    """Experts per MoE layer; Megatron-DeepSpeed's --num-experts is a list (one per layer group)."""
    if value is None:
        return None
    raw = value.value
    if isinstance(raw, list):
        nums = [x for x in raw if isinstance(x, int) and not isinstance(x, bool)]
        return max(nums) if nums else None
    return as_int(value)
