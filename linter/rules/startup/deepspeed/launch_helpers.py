"""What the DeepSpeed rules from the launch-check audit share (numbers as DeepSpeed's config model reads them)."""

from __future__ import annotations


from trainlint.core.framework import CAP_DEEPSPEED_CONFIG
from trainlint.core.provenance import Value
from trainlint.rules.startup.derive import (
    as_number,
)


DS = frozenset({CAP_DEEPSPEED_CONFIG})  # the run's settings are a DeepSpeed config


def _number(value: Value | None) -> float | None:
    """A number, or a numeric string as pydantic's lax mode reads it (``"3"``)."""
    n = as_number(value)
    if n is not None or value is None or not isinstance(value.value, str):
        return n
    try:
        return float(value.value)
    except ValueError:
        return None
