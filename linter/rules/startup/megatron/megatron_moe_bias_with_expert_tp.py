"""TL155: MoE with linear biases (the default) and an expert-tensor-parallel size other than 1"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class MoeBiasWithExpertTensorParallel(MegatronRule):
    """## What it does
    Checks MoE models that keep linear biases (the default; `--disable-bias-linear` removes them)
    with an expert-tensor-parallel size other than 1 (it defaults to the tensor-parallel size).

    ## Why is this bad?
    Megatron-Core asserts "Bias in Moe is only supported when ETP==1" when it builds the model
    config, so an MoE run with TP > 1 that forgets `--disable-bias-linear` stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 8 --tensor-model-parallel-size 2
    ```

    ## Fix
    Add `--disable-bias-linear` (as Megatron's MoE examples do), or `--expert-tensor-parallel-size 1`.

    ## References
    * `megatron/core/transformer/transformer_config.py:2612-2615@d98e8a6`: `if self.num_moe_experts is not
      None and self.add_bias_linear: assert self.expert_tensor_parallel_size == 1`, "Bias in Moe is only
      supported when ETP==1"
    * `megatron/training/arguments.py:587-588@d98e8a6`: ETP defaults to the tensor-parallel size
    """

    code = "TL155"
    name = "megatron-moe-bias-with-expert-tp"
    summary = "MoE with linear biases (the default) and an expert-tensor-parallel size other than 1"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("num_experts", "add_bias_linear"):
            return
        experts, etp = a.get("num_experts"), a.int_field("parallel.expert_tensor")
        if not experts or etp is None or etp == 1 or not a.on("add_bias_linear"):
            return
        how = "given" if a.given("expert_tensor_parallel_size") else "defaults to the tensor-parallel size"
        yield Finding(f"MoE ({experts} experts) with linear biases (no --disable-bias-linear) and expert-tensor-parallel "
                      f"size {etp} ({how}): Megatron-Core stops with \"Bias in Moe is only supported when ETP==1\"",
                      at="parallel.expert_tensor", also=((a.at("num_experts"), "MoE enabled here"),),
                      fix="add --disable-bias-linear")
