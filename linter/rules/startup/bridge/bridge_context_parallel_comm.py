"""TL675: cp_comm_type and hierarchical_context_parallel_sizes that do not fit the context-parallel size"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, positive_int


class ContextParallelComm(BridgeRule):
    """## What it does
    Checks `model.cp_comm_type` against `model.hierarchical_context_parallel_sizes` as
    `ConfigContainer._validate_cp_comm_type` does: a list of types has one entry per layer; `a2a+p2p` needs
    the hierarchical sizes; their product is the context-parallel size.

    ## Why is this bad?
    An `AssertionError` before the first step (Bridge's note: without the sizes, CP communication is
    silently disabled and each rank attends only to its own chunk).

    ## Example
    ```yaml
    model:
      context_parallel_size: 16
      cp_comm_type: a2a+p2p
    ```

    ## Fix
    Give `hierarchical_context_parallel_sizes` whose product is the CP size (e.g. `[8, 2]`).
    """

    code = "TL675"
    name = "bridge-context-parallel-comm"
    summary = "cp_comm_type and hierarchical_context_parallel_sizes that do not fit the context-parallel size"

    def findings(self, f: Fields) -> Iterator[Finding]:
        cp = f.get("model.context_parallel_size", 1)
        kind = f.get("model.cp_comm_type")
        sizes = f.get("model.hierarchical_context_parallel_sizes")
        layers = f.get("model.num_layers")
        if positive_int(cp) and cp > 1 and isinstance(kind, list) and positive_int(layers) and len(kind) != layers:
            yield Finding(f"`model.cp_comm_type` lists {len(kind)} types for {layers} layers: Bridge stops with \"Length "
                          "of cp_comm_type ... must equal num_layers\"", at=f.at("model.cp_comm_type"))
        kinds = kind if isinstance(kind, list) else [kind or "p2p"]
        if any(isinstance(k, str) and "a2a+p2p" in k for k in kinds) and sizes is None:
            yield Finding("`model.cp_comm_type` a2a+p2p without `model.hierarchical_context_parallel_sizes`: Bridge stops "
                          "with \"hierarchical_context_parallel_sizes must be set when cp_comm_type contains 'a2a+p2p'\"",
                          at=f.at("model.cp_comm_type"))
        if isinstance(sizes, list) and sizes and all(positive_int(s) for s in sizes) and positive_int(cp):
            product = 1
            for s in sizes:
                product *= s
            if product != cp:
                yield Finding(f"the product of `model.hierarchical_context_parallel_sizes` {sizes} is {product}, not the "
                              f"context-parallel size {cp}", at=f.at("model.hierarchical_context_parallel_sizes"),
                              also=((f.at("model.context_parallel_size"), "context-parallel size"),))
