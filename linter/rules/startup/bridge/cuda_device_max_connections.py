"""TL116: CUDA_DEVICE_MAX_CONNECTIONS set against what the layout needs"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.core.framework import CAP_MEGATRON_CORE
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.core.spec import MEGATRON_LM, TrainingSpec
from trainlint.adapters.bridge.names import FORMAT
from trainlint.rules.startup.bridge.base import PRE_BLACKWELL, architecture


class DeviceMaxConnections(Rule):
    """## What it does
    Checks `CUDA_DEVICE_MAX_CONNECTIONS` where the run's files set it (an assignment or `export` before the
    launch in a Megatron-LM or Megatron-Bridge launch script, or a Megatron-Bridge `env_vars` entry, which an
    exported value overrides) against the layout; a run whose files do not set it is not judged (the job's
    environment may):

    * with Megatron-FSDP it must not be `1`: Megatron-LM's `validate_args` and Megatron-Bridge's
      `_validate_and_apply_megatron_fsdp_v1_configs` assert "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or
      unset" (an error);
    * with tensor or context parallelism above 1 it should be `1` on GPUs before Blackwell, unless
      Megatron-FSDP / torch FSDP2 or `overlap_moe_expert_parallel_comm` is on: Megatron-LM's
      `validate_args` asserts it (`megatron/training/arguments.py`); Megatron-Core itself (a Bridge run) only
      warns "it is recommended to set ... CUDA_DEVICE_MAX_CONNECTIONS to 1 for maximum speedup"
      (`tensor_parallel/layers.py`), as tensor-parallel communication is then not overlapped with compute.
      An error for a Megatron-LM launch on a declared GPU before Blackwell (`--gpu`, the project's `gpu`),
      else a warning; nothing on Blackwell and later ("the requirement no longer exists").

    ## Why is this bad?
    The FSDP case stops the run before the first step; the TP/CP case stops a Megatron-LM run, and slows a
    Bridge run.

    ## Example
    ```bash
    export CUDA_DEVICE_MAX_CONNECTIONS=1
    torchrun --nproc_per_node 8 scripts/training/run_recipe.py --recipe ... ddp.use_megatron_fsdp=true
    ```

    ## Fix
    Unset it (or set 32) with FSDP; export `CUDA_DEVICE_MAX_CONNECTIONS=1` with TP or CP on Hopper and earlier.
    """

    code = "TL116"
    name = "cuda-device-max-connections"
    summary = "CUDA_DEVICE_MAX_CONNECTIONS set against what the layout needs"
    requires = frozenset({CAP_MEGATRON_CORE})  # a Megatron-Core run, whatever builds its configs
    default_severity = Severity.WARNING
    release_dependent = True

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        setting = spec.engine.device_max_connections
        if setting is None or spec.dialect != MEGATRON_LM:
            return  # not set in the files: the job's environment (a container, the shell) may set it
        value = str(setting.value)
        unmodelled = spec.run.unmodelled.value if spec.run.unmodelled is not None else []
        fsdp = any(isinstance(u, list) and u and u[0] in ("--use-megatron-fsdp", "--use-torch-fsdp2") for u in unmodelled)
        megatron_fsdp = any(isinstance(u, list) and u and u[0] == "--use-megatron-fsdp" for u in unmodelled)
        if megatron_fsdp and value == "1":
            yield Finding("CUDA_DEVICE_MAX_CONNECTIONS=1 with Megatron-FSDP: the run stops with \"FSDP requires "
                          "CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset\"", at=setting, severity=Severity.ERROR)
            return
        if architecture(spec, ctx) in ("blackwell", "rubin"):
            return  # "CUDA_DEVICE_MAX_CONNECTIONS requirement no longer exists since the Blackwell architecture"
        tp, cp = spec.value("parallel.tensor", 1), spec.value("parallel.context", 1)
        big = [(n, v) for n, v in (("tensor", tp), ("context", cp)) if isinstance(v, int) and v > 1]
        moe_overlap = spec.settings.get("overlap_moe_expert_parallel_comm")
        if not big or fsdp or (moe_overlap is not None and moe_overlap.value is True) or value == "1":
            return
        what = " and ".join(f"{n} parallelism {v}" for n, v in big)
        gpu = architecture(spec, ctx)
        # validate_args asserts it for a Megatron-LM launch on a GPU before Blackwell; Bridge never calls validate_args
        certain = spec.format != FORMAT and gpu in PRE_BLACKWELL
        where = f"on {gpu} GPUs" if gpu else "on GPUs before Blackwell"
        yield Finding(f"CUDA_DEVICE_MAX_CONNECTIONS={value} with {what}: {where}, Megatron-LM stops with \"Using tensor "
                      "model parallelism or context parallelism require setting the environment variable "
                      "CUDA_DEVICE_MAX_CONNECTIONS to 1\" and Megatron-Core (a Bridge run) does not overlap "
                      "tensor-parallel communication with compute", at=setting,
                      severity=Severity.ERROR if certain else None,
                      also=((spec.parallel.tensor if isinstance(tp, int) and tp > 1 else spec.parallel.context, what),),
                      fix="export CUDA_DEVICE_MAX_CONNECTIONS=1 before the launch (Hopper and earlier)")
