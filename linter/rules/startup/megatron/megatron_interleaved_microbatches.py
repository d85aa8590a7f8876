"""TL174: an interleaved pipeline with fewer micro-batches than its size, or a remainder it refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.releases import Releases
from trainlint.rules.startup.megatron.check_table import Check, with_references


SCHED = "megatron/core/pipeline_parallel/schedules.py"


@with_references
class InterleavedMicrobatches(MegatronRule):
    """## What it does
    Checks the number of micro-batches per step (M = global batch / (micro batch x DP)) of an
    interleaved (virtual) pipeline against the pipeline size PP and the micro-batch group size N
    (`--microbatch-group-size-per-virtual-pipeline-stage`, default PP): from core_v0.10.0, N must lie in
    [PP, M] and the remainder of M / N must be 0 or at least PP; up to core_v0.9.0, M must be a
    multiple of PP.

    ## Why is this bad?
    The interleaved schedule raises a ValueError / RuntimeError in the first training step, after the
    model is built and the job has waited in the queue.

    ## Example
    ```bash
    pretrain_gpt.py ... --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2 \\
        --micro-batch-size 1 --global-batch-size 4     # 8 GPUs, DP 2: M = 2 < PP = 4
    ```

    ## Fix
    Raise the global batch (or lower the micro batch) so that M >= PP and M is a multiple of PP.

    Up to core_v0.9.0 the schedule raised "number of microbatches (M) is not divisible by
    pipeline-model-parallel-size (PP) when using interleaved schedule" (`schedules.py:631@1afee59`).
    """

    core_config_check = True  # the schedule raises it, whatever built the configs (Megatron-Bridge too)
    code = "TL174"
    name = "megatron-interleaved-microbatches"
    summary = "an interleaved pipeline with fewer micro-batches than its size, or a remainder it refuses"
    checks = (
        Check(SCHED, 1168, "core_v0.10.0", (), "The number of contiguous micro-batches in a virtual pipeline stage "
                                               "should range in [PP, M]"),
        Check(SCHED, 1180, "core_v0.10.0", (), "The remainder of M (the total micro-batches) divided by N ... should be 0, "
                                               "or larger than or equal to the pipeline-parallel size"),
    )

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        known, vpp = a.vpp()
        pp = a.int_field("parallel.pipeline")
        if not known or vpp is None or pp is None or pp <= 1 or a.written("tensor_parallel_num_weight_shards") \
                or a.given("step_batch_size_schedule") or a.given("rampup_batch_size") or a.not_training():
            return
        if not a.known("microbatch_group_size_per_vp_stage"):
            return
        g, m, dp = (a.int_field(f) for f in ("batch.global_batch", "batch.micro_batch", "parallel.data"))
        if g is None or m is None or dp is None or min(g, m, dp) <= 0 or g % (m * dp):
            return  # TL100's
        count = g // (m * dp)
        at = a.at_written("global_batch_size", "micro_batch_size", "pipeline_model_parallel_size")
        also = (("parallel.pipeline", "pipeline size"), ("batch.global_batch", "global batch"))
        if not Releases("megatron", first="core_v0.10.0").includes(a.spec.target):
            if count % pp:
                yield Finding(f"{count} micro-batches per step (global {g} / (micro {m} x DP {dp})) with an interleaved "
                              f"pipeline of size {pp}: Megatron-LM stops with \"number of microbatches ({count}) is not "
                              f"divisible by pipeline-model-parallel-size ({pp}) when using interleaved schedule\"",
                              at=at, also=also)
            return
        group = a.get("microbatch_group_size_per_vp_stage") or pp
        if not isinstance(group, int):
            return
        if group > count or group < pp:
            yield Finding(f"{count} micro-batches per step (global {g} / (micro {m} x DP {dp})) with an interleaved "
                          f"pipeline of size {pp} and micro-batch groups of {group}: Megatron-LM stops in the first step "
                          f"with \"The number of contiguous micro-batches in a virtual pipeline stage should range in "
                          f"[PP={pp} , M={count}]\"", at=at, also=also,
                          fix=f"a global batch of at least {pp * m * dp} (M >= PP)")
            return
        rest = count % group
        if 0 < rest < pp:
            yield Finding(f"{count} micro-batches per step in groups of {group} leave {rest}, fewer than the pipeline size "
                          f"{pp}: Megatron-LM stops in the first step with \"The remainder of M (the total micro-batches) "
                          f"divided by N (number of contiguous micro-batches in a virtual pipeline stage) should be 0, or "
                          f"larger than or equal to the pipeline-parallel size, but it is {rest}\"", at=at, also=also)
