"""TL161: --step-batch-size-schedule with a fixed global batch, or an eval batch not divisible by micro x DP"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class BatchScheduleArguments(MegatronRule):
    """## What it does
    Checks the batch-size schedule and the evaluation batch: `--step-batch-size-schedule` excludes
    `--global-batch-size` and `--decrease-batch-size-if-needed`; the evaluation global batch (default:
    the training one) must be a multiple of eval micro batch x DP.

    ## Why is this bad?
    Megatron-LM stops in `validate_args` or when it builds the micro-batch calculator.

    ## Example
    ```bash
    pretrain_gpt.py ... --global-batch-size 512 --step-batch-size-schedule "0:256 1B:512"
    ```

    ## Fix
    Give either the schedule or the global batch size; pick an evaluation batch that divides.

    ## References
    * `megatron/training/arguments.py:698-701@d98e8a6`: "Cannot specify both --step-batch-size-schedule and
      --global-batch-size"
    * `megatron/core/num_microbatches_calculator.py:264-269@d98e8a6`: "Cannot specify both
      --step-batch-size-schedule and --decrease-batch-size-if-needed"
    * `megatron/training/arguments.py:709-720@d98e8a6`: "eval_global_batch_size ({g}) must be divisible by
      eval_micro_batch_size ({m}) * data_parallel_size ({d}) * gtp_weight_remat_size (1)"
    """

    code = "TL161"
    name = "megatron-batch-schedule-arguments"
    summary = "--step-batch-size-schedule with a fixed global batch, or an eval batch not divisible by micro x DP"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.given("step_batch_size_schedule"):
            for dest in ("global_batch_size", "decrease_batch_size_if_needed"):
                if a.given(dest) and (dest != "decrease_batch_size_if_needed" or a.on(dest)):
                    yield Finding(f"--step-batch-size-schedule with {a.flag(dest)}: Megatron-LM stops with \"Cannot "
                                  f"specify both --step-batch-size-schedule and {a.flag(dest)}\"", at=a.at(dest),
                                  also=((a.at("step_batch_size_schedule"), "batch size schedule"),))
            return
        if not (a.given("eval_global_batch_size") or a.given("eval_micro_batch_size")):
            return
        if not a.known("eval_global_batch_size", "eval_micro_batch_size") or \
                a.written("tensor_parallel_num_weight_shards"):
            return
        dp = a.int_field("parallel.data")
        g = a.get("eval_global_batch_size") or a.spec.value("batch.global_batch")
        m = a.get("eval_micro_batch_size") or a.spec.value("batch.micro_batch")
        if not all(isinstance(x, int) and x > 0 for x in (dp, g, m)):
            return
        if g % (m * dp):
            at = a.at("eval_global_batch_size") if a.given("eval_global_batch_size") else a.at("eval_micro_batch_size")
            yield Finding(f"eval global batch {g} is not divisible by eval micro batch {m} x DP {dp} = {m * dp}: "
                          f"Megatron-LM stops with \"eval_global_batch_size ({g}) must be divisible by "
                          f"eval_micro_batch_size ({m}) * data_parallel_size ({dp})\"", at=at,
                          also=(("parallel.data", "data-parallel size"),))
