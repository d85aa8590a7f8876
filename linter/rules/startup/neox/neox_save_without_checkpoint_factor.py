"""TL187: save without checkpoint_factor or extra_save_iters"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule


class SaveWithoutCheckpointFactor(_NeoXRule):
    """## What it does
    Checks that a run that saves checkpoints (`save`) says when: `checkpoint_factor` or
    `extra_save_iters`.

    ## Why is this bad?
    NeoX's `validate_values` raises. (`save_interval` was renamed `checkpoint_factor`.)

    ## Example
    ```yaml
    save: checkpoints
    ```

    ## Fix
    Add `checkpoint_factor: 1000`.

    ## References
    * `megatron/neox_arguments/arguments.py:1278-1290@ea7aefd`: "NeoXArgs.validate_values() checkpoint_factor or
      extra_save_iters must be defined if save is defined"
    """

    code = "TL187"
    release_dependent = True
    behaviour_changed = "GPT-NeoX renamed save_interval to checkpoint_factor in #737 (2023)"
    name = "neox-save-without-checkpoint-factor"
    summary = "save without checkpoint_factor or extra_save_iters"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.get("save") is None or a.get("checkpoint_factor") is not None or a.get("extra_save_iters") is not None:
            return
        if not a.whole_run():
            return
        renamed = " (save_interval, given here, is the old name of checkpoint_factor)" if a.given("save_interval") else ""
        severity, version = None, ""
        target = a.spec.target
        if renamed and (target is None or not target.known):
            # Written for a NeoX before the rename (gpt-neox #737), where save_interval does this
            # job; whether the run's NeoX has the rename is not known (TL008 says the same, as a warning).
            severity = Severity.WARNING
            version = ("; on a GPT-NeoX from before the rename save_interval is enough, and which version this "
                       "config runs on is not known (upstream is assumed)")
        yield Finding(f"save is set without checkpoint_factor or extra_save_iters{renamed}: NeoX stops with "
                      "\"checkpoint_factor or extra_save_iters must be defined if save is defined\"" + version,
                      at=a.at("save"), also=((a.at("save_interval"), "old name of checkpoint_factor"),) if renamed else (),
                      fix="add checkpoint_factor", severity=severity)
