"""TL192: deepspeed: false, which GPT-NeoX refuses (it runs only with DeepSpeed)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_NEOX_ARGUMENTS
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs
from trainlint.rules.startup.releases import ReleaseBoundRule, Releases
from trainlint.core.spec import TrainingSpec


class DeepSpeedDisabled(ReleaseBoundRule):
    """## What it does
    Reports `deepspeed: false`.

    ## Why is this bad?
    GPT-NeoX runs only with DeepSpeed: `validate_values` returns False for it ("the current codebase
    assumes running with deepspeed only") and NeoXArgs stops with "NeoXArgs values cannot be validated".

    ## Example
    ```yaml
    deepspeed: false
    ```

    ## Fix
    Remove the key (its default is true).

    ## References
    * `megatron/neox_arguments/arguments.py:1211-1213@ea7aefd`: `if not self.deepspeed: return False`
    * `megatron/neox_arguments/arguments.py:156-160@ea7aefd`: "NeoXArgs values cannot be validated"
    """

    code = "TL192"
    name = "neox-deepspeed-disabled"
    default_severity = Severity.ERROR
    summary = "deepspeed: false, which GPT-NeoX refuses (it runs only with DeepSpeed)"
    requires = frozenset({CAP_NEOX_ARGUMENTS})
    releases = Releases("neox")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        a = NeoXArgs(spec)
        if a.given("deepspeed") and a.get("deepspeed") is False:
            yield Finding("deepspeed: false: GPT-NeoX runs only with DeepSpeed and stops with \"NeoXArgs values cannot "
                          "be validated\"", at="settings:deepspeed", fix="remove the key")
