"""TL110: ZeRO stage 2/3 with DeepSpeed's pipeline engine (NeoX: pipe_parallel_size >= 1, even 1)"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS, CAP_NEOX_ARGUMENTS, CAP_STARTUP_CHECKS
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.startup.derive import (
    as_int,
    pipeline_engine,
    zero_stage,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also


class ZeroPipelineConflict(Rule):
    """## What it does
    Reports ZeRO stage 2 or 3 in a run that DeepSpeed executes with its PipelineEngine:

    - DeepSpeed: the config gives pipeline stages > 1 (`pipeline.stages`), or the run is
      declared to use the pipeline engine;
    - Megatron-DeepSpeed: `--deepspeed` with pipeline parallel size > 1, or with size 1 in
      `pretrain_gpt.py`-style entry points (they build `GPTModelPipe`, a PipelineModule, unless
      `--no-pipeline-parallel` is given), the stage from the DeepSpeed config or `--zero-stage`;
    - GPT-NeoX: `pipe_parallel_size >= 1` — **including 1**: NeoX wraps the model in DeepSpeed's
      PipelineModule whenever `pipe_parallel_size >= 1`; only `pipe_parallel_size: 0` runs the
      plain model.

    ## Why is this bad?
    The pipeline engine schedules its own gradient reductions; ZeRO-2/3 partition gradients
    (and parameters) in a way it does not support. The engine asserts at start-up.

    ## Example
    ```yaml
    pipe_parallel_size: 1
    zero_optimization: {stage: 2}
    ```

    ## Fix
    Use ZeRO stage 0 or 1 with pipeline parallelism; or, without real pipeline parallelism, leave
    the pipeline engine out (NeoX `pipe_parallel_size: 0`, Megatron-DeepSpeed
    `--no-pipeline-parallel`).

    ## References
    - DeepSpeed `deepspeed/runtime/pipe/engine.py:76-77` @ edaa722:
      `assert self.zero_optimization_stage() < ZeroStageEnum.gradients, "ZeRO-2 and ZeRO-3 are
      incompatible with pipeline parallelism"`.
    - GPT-NeoX `megatron/neox_arguments/arguments.py:1085` @ ea7aefd:
      `is_pipe_parallel = pipe_parallel_size >= 1` (framework-assertions N14).
    - Megatron-DeepSpeed `pretrain_gpt.py` (model_provider): `if args.deepspeed and not
      args.no_pipeline_parallel: model = GPTModelPipe(...)`.
    """

    code = "TL110"
    release_dependent = False
    name = "zero-pipeline-conflict"
    default_severity = Severity.ERROR
    summary = "ZeRO stage 2/3 with DeepSpeed's pipeline engine (NeoX: pipe_parallel_size >= 1, even 1)"
    requires = frozenset({CAP_STARTUP_CHECKS})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        stage_v = zero_stage(spec)
        stage = as_int(stage_v)
        if stage is None or stage < 2:
            return
        engine = pipeline_engine(spec)
        if engine is None:
            return
        quote = "DeepSpeed stops: \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\""
        if engine.only_wrapper:
            if CAP_NEOX_ARGUMENTS in capabilities(spec):
                fix = "set `pipe_parallel_size: 0` (no pipeline engine) or use ZeRO stage 1"
            else:
                fix = "add --no-pipeline-parallel (no pipeline engine) or use ZeRO stage 1"
        else:
            fix = "use ZeRO stage 0 or 1 with pipeline parallelism"
        at, other = (engine.at, stage_v) if engine.only_wrapper and CAP_NEOX_ARGUMENTS in capabilities(spec) else (stage_v, engine.at)
        also = [(other, "pipeline engine engaged here" if other is engine.at else f"ZeRO stage {stage} here")]
        if CAP_MEGATRON_ARGUMENTS in capabilities(spec):
            flag = spec.settings.get("zero_stage")  # file text: where --zero-stage is written, for the location
            if flag is not None and flag is not stage_v and flag.span != getattr(stage_v, "span", None):
                also.append((flag, f"--zero-stage {flag.value}"))
        yield Finding(f"ZeRO stage {stage} with DeepSpeed's pipeline engine: {engine.reason}; {quote}",
                      at=at, also=_also(*also), fix=fix)
