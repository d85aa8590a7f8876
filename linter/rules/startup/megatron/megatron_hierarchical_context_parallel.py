"""TL153: hierarchical context-parallel sizes missing for a2a+p2p, or not multiplying to the CP size"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


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
