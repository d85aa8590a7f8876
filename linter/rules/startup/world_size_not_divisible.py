"""TL101: world size not divisible by the model-parallel product (TP x PP x CP, expert grid, NeoX pp x mp)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS, CAP_MEGATRON_MODEL, CAP_NEOX_ARGUMENTS
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.adapters.megatron.entry_points import rewrites_checkpoints
from trainlint.rules.startup.derive import (
    as_int,
    from_checkpoint,
    model_parallel_product,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also


class WorldSizeNotDivisible(Rule):
    """## What it does
    Checks that the world size (GPUs launched) is divisible by the model-parallel product the
    framework divides it by: TP x PP x CP in Megatron (and EP x expert-TP x PP for the expert
    grid), pipe_parallel_size x model_parallel_size in GPT-NeoX.

    ## Why is this bad?
    The framework cannot build its process groups and stops before the first step.

    ## Example
    `torchrun --nproc_per_node 6 pretrain_gpt.py --tensor-model-parallel-size 4 ...`: 6 GPUs
    cannot be split into groups of 4.

    A checkpoint conversion tool (`tools/checkpoint/convert.py`, `merge_mp_partitions.py`) is not
    checked: it sets the world size Megatron's checks see to TP x PP itself, whatever it is
    launched with.

    ## Fix
    Launch a multiple of the model-parallel product, or change the parallel sizes.

    ## References
    - Megatron-LM `megatron/training/arguments.py:424-434` @ d98e8a6: "world size ({N}) is not
      divisible by total_model_size"; `megatron/core/parallel_state.py:874-884`: "world_size ({N})
      is not divisible by expert_tensor_model_pipeline_parallel size".
    - GPT-NeoX `megatron/neox_arguments/arguments.py:926-935` @ ea7aefd: "(global_num_gpus /
      pp_size) / mp_size [...] must be a whole number".
    """

    code = "TL101"
    release_dependent = False
    name = "world-size-not-divisible"
    default_severity = Severity.ERROR
    summary = "world size not divisible by the model-parallel product (TP x PP x CP, expert grid, NeoX pp x mp)"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        world = spec.cluster.world_size
        n = as_int(world)
        product = model_parallel_product(spec)
        if n is None or n < 1 or product is None or from_checkpoint(spec) or rewrites_checkpoints(spec.entry_point):
            return  # a checkpoint conversion tool sets the world size its checks see itself
        size, how, divisors = product
        if size >= 1 and n % size:
            if CAP_NEOX_ARGUMENTS in capabilities(spec):
                quote = "\"(global_num_gpus / pp_size) / mp_size [...] must be a whole number\""
            else:
                quote = f"\"world size ({n}) is not divisible by total_model_size\""
            yield Finding(f"world size {n} is not divisible by {how} = {size}; the framework stops: {quote}",
                          at=world, also=_also(*divisors), fix=f"launch a multiple of {size} GPUs or change the parallel sizes")
            return
        if CAP_MEGATRON_ARGUMENTS not in capabilities(spec):
            return
        p = spec.parallel
        ep, etp, pp, tp = as_int(p.expert), as_int(p.expert_tensor), as_int(p.pipeline), as_int(p.tensor)
        if ep is None or etp is None or pp is None or min(ep, etp, pp) < 1 or (ep == 1 and etp == tp):
            return
        grid = ep * etp * pp
        if n % grid:
            yield Finding(
                f"world size {n} is not divisible by the expert grid EP {ep} x expert-TP {etp} x PP {pp} = {grid}; "
                f"Megatron stops: \"world_size ({n}) is not divisible by expert_tensor_model_pipeline_parallel size "
                f"({grid})\"",
                at=p.expert, also=_also((world, "world size"), (p.expert_tensor, "expert tensor parallel"),
                                        (p.pipeline, "pipeline parallel")),
                fix=f"make EP x expert-TP x PP divide {n}")
