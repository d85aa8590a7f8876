"""TL112: bf16 on a pre-Ampere GPU or FP8 on a pre-Hopper GPU, when the target GPU is declared"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_STARTUP_CHECKS
from trainlint.presets.catalog import CatalogError, find_gpu
from trainlint.core.diagnostics import Severity
from trainlint.core.provenance import Origin, Value
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.derive import (
    as_bool,
    as_str,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also


def _declared_gpu(spec: TrainingSpec, ctx: RuleContext) -> tuple[str, Value | str] | None:
    """The target GPU when something declares it: the spec (launcher / CLI) first, then the
    project config's ``gpu``. An assumed default GPU is not a declaration."""
    gpu = spec.cluster.gpu
    if gpu is not None and isinstance(gpu.value, str) and gpu.provenance.origin is not Origin.ASSUMED:
        return gpu.value, gpu
    estimation = getattr(ctx.project, "estimation", None)
    declared = estimation.gpu if estimation is not None else None
    if isinstance(declared, str):
        return declared, "project config"
    return None


class PrecisionUnsupportedGPU(Rule):
    """## What it does
    When the target GPU is declared (the run's cluster GPU, or `gpu` in `[tool.trainlint]`),
    reports a precision the GPU cannot run: bf16 before Ampere (V100), FP8 before Hopper/Ada
    (A100).

    ## Why is this bad?
    DeepSpeed refuses bf16 on such a device at start-up; Transformer Engine refuses FP8 (or the
    kernels fall back, far slower). Either way the run is not the one planned.

    ## Example
    A `bf16: {enabled: true}` config for a V100 cluster.

    ## Fix
    Use fp16 (with loss scaling) on pre-Ampere GPUs; drop FP8 on pre-Hopper GPUs.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1678-1682` @ edaa722: "Type bf16 is not supported on
      your device."
    - framework-assertions X112 / M39: bf16 needs compute capability 8.0+, FP8 needs 8.9+/9.0+;
      GPU capabilities from trainlint's catalog (`gpus.json` of the `trainlint.data` package).
    """

    code = "TL112"
    release_dependent = False
    name = "precision-unsupported-gpu"
    default_severity = Severity.ERROR
    summary = "bf16 on a pre-Ampere GPU or FP8 on a pre-Hopper GPU, when the target GPU is declared"
    requires = frozenset({CAP_STARTUP_CHECKS})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        declared = _declared_gpu(spec, ctx)
        if declared is None:
            return
        name, where = declared
        try:
            gpu = find_gpu(name, ctx.gpus)  # the session's table: plugin and project GPUs too
        except CatalogError:
            return  # an unknown GPU name is reported where it is declared
        dtype_v, fp8_v = spec.precision.dtype, spec.precision.fp8
        target = where if isinstance(where, Value) else None
        if as_str(dtype_v) == "bf16" and not gpu.supports_bf16:
            bf16 = spec.precision.bf16_enabled if as_bool(spec.precision.bf16_enabled) else dtype_v
            yield Finding(f"bf16 on {gpu.name} ({gpu.architecture}), which has no bf16 support; DeepSpeed stops: "
                          "\"Type bf16 is not supported on your device.\"", at=bf16,
                          also=_also((target, f"target GPU {gpu.id}")), fix="train in fp16 with loss scaling on this GPU")
        fp8 = fp8_v.value if fp8_v is not None else None
        if fp8 not in (None, False, "", "none") and not gpu.supports_fp8:
            yield Finding(f"FP8 ({fp8}) on {gpu.name} ({gpu.architecture}), which has no FP8 tensor cores",
                          at=fp8_v, also=_also((target, f"target GPU {gpu.id}")), fix="drop FP8 on this GPU")
