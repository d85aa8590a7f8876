"""TL183: gMLP with partition_activations, Mamba/RWKV with ZeRO-3, RWKV with model parallelism"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule, _number


class ArchitectureConstraints(_NeoXRule):
    """## What it does
    Checks NeoX's constraints on non-attention blocks: gMLP/aMLP blocks refuse
    `partition_activations`; Mamba and RWKV refuse ZeRO stage 3; RWKV refuses model parallelism;
    Mamba and RWKV have no dropout.

    ## Why is this bad?
    The first three stop NeoX at start-up. The dropout checks are written `assert (cond,)` (a
    non-empty tuple, always true), so NeoX never stops: a non-zero `hidden_dropout` is silently not
    applied in those blocks (a warning here).

    ## Example
    ```yaml
    attention_config: [[["rwkv"], "all"]]
    model_parallel_size: 2
    ```

    ## Fix
    Use ZeRO <= 2, `model_parallel_size: 1` for RWKV, no `partition_activations` with gMLP, and
    `hidden_dropout: 0` with Mamba/RWKV.

    ## References
    * `megatron/neox_arguments/arguments.py:1105-1123@ea7aefd`: "GMLP Blocks are not compatible with partition
      activations"; "Zero stage 3 not compatible with Mamba"; "RWKV not currently compatible with model
      parallelism"; "Zero stage 3 not compatible with RWKV"; `assert (self.hidden_dropout == 0.0,)`, "Mamba does
      not yet have dropout implemented" (never fires)
    """

    code = "TL183"
    name = "neox-architecture-constraints"
    summary = "gMLP with partition_activations, Mamba/RWKV with ZeRO-3, RWKV with model parallelism"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        types, _ = a.attention_types()
        if not types or not a.given("attention_config"):
            return
        kinds = set(types)
        cfg = (a.at("attention_config"), "attention_config")
        if kinds & {"gmlp", "amlp"} and a.get("partition_activations"):
            yield Finding("gMLP/aMLP blocks with partition_activations: NeoX stops with \"GMLP Blocks are not compatible "
                          "with partition activations\"", at=a.at("partition_activations"), also=(cfg,))
        stage = a.zero_stage()
        for kind, name in (("mamba", "Mamba"), ("rwkv", "RWKV")):
            if kind not in kinds:
                continue
            if stage is not None and stage > 2:
                yield Finding(f"{name} blocks with ZeRO stage {stage}: NeoX stops with \"Zero stage 3 not compatible with "
                              f"{name}\"", at="parallel.zero_stage", also=(cfg,))
            dropout = _number(a.get("hidden_dropout"))
            if dropout and a.given("hidden_dropout"):
                yield Finding(f"hidden_dropout {dropout} with {name} blocks: \"{name} does not yet have dropout "
                              "implemented\"; NeoX's assertion is written as a tuple and never fires, so the dropout is "
                              "silently not applied", at=a.at("hidden_dropout"), also=(cfg,), severity=Severity.WARNING)
        mp = _number(a.spec.value("parallel.tensor"))
        if "rwkv" in kinds and isinstance(mp, int) and mp != 1:
            yield Finding(f"RWKV blocks with model_parallel_size {mp}: NeoX stops with \"RWKV not currently compatible "
                          "with model parallelism\"", at="parallel.tensor", also=(cfg,))
