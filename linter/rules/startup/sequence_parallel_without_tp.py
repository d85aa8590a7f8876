"""TL106: sequence parallelism enabled with tensor parallel size 1 (silently disabled / no effect)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS, CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.core.provenance import Origin
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    defaulted_in_partial,
    from_checkpoint,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also


class SequenceParallelWithoutTP(Rule):
    """## What it does
    Warns when sequence parallelism is switched on with tensor (model) parallel size 1.

    ## Why is this bad?
    Sequence parallelism shards along the tensor-parallel group; without one it does nothing.
    Megatron silently turns it off (Megatron-Core used directly refuses it); GPT-NeoX ignores it.
    The run is not what the config says, and memory estimates that count on it are wrong.

    ## Example
    `--sequence-parallel --tensor-model-parallel-size 1`

    ## Fix
    Remove the flag, or use tensor parallelism > 1.

    ## References
    - Megatron-LM `megatron/training/arguments.py:1433-1439` @ d98e8a6: warning "Disabling sequence
      parallelism because tensor model parallelism is disabled";
      `megatron/core/model_parallel_config.py:502-504`: "Cannot use sequence parallelism without
      tensor parallelism".
    - GPT-NeoX `megatron/neox_arguments/neox_args.py:84-89` @ ea7aefd (sequence_parallel shards
      across the model-parallel group: no effect at model_parallel_size 1).
    """

    code = "TL106"
    release_dependent = False
    name = "sequence-parallel-without-tp"
    default_severity = Severity.WARNING
    summary = "sequence parallelism enabled with tensor parallel size 1 (silently disabled / no effect)"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        sp, tp_v = spec.parallel.sequence_parallel, spec.parallel.tensor
        tp = as_int(tp_v)
        if defaulted_in_partial(spec, tp_v) or from_checkpoint(spec):
            return
        if sp is not None and as_bool(sp) and sp.provenance.origin is Origin.FILE and tp is not None and tp <= 1:
            what = ("Megatron disables it (\"Disabling sequence parallelism because tensor model parallelism is "
                    "disabled\")" if CAP_MEGATRON_ARGUMENTS in capabilities(spec) else "NeoX shards nothing with model_parallel_size 1")
            yield Finding(f"sequence parallelism is on with tensor parallel size {tp}: {what}",
                          at=sp, also=_also((tp_v, "tensor parallel size")),
                          fix="remove sequence parallelism or use tensor parallel size > 1")
