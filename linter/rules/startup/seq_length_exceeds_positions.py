"""TL107: max_position_embeddings smaller than seq_length"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_int,
    from_checkpoint,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also


class SeqLengthExceedsPositions(Rule):
    """## What it does
    Checks `max_position_embeddings >= seq_length`.

    ## Why is this bad?
    Megatron-LM and GPT-NeoX stop in argument validation.

    ## Example
    ```yaml
    seq_length: 4096
    max_position_embeddings: 2048
    ```

    ## Fix
    Raise `max_position_embeddings` to at least the sequence length.

    ## References
    - Megatron-LM `megatron/training/arguments.py:1353-1356` @ d98e8a6: "max_position_embeddings
      (...) must be greater than or equal to seq_length (...)".
    - GPT-NeoX `megatron/neox_arguments/arguments.py:1257-1266` @ ea7aefd: "max_position_embeddings
      must be bigger or equal seq_length".
    """

    code = "TL107"
    release_dependent = False
    name = "seq-length-exceeds-positions"
    default_severity = Severity.ERROR
    summary = "max_position_embeddings smaller than seq_length"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        seq_v, pos_v = spec.model.seq_length, spec.model.max_position_embeddings
        seq, pos = as_int(seq_v), as_int(pos_v)
        if seq is None or pos is None or pos >= seq or from_checkpoint(spec):
            return
        yield Finding(f"max_position_embeddings {pos} < seq_length {seq}; the framework stops: "
                      "\"max_position_embeddings must be greater than or equal to seq_length\"",
                      at=pos_v, also=_also((seq_v, "sequence length")),
                      fix=f"set max_position_embeddings to at least {seq}")
