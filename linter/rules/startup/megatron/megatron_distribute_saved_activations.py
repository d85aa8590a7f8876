"""TL145: --distribute-saved-activations without TP > 1, full recomputation and a method, or with SP"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class DistributeSavedActivations(MegatronRule):
    """## What it does
    Checks the conditions of `--distribute-saved-activations`.

    ## Why is this bad?
    Megatron-LM only distributes recomputed activations across a tensor-parallel group, with full
    recomputation and a recompute method, and not with sequence parallelism; otherwise it stops.

    ## Example
    ```bash
    pretrain_gpt.py ... --tensor-model-parallel-size 1 --distribute-saved-activations
    ```

    ## Fix
    Use it with `--tensor-model-parallel-size` > 1, `--recompute-granularity full`, a
    `--recompute-method` and without `--sequence-parallel`, or drop it.

    ## References
    * `megatron/training/arguments.py:1410-1419@d98e8a6`: "can distribute recomputed activations only across
      tensor model parallel groups", "distributed recompute activations is only application to full recompute
      granularity", "for distributed recompute activations to work you need to use a recompute method "
    * `megatron/core/transformer/transformer_config.py:1934-1937@d98e8a6`: "distribute_saved_activations: True
      must be false when sequence parallel is enabled: True"
    """

    code = "TL145"
    name = "megatron-distribute-saved-activations"
    summary = "--distribute-saved-activations without TP > 1, full recomputation and a method, or with SP"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dest = "distribute_saved_activations"
        if not (a.known(dest, "recompute_granularity", "recompute_activations", "recompute_method") and a.on(dest)):
            return
        tp = a.int_field("parallel.tensor")
        granularity = "selective" if a.on("recompute_activations") else a.get("recompute_granularity")
        if tp is not None and tp <= 1:
            yield Finding(f"--distribute-saved-activations with tensor-model-parallel size {tp}: Megatron-LM stops with "
                          "\"can distribute recomputed activations only across tensor model parallel groups\"",
                          at=a.at(dest), also=(("parallel.tensor", "tensor parallel size"),))
            return  # Megatron stops at the first assertion; SP is off anyway with TP 1
        if granularity != "full":
            yield Finding(f"--distribute-saved-activations with recompute granularity {granularity}: Megatron-LM stops "
                          "with \"distributed recompute activations is only application to full recompute granularity\"",
                          at=a.at(dest))
        elif a.get("recompute_method") is None:
            yield Finding("--distribute-saved-activations without --recompute-method: Megatron-LM stops with \"for "
                          "distributed recompute activations to work you need to use a recompute method\"", at=a.at(dest))
        elif tp is not None and a.spec.value("parallel.sequence_parallel") is True:
            yield Finding("--distribute-saved-activations with --sequence-parallel: Megatron-Core stops with "
                          "\"distribute_saved_activations: True must be false when sequence parallel is enabled\"",
                          at=a.at(dest), also=(("parallel.sequence_parallel", "sequence parallelism"),))
