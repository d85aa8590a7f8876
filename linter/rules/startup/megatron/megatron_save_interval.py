"""TL164: --save without a positive --save-interval, or a retain interval not a multiple of it"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class SaveInterval(MegatronRule):
    """## What it does
    Checks that a run that saves checkpoints (`--save`) gives a positive `--save-interval`, and that
    `--save-retain-interval` is a positive multiple of it.

    ## Why is this bad?
    `validate_args` asserts these (bare assertions, no message): the job stops before training.

    ## Example
    ```bash
    pretrain_gpt.py ... --save /checkpoints/run1
    ```

    ## Fix
    Add `--save-interval N`.

    ## References
    * `megatron/training/arguments.py:1361-1367@d98e8a6`: `if args.save is not None: assert args.save_interval
      is not None; assert args.save_interval > 0; ... assert args.save_retain_interval % args.save_interval == 0`
    """

    code = "TL164"
    behaviour_changed = "Megatron-LM's 2019 releases defaulted --save-interval to 5000; core_v0.4.0 and later default it to None"
    name = "megatron-save-interval"
    summary = "--save without a positive --save-interval, or a retain interval not a multiple of it"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.given("save") or not a.known("save_interval", "save_retain_interval"):
            return
        interval, retain = a.get("save_interval"), a.get("save_retain_interval")
        if interval is None:
            yield Finding("--save without --save-interval: Megatron-LM's assertion `save_interval is not None` fails",
                          at=a.at("save"), fix="add --save-interval")
            return
        if isinstance(interval, int) and interval <= 0:
            yield Finding(f"--save-interval {interval}: Megatron-LM's assertion `save_interval > 0` fails",
                          at=a.at("save_interval"))
            return
        if isinstance(retain, int) and isinstance(interval, int) and (retain <= 0 or retain % interval):
            yield Finding(f"--save-retain-interval {retain} is not a positive multiple of --save-interval {interval}: "
                          "Megatron-LM's assertion `save_retain_interval % save_interval == 0` fails",
                          at=a.at("save_retain_interval"), also=((a.at("save_interval"), "save interval"),))
