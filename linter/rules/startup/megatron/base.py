"""What every Megatron-LM start-up rule shares: runs on current Megatron-LM only, and the
source files its references quote."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs, is_current
from trainlint.core.spec import TrainingSpec

ARGS = "megatron/training/arguments.py"
TCFG = "megatron/core/transformer/transformer_config.py"
CALC = "megatron/core/num_microbatches_calculator.py"


class MegatronRule(Rule):
    """Runs :meth:`findings` on current Megatron-LM runs only."""

    requires = frozenset({CAP_MEGATRON_ARGUMENTS})
    release_dependent = True
    """Each quotes ``validate_args`` / Megatron-Core's config checks at trainlint's commit; an older
    release or a fork may not make it (the engine lowers it to a warning when the release is assumed)."""

    gate = staticmethod(is_current)
    """Not a current Megatron-LM run (a Megatron-DeepSpeed script, an old copy): :meth:`check` yields nothing."""

    core_config_check: bool = False
    """The check is Megatron-Core's own (``TransformerConfig`` / ``ModelParallelConfig`` / the
    schedules), made whatever builds the configs; False: Megatron-LM's ``validate_args``, which a run
    that builds the configs directly (``TrainingSpec.core_configs_only``, Megatron-Bridge) never calls."""

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if spec.core_configs_only and not self.core_config_check:
            return iter(())
        # the rule's own generator, not one wrapped in another (~25 rules a run)
        args = _arguments(spec, ctx.shared)
        if args is None:
            return iter(())
        return self.findings(args, ctx)

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:  # pragma: no cover
        raise NotImplementedError


def _arguments(spec: TrainingSpec, shared: dict) -> MegatronArgs | None:
    """The run's arguments (None: not a current Megatron-LM run), made once for the ~25 rules of
    the run: ``shared`` is the engine's dict for the rules of one spec. A MegatronArgs only reads
    its spec, so sharing it changes nothing but the time."""
    kept = shared.get(_SHARED_KEY)
    if kept is not None and kept[0] is spec:
        return kept[1]
    args = MegatronArgs(spec) if is_current(spec) else None
    shared[_SHARED_KEY] = (spec, args)
    return args


_SHARED_KEY = "megatron.arguments"

