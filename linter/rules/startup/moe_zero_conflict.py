"""TL111: MoE with a ZeRO stage the framework refuses (NeoX: >= 2; DeepSpeed native MoE: 3)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS, CAP_MEGATRON_MODEL, CAP_NEOX_ARGUMENTS
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    zero_stage,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also, _experts


class MoeZeroConflict(Rule):
    """## What it does
    Reports mixture-of-experts models with a ZeRO stage their framework refuses: GPT-NeoX
    refuses MoE (`moe_num_experts > 1`) with ZeRO stage 2 or 3; Megatron-DeepSpeed's native
    DeepSpeed MoE layers (`--num-experts > 1` with `--deepspeed`) are refused with ZeRO-3.

    ## Why is this bad?
    The run stops at start-up.

    ## Example
    ```yaml
    moe_num_experts: 8
    zero_optimization: {stage: 2}
    ```

    ## Fix
    Use ZeRO stage 1 (NeoX) or 1/2 (DeepSpeed MoE).

    ## References
    - GPT-NeoX `megatron/neox_arguments/arguments.py:1088-1089` @ ea7aefd: "MoE is not compatible
      with zero stages 2 and 3".
    - DeepSpeed `deepspeed/runtime/engine.py:1889-1891` @ edaa722: "Native DeepSpeed MoE is not
      supported with ZeRO Stage 3. Use AutoEP or choose ZeRO stage 1/2."
    """

    code = "TL111"
    release_dependent = False
    name = "moe-zero-conflict"
    default_severity = Severity.ERROR
    summary = "MoE with a ZeRO stage the framework refuses (NeoX: >= 2; DeepSpeed native MoE: 3)"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        stage_v = zero_stage(spec)
        stage = as_int(stage_v)
        experts_v = spec.model.num_experts
        experts = _experts(experts_v)
        if stage is None or experts is None or experts <= 1:
            return
        if CAP_NEOX_ARGUMENTS in capabilities(spec) and stage >= 2:
            yield Finding(f"{experts} experts (moe_num_experts) with ZeRO stage {stage}; NeoX stops: \"MoE is not "
                          "compatible with zero stages 2 and 3\"", at=stage_v,
                          also=_also((experts_v, "moe_num_experts")), fix="use ZeRO stage 0 or 1 with MoE")
        elif CAP_MEGATRON_ARGUMENTS in capabilities(spec) and stage >= 3 and as_bool(spec.engine.deepspeed_flag):
            yield Finding(f"DeepSpeed MoE ({experts} experts) with ZeRO stage {stage}; DeepSpeed stops: \"Native "
                          "DeepSpeed MoE is not supported with ZeRO Stage 3. Use AutoEP or choose ZeRO stage 1/2.\"",
                          at=stage_v, also=_also((experts_v, "number of experts")), fix="use ZeRO stage 1 or 2 with MoE")
