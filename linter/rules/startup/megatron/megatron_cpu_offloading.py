"""TL146: activation CPU offloading with pipeline parallelism, recomputation or every layer"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class CpuOffloading(MegatronRule):
    """## What it does
    Checks activation CPU offloading (`--cpu-offloading-num-layers N`, which turns `cpu_offloading` on
    when N > 0) against the layer count, pipeline parallelism and recomputation.

    ## Why is this bad?
    Megatron-Core's `TransformerConfig.__post_init__` refuses offloading all layers, offloading with
    pipeline parallelism, and offloading with activation recomputation.

    ## Example
    ```bash
    pretrain_gpt.py ... --cpu-offloading-num-layers 4 --pipeline-model-parallel-size 2
    ```

    ## Fix
    Offload fewer layers than the model has, without pipeline parallelism and without
    recomputation, or drop the offloading.

    ## References
    * `megatron/training/arguments.py:1950-1951@d98e8a6`: `if args.cpu_offloading_num_layers > 0:
      args.cpu_offloading = True`
    * `megatron/core/transformer/transformer_config.py:1884-1898@d98e8a6`: "CPU offloading can be done only for
      layers less than {num_layers}"; "Currently there is no support for Pipeline parallelism with CPU
      offloading"; "CPU offloading does not work when activation recomputation is enabled"
    """

    code = "TL146"
    name = "megatron-cpu-offloading"
    summary = "activation CPU offloading with pipeline parallelism, recomputation or every layer"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dest = "cpu_offloading_num_layers"
        if not a.known(dest, "recompute_granularity", "recompute_activations"):
            return
        n = a.get(dest)
        if not isinstance(n, int) or n <= 0:
            return
        layers, pp = a.int_field("model.num_layers"), a.int_field("parallel.pipeline")
        if layers is not None and n >= layers:
            yield Finding(f"--cpu-offloading-num-layers {n} with {layers} layers: Megatron-Core stops with \"CPU "
                          f"offloading can be done only for layers less than {layers}\"", at=a.at(dest),
                          also=(("model.num_layers", "number of layers"),))
        if pp is not None and pp > 1:
            yield Finding(f"--cpu-offloading-num-layers {n} with pipeline-model-parallel size {pp}: Megatron-Core stops "
                          "with \"Currently there is no support for Pipeline parallelism with CPU offloading\"",
                          at=a.at(dest), also=(("parallel.pipeline", "pipeline size"),))
        if a.on("recompute_activations") or a.get("recompute_granularity") is not None:
            gran = a.at("recompute_activations") if a.on("recompute_activations") else a.at("recompute_granularity")
            yield Finding(f"--cpu-offloading-num-layers {n} with activation recomputation: Megatron-Core stops with "
                          "\"CPU offloading does not work when activation recomputation is enabled\"", at=a.at(dest),
                          also=((gran, "recomputation"),))
