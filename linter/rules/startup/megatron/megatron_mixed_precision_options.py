"""TL151: --fp16-lm-cross-entropy without fp16, fp32 residuals in fp32, or bf16 main grads with fp32 all-reduce"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class MixedPrecisionOptions(MegatronRule):
    """## What it does
    Checks options that only make sense in a given precision: `--fp16-lm-cross-entropy` needs
    `--fp16`; `--fp32-residual-connection` needs `--fp16` or `--bf16`; with `--bf16`,
    `--accumulate-allreduce-grads-in-fp32` needs `--main-grads-dtype fp32`.

    ## Why is this bad?
    `validate_args` asserts each of them; the job stops before the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --bf16 --fp16-lm-cross-entropy
    ```

    ## Fix
    Drop the option, or train in the precision it is meant for.

    ## References
    * `megatron/training/arguments.py:1372-1376@d98e8a6`: "lm cross entropy in fp16 only support in fp16
      mode."; "residual connection in fp32 only supported when using fp16 or bf16."
    * `megatron/training/arguments.py:1208-1211@d98e8a6`: "--main-grads-dtype can only be fp32 when
      --accumulate-allreduce-grads-in-fp32 is set"
    """

    code = "TL151"
    name = "megatron-mixed-precision-options"
    summary = "--fp16-lm-cross-entropy without fp16, fp32 residuals in fp32, or bf16 main grads with fp32 all-reduce"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("fp16", "bf16", "fp16_lm_cross_entropy", "fp32_residual_connection",
                       "accumulate_allreduce_grads_in_fp32", "main_grads_dtype"):
            return
        fp16, bf16 = a.on("fp16"), a.on("bf16")
        if fp16 and bf16:
            return  # fp16 with bf16 is its own error (cross-framework rule)
        if a.on("fp16_lm_cross_entropy") and not fp16:
            yield Finding(f"--fp16-lm-cross-entropy without --fp16 ({'bf16' if bf16 else 'fp32'} training): Megatron-LM "
                          "stops with \"lm cross entropy in fp16 only support in fp16 mode.\"",
                          at=a.at("fp16_lm_cross_entropy"))
        if a.on("fp32_residual_connection") and not (fp16 or bf16):
            yield Finding("--fp32-residual-connection in fp32 training: Megatron-LM stops with \"residual connection in "
                          "fp32 only supported when using fp16 or bf16.\"", at=a.at("fp32_residual_connection"))
        if bf16 and a.on("accumulate_allreduce_grads_in_fp32") and a.get("main_grads_dtype") != "fp32":
            yield Finding(f"--accumulate-allreduce-grads-in-fp32 with --main-grads-dtype {a.get('main_grads_dtype')}: "
                          "Megatron-LM stops with \"--main-grads-dtype can only be fp32 when "
                          "--accumulate-allreduce-grads-in-fp32 is set\"", at=a.at("main_grads_dtype"),
                          also=((a.at("accumulate_allreduce_grads_in_fp32"), "fp32 all-reduce"),))
