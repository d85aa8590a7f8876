"""TL133: elasticity with the pipeline engine when GPUs per node is not a multiple of the model-parallel size"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    ds,
    pipeline_engine,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.deepspeed.helpers import DS, _also


class ElasticPipeline(Rule):
    """## What it does
    Reports elastic training with DeepSpeed's pipeline engine when
    `elasticity.num_gpus_per_node` is not a multiple of `elasticity.model_parallel_size`.

    ## Why is this bad?
    The pipeline engine then refuses elasticity at start-up.

    ## Example
    ```json
    {"pipeline": {"stages": 4}, "elasticity": {"enabled": true, "num_gpus_per_node": 8, "model_parallel_size": 3}}
    ```

    ## Fix
    Make `num_gpus_per_node` a multiple of `model_parallel_size`, or disable elasticity.

    ## References
    - DeepSpeed `deepspeed/runtime/pipe/engine.py:90-93` @ edaa722: "Elasticity is not currently
      supported with pipeline parallelism."; `is_elastic_model_parallel_supported`
      (`deepspeed/runtime/engine.py:1004-1010`).
    """

    code = "TL133"
    release_dependent = False
    name = "ds-elastic-pipeline"
    default_severity = Severity.ERROR
    summary = "elasticity with the pipeline engine when GPUs per node is not a multiple of the model-parallel size"
    requires = DS

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        enabled = ds(spec, "elasticity.enabled")
        engine = pipeline_engine(spec)
        if not as_bool(enabled) or engine is None:
            return
        gpn = as_int(ds(spec, "elasticity.num_gpus_per_node")) or 1
        mp_v = ds(spec, "elasticity.model_parallel_size")
        mp = as_int(mp_v) or 1
        if mp >= 1 and gpn % mp:
            yield Finding(f"elastic training with the pipeline engine ({engine.reason}) and num_gpus_per_node {gpn} not a "
                          f"multiple of model_parallel_size {mp}; DeepSpeed stops: \"Elasticity is not currently supported "
                          "with pipeline parallelism.\"", at=enabled, also=_also((mp_v, "model_parallel_size"),
                                                                                 (engine.at, "pipeline")))
