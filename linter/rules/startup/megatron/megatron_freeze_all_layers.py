"""TL143: --freeze-all-layers silently disables the distributed optimizer and overlap-param-gather"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class FreezeAllLayers(MegatronRule):
    """## What it does
    Warns when `--freeze-all-layers` is combined with `--use-distributed-optimizer` or
    `--overlap-param-gather`.

    ## Why is this bad?
    Megatron-LM silently turns those options off (it only prints a warning), so the run does not
    use the memory layout the script asks for.

    ## Example
    ```bash
    pretrain_gpt.py ... --freeze-all-layers --use-distributed-optimizer
    ```

    ## Fix
    Drop the options Megatron-LM disables anyway.

    ## References
    * `megatron/training/arguments.py:1840-1849@d98e8a6`: "--freeze-all-layers incompatible with
      use_distributed_optimizer. Disabling use_distributed_optimizer."; "--freeze-all-layers incompatible
      with overlap_param_gather. Disabling overlap_param_gather."
    """

    code = "TL143"
    name = "megatron-freeze-all-layers"
    default_severity = Severity.WARNING
    summary = "--freeze-all-layers silently disables the distributed optimizer and overlap-param-gather"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not (a.known("freeze_all_layers") and a.on("freeze_all_layers")):
            return
        for dest in ("use_distributed_optimizer", "overlap_param_gather"):
            if a.known(dest) and a.on(dest):
                yield Finding(f"--freeze-all-layers with {a.flag(dest)}: Megatron-LM disables {dest} (\"--freeze-all-"
                              f"layers incompatible with {dest}. Disabling {dest}.\")", at=a.at(dest),
                              also=((a.at("freeze_all_layers"), "--freeze-all-layers"),))
