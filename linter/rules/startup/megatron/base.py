"""What every Megatron-LM start-up rule shares: runs on current Megatron-LM only, and the
source files its references quote."""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs, is_current
from trainlint.spec import TrainingSpec

ARGS = "megatron/training/arguments.py"
TCFG = "megatron/core/transformer/transformer_config.py"
CALC = "megatron/core/num_microbatches_calculator.py"


class MegatronRule(Rule):
    """Runs :meth:`findings` on current Megatron-LM runs only."""

    frameworks = ("megatron",)

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if not is_current(spec):
            return
        yield from self.findings(MegatronArgs(spec), ctx)

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:  # pragma: no cover
        raise NotImplementedError
