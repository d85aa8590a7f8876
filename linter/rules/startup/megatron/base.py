"""What every Megatron-LM start-up rule shares: runs on current Megatron-LM only, and the
source files its references quote."""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Severity
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
        # the rule's own generator, not one wrapped in another (~25 rules a run)
        args = _arguments(spec, ctx.shared)
        if args is None:
            return iter(())
        other = spec.run.other_release
        if other is not None and other.value:
            return _for_another_release(self.findings(args, ctx), self.default_severity, tuple(other.value))
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


def _for_another_release(found: Iterator[Finding], severity: Severity, flags: tuple[str, ...]) -> Iterator[Finding]:
    """The findings on a script written for another release or a fork (its flags say so, and the
    release checked against is assumed): each rule here quotes a check of the assumed release,
    which the script's own release may not make. An error says that, as a warning (issue 17: a
    check speaks as an error only for a version known to make it)."""
    from dataclasses import replace

    from trainlint.adapters.megatron.flags import other_release_flags

    shown, more = other_release_flags(flags)
    for finding in found:
        if (finding.severity or severity) is Severity.ERROR:
            finding = replace(finding, severity=Severity.WARNING, message=(
                f"{finding.message}; the script's flags ({shown}{more}) are no arguments of the Megatron-LM release "
                "checked against (assumed: no framework source beside the config): it is written for another "
                "release or a fork, which may not make this check"))
        yield finding
