"""TL105: number of layers not divisible by the pipeline size, or layers per stage by the virtual-pipeline factor"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_CORE
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    from_checkpoint,
    pipeline_engine,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also, _mamba


class LayersPipelineIndivisible(Rule):
    """## What it does
    Checks that Megatron can split the layers evenly over the pipeline stages: the number of
    layers (plus one for each of `--account-for-embedding-in-pipeline-split` and
    `--account-for-loss-in-pipeline-split`) divisible by the pipeline size, and the layers per
    stage divisible by the virtual-pipeline (interleaving) factor.

    ## Why is this bad?
    `validate_args` stops before the model is built.

    ## Example
    `--num-layers 30 --pipeline-model-parallel-size 4`

    ## Fix
    Change the pipeline size, or give uneven first/last stages with
    `--decoder-first-pipeline-num-layers` / `--decoder-last-pipeline-num-layers`.

    ## References
    - Megatron-LM `megatron/training/arguments.py:985-998` @ d98e8a6: "Number of layers should be
      divisible by the pipeline-model-parallel size" (added by ADLR/megatron-lm!2398, first in
      core_v0.10.0; before it `megatron/core/transformer/transformer_block.py` get_num_layers_to_build
      took `num_layers // pipeline_model_parallel_size` layers per stage, e.g. ROCm's fork at 2b855ba);
      `arguments.py:961-973`: "number of layers of
      the model must be divisible pipeline model parallel size", "number of layers per pipeline
      stage must be divisible number of layers per virtual pipeline stage";
      `megatron/core/transformer/transformer_config.py:2392-2414` (account-for splits with VPP).

    Megatron-DeepSpeed runs with DeepSpeed's PipelineEngine partition layers by DeepSpeed's own
    method (uneven splits allowed) and are not checked.
    """

    code = "TL105"
    release_dependent = False
    name = "layers-pipeline-indivisible"
    default_severity = Severity.ERROR
    summary = "number of layers not divisible by the pipeline size, or layers per stage by the virtual-pipeline factor"
    requires = frozenset({CAP_MEGATRON_CORE})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if pipeline_engine(spec) is not None or as_bool(spec.engine.deepspeed_flag) or from_checkpoint(spec):
            return
        layers_v, pp_v = spec.model.num_layers, spec.parallel.pipeline
        layers, pp = as_int(layers_v), as_int(pp_v)
        if layers is None or pp is None or pp <= 1 or layers < 1:
            return
        p = spec.parallel
        if p.uneven_pipeline is not None or _mamba(spec):
            return
        extra = list(p.pipeline_split_extra.value) if p.pipeline_split_extra is not None else []
        total = layers + len(extra)
        counted = f"{layers} layers (+{len(extra)} for {', '.join(extra)}) = {total}" if extra else f"{layers} layers"
        k_v, vpp_v = p.virtual_stage_layers, p.virtual_stages
        if vpp_v is not None and not extra:
            return  # checked when the layers are assigned; not decided here
        if total % pp:
            # The check is in validate_args since core_v0.10.0 (ADLR/megatron-lm!2398, 2024-11); before it,
            # Megatron-Core's get_num_layers_to_build took num_layers // PP layers per stage without a word.
            yield Finding(f"{counted} is not divisible by pipeline parallel size {pp}; Megatron stops: "
                          "\"Number of layers should be divisible by the pipeline-model-parallel size\" (releases "
                          f"before core_v0.10.0 and forks of them instead build {total // pp} per stage, "
                          f"{total // pp * pp} layers in all: not the model configured)",
                          at=layers_v, also=_also((pp_v, "pipeline parallel size")),
                          fix="change --num-layers or --pipeline-model-parallel-size, or give uneven first/last stages")
            return
        per_stage = total // pp
        for value, what in ((k_v, "layers per virtual pipeline stage"), (vpp_v, "virtual stages per pipeline rank")):
            k = as_int(value)
            if k is not None and k > 0 and per_stage % k:
                yield Finding(f"{per_stage} layers per pipeline stage ({total} / {pp}) are not divisible by {k} {what}; "
                              "Megatron stops: \"number of layers per pipeline stage must be divisible number of layers "
                              "per virtual pipeline stage\"", at=value,
                              also=_also((layers_v, "number of layers"), (pp_v, "pipeline parallel size")))
