"""TL152-TL153: tensor and context parallelism."""

from __future__ import annotations

from typing import Iterator

from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs
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


class HierarchicalContextParallel(MegatronRule):
    """## What it does
    Checks `--hierarchical-context-parallel-sizes` against `--context-parallel-size` and
    `--cp-comm-type a2a+p2p`.

    ## Why is this bad?
    Megatron-LM asserts that the hierarchical sizes multiply to the context-parallel size, and that
    they are given when the `a2a+p2p` communication type is used.

    ## Example
    ```bash
    pretrain_gpt.py ... --context-parallel-size 4 --cp-comm-type a2a+p2p
    ```

    ## Fix
    Give `--hierarchical-context-parallel-sizes` whose product is the context-parallel size.

    ## References
    * `megatron/training/arguments.py:580-585@d98e8a6`: `assert args.context_parallel_size ==
      prod(args.hierarchical_context_parallel_sizes)`; "--hierarchical-context-parallel-sizes must be set when
      a2a+p2p is used in cp comm"
    """

    code = "TL153"
    name = "megatron-hierarchical-context-parallel"
    summary = "hierarchical context-parallel sizes missing for a2a+p2p, or not multiplying to the CP size"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("hierarchical_context_parallel_sizes", "cp_comm_type"):
            return
        sizes, comm = a.get("hierarchical_context_parallel_sizes"), a.get("cp_comm_type")
        if sizes is not None and not isinstance(sizes, (list, tuple)):
            sizes = [sizes]  # nargs='+' given one value (a YAML scalar, a word split off): still a list
        cp = a.int_field("parallel.context")
        if sizes and cp is not None and all(isinstance(s, int) for s in sizes):
            product = 1
            for s in sizes:
                product *= s
            if product != cp:
                yield Finding(f"--hierarchical-context-parallel-sizes {' '.join(map(str, sizes))} multiply to {product}, "
                              f"not the context-parallel size {cp}: Megatron-LM's assertion "
                              "`context_parallel_size == prod(hierarchical_context_parallel_sizes)` fails",
                              at=a.at("hierarchical_context_parallel_sizes"),
                              also=(("parallel.context", "context parallel size"),))
        comms = comm if isinstance(comm, list) else [comm]
        if not sizes and any(isinstance(c, str) and "a2a+p2p" in c for c in comms):
            yield Finding("--cp-comm-type a2a+p2p without --hierarchical-context-parallel-sizes: Megatron-LM stops with "
                          "\"--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm\"",
                          at=a.at("cp_comm_type"))


RULES: list[type] = [
    TpCommOverlapWithoutSequenceParallel,
    HierarchicalContextParallel,
]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
