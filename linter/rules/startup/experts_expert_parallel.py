"""TL109: number of experts not divisible by expert-parallel size (or EP > 1 without experts)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_CORE
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    from_checkpoint,
    partial_args,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also, _experts


class ExpertsExpertParallel(Rule):
    """## What it does
    With expert parallelism (EP > 1), checks that the model has experts and that their number is
    divisible by EP.

    ## Why is this bad?
    Each EP rank holds a whole share of the experts; Megatron stops in argument validation.

    ## Example
    `--num-experts 6 --expert-model-parallel-size 4`

    ## Fix
    Use an EP that divides the number of experts.

    ## References
    - Megatron-LM `megatron/training/arguments.py:1655-1658` @ d98e8a6 and
      `megatron/core/transformer/transformer_config.py:1595-1596`: "Number of experts should be a
      multiple of expert model parallel_size."
    """

    code = "TL109"
    release_dependent = False
    name = "experts-expert-parallel"
    default_severity = Severity.ERROR
    summary = "number of experts not divisible by expert-parallel size (or EP > 1 without experts)"
    requires = frozenset({CAP_MEGATRON_CORE})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        ep_v, experts_v = spec.parallel.expert, spec.model.num_experts
        ep = as_int(ep_v)
        if ep is None or ep <= 1 or from_checkpoint(spec):
            return
        experts = _experts(experts_v)
        if experts_v is None and not as_bool(spec.engine.deepspeed_flag) \
                and not partial_args(spec):
            yield Finding(f"expert parallel size {ep} but no --num-experts: Megatron stops (\"num_experts must be "
                          "non None to use expert model parallelism\")", at=ep_v, fix="give --num-experts or drop expert parallelism")
        elif experts is not None and experts % ep:
            yield Finding(f"{experts} experts are not divisible by expert parallel size {ep}; Megatron stops: "
                          "\"Number of experts should be a multiple of expert model parallel_size.\"",
                          at=ep_v, also=_also((experts_v, "number of experts")),
                          fix=f"use an expert parallel size that divides {experts}")
