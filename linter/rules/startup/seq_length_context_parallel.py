"""TL108: seq_length not a multiple of 2 x context-parallel size"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_CORE
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_int,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also


class SeqLengthContextParallel(Rule):
    """## What it does
    With context parallelism (CP > 1), checks that the sequence length is a multiple of 2 x CP.

    ## Why is this bad?
    Megatron splits each sequence into 2 x CP chunks (for load balance under the causal mask)
    and stops in argument validation when they are not whole.

    ## Example
    `--seq-length 4000 --context-parallel-size 4` (4000 % 8 != 0)

    ## Fix
    Use a sequence length that is a multiple of 2 x CP.

    ## References
    - Megatron-LM `megatron/training/arguments.py:1335-1338` @ d98e8a6: "seq-length should be a
      multiple of 2 * context-parallel-size if context-parallel-size > 1."
    """

    code = "TL108"
    release_dependent = False
    name = "seq-length-context-parallel"
    default_severity = Severity.ERROR
    summary = "seq_length not a multiple of 2 x context-parallel size"
    requires = frozenset({CAP_MEGATRON_CORE})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        seq_v, cp_v = spec.model.seq_length, spec.parallel.context
        seq, cp = as_int(seq_v), as_int(cp_v)
        if seq is None or cp is None or cp <= 1 or seq % (2 * cp) == 0:
            return
        yield Finding(f"seq_length {seq} is not a multiple of 2 x context parallel size {cp} = {2 * cp}; Megatron stops: "
                      "\"seq-length should be a multiple of 2 * context-parallel-size\"",
                      at=seq_v, also=_also((cp_v, "context parallel size")),
                      fix=f"use a sequence length that is a multiple of {2 * cp}")
