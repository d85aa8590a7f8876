"""TL152: --tp-comm-overlap without sequence parallelism (or with TP 1, which disables it)"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class TpCommOverlapWithoutSequenceParallel(MegatronRule):
    """## What it does
    Checks that `--tp-comm-overlap` comes with sequence parallelism (which Megatron-LM turns off when
    the tensor-parallel size is 1).

    ## Why is this bad?
    Megatron-LM stops: tensor-parallel communication overlap works on the sequence-parallel
    all-gather/reduce-scatter. With TP = 1 it first disables `--sequence-parallel`, so the assertion
    fails even when the flag is given.

    ## Example
    ```bash
    pretrain_gpt.py ... --tensor-model-parallel-size 4 --tp-comm-overlap
    ```

    ## Fix
    Add `--sequence-parallel` (with TP > 1), or drop `--tp-comm-overlap`.

    ## References
    * `megatron/training/arguments.py:1430-1442@d98e8a6`: TP == 1 → "Disabling sequence parallelism because
      tensor model parallelism is disabled"; `assert args.sequence_parallel == True`, "Tensor parallel
      communication/GEMM overlap can happen only when sequence parallelism is enabled"
    """

    code = "TL152"
    name = "megatron-tp-comm-overlap-without-sp"
    summary = "--tp-comm-overlap without sequence parallelism (or with TP 1, which disables it)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not (a.known("tp_comm_overlap") and a.on("tp_comm_overlap")):
            return
        tp, sp = a.int_field("parallel.tensor"), a.spec.value("parallel.sequence_parallel")
        if tp is None or sp is None:
            return
        if not sp:
            yield Finding("--tp-comm-overlap without --sequence-parallel: Megatron-LM stops with \"Tensor parallel "
                          "communication/GEMM overlap can happen only when sequence parallelism is enabled\"",
                          at=a.at("tp_comm_overlap"), fix="add --sequence-parallel")
        elif tp == 1:
            yield Finding("--tp-comm-overlap with tensor-model-parallel size 1: Megatron-LM disables sequence "
                          "parallelism at TP 1, then stops with \"Tensor parallel communication/GEMM overlap can happen "
                          "only when sequence parallelism is enabled\"", at=a.at("tp_comm_overlap"),
                          also=(("parallel.tensor", "tensor parallel size"),))
