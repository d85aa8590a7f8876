"""Re-derive ``spec.engine`` after a spec was changed in memory (a suggested layout, a candidate fix):
the same framework rules each adapter applies when it reads the file."""

from __future__ import annotations

from trainlint.spec import TrainingSpec


def set_engine(spec: TrainingSpec) -> None:
    if spec.framework == "deepspeed":
        from trainlint.adapters.deepspeed import set_engine as deepspeed
        deepspeed(spec)
    elif spec.framework == "neox":
        from trainlint.adapters.neox import set_engine as neox
        neox(spec)
    elif spec.framework == "megatron":
        from trainlint.adapters.megatron.spec_build import set_engine as megatron
        megatron(spec)

