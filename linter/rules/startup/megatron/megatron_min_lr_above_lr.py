"""TL163: --min-lr greater than --lr"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class MinLrAboveLr(MegatronRule):
    """## What it does
    Checks that `--min-lr` is not above `--lr`.

    ## Why is this bad?
    `validate_args` asserts `min_lr <= lr`; the learning-rate schedule would otherwise decay upwards.

    ## Example
    ```bash
    pretrain_gpt.py ... --lr 1e-5 --min-lr 1e-4
    ```

    ## Fix
    Set `--min-lr` at or below `--lr` (often lr / 10).

    ## References
    * `megatron/training/arguments.py:1359-1360@d98e8a6`: `if args.lr is not None: assert args.min_lr <= args.lr`
      (a bare assertion: Megatron prints no message)
    """

    code = "TL163"
    name = "megatron-min-lr-above-lr"
    summary = "--min-lr greater than --lr"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("lr", "min_lr"):
            return
        lr, min_lr = a.get("lr"), a.get("min_lr")
        if isinstance(lr, (int, float)) and isinstance(min_lr, (int, float)) and min_lr > lr:
            yield Finding(f"--min-lr {min_lr} is greater than --lr {lr}: Megatron-LM's assertion `min_lr <= lr` fails",
                          at=a.at("min_lr"), also=((a.at("lr"), "--lr"),))
