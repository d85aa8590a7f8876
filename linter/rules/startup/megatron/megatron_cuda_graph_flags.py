"""TL166: deprecated CUDA-graph flags combined with --cuda-graph-impl or with each other"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class CudaGraphFlags(MegatronRule):
    """## What it does
    Checks the deprecated CUDA-graph flags against `--cuda-graph-impl`: `--enable-cuda-graph` and
    `--external-cuda-graph` exclude each other and any `--cuda-graph-impl` other than `none`;
    `--cuda-graph-scope` excludes `--cuda-graph-modules`.

    ## Why is this bad?
    `validate_args` asserts each of them. (That the flags are deprecated is reported separately.)

    ## Example
    ```bash
    pretrain_gpt.py ... --enable-cuda-graph --cuda-graph-impl transformer_engine
    ```

    ## Fix
    Use only `--cuda-graph-impl local|transformer_engine` and `--cuda-graph-modules`.

    ## References
    * `megatron/training/arguments.py:612-618@d98e8a6`: "Do not use --enable-cuda-graph or --external-cuda-graph
      with --cuda-graph-impl."; "--enable-cuda-graph and --external-cuda-graph cannot be enabled at the same time."
    * `megatron/training/arguments.py:633-636@d98e8a6`: "--cuda-graph-scope and --cuda-graph-modules cannot be used
      together."
    """

    code = "TL166"
    name = "megatron-cuda-graph-flags"
    summary = "deprecated CUDA-graph flags combined with --cuda-graph-impl or with each other"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("enable_cuda_graph", "external_cuda_graph", "cuda_graph_impl"):
            return
        old = [d for d in ("enable_cuda_graph", "external_cuda_graph") if a.on(d)]
        if old and a.get("cuda_graph_impl") != "none":
            yield Finding(f"{a.flag(old[0])} with --cuda-graph-impl {a.get('cuda_graph_impl')}: Megatron-LM stops with "
                          "\"Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl.\"",
                          at=a.at(old[0]), also=((a.at("cuda_graph_impl"), "--cuda-graph-impl"),))
        elif len(old) == 2:
            yield Finding("--enable-cuda-graph with --external-cuda-graph: Megatron-LM stops with \"--enable-cuda-graph "
                          "and --external-cuda-graph cannot be enabled at the same time.\"", at=a.at(old[1]),
                          also=((a.at(old[0]), "--enable-cuda-graph"),))
        if a.given("cuda_graph_scope_deprecated") and a.get("cuda_graph_scope_deprecated") is not None \
                and a.given("cuda_graph_modules") and a.get("cuda_graph_modules"):
            yield Finding("--cuda-graph-scope with --cuda-graph-modules: Megatron-LM stops with \"--cuda-graph-scope and "
                          "--cuda-graph-modules cannot be used together.\"", at=a.at("cuda_graph_scope_deprecated"),
                          also=((a.at("cuda_graph_modules"), "--cuda-graph-modules"),))
