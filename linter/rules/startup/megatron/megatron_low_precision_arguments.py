"""TL150: FP8/FP4 options Megatron-LM accepts only together (param gather, recipes, bf16 edge layers)"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class LowPrecisionArguments(MegatronRule):
    """## What it does
    Checks the FP8/FP4 options Megatron-LM only accepts together: `--fp8-param-gather` needs
    `--fp8-format` and the distributed optimizer (or FSDP); FP4 and FP8 exclude each other;
    `--fp4-param-gather` needs `--fp4-format`; `--first-last-layers-bf16` does not work with the
    `delayed` recipe (the default) and its layer counts must fit in a pipeline stage; the `custom`
    recipe needs a quantizer factory.

    ## Why is this bad?
    `validate_args` and `TransformerConfig.__post_init__` stop the job on each of these.

    ## Example
    ```bash
    pretrain_gpt.py ... --bf16 --fp8-param-gather
    ```

    ## Fix
    Add `--fp8-format hybrid` and `--use-distributed-optimizer`, pick one of FP8 and FP4, or use a
    scaling recipe other than `delayed` with `--first-last-layers-bf16`.

    ## References
    * `megatron/training/arguments.py:1095-1105@d98e8a6`: "--fp8-param-gather only supported with distributed
      optimizer, torch fsdp2, megatron fsdp, or inference mode"; "--fp4-format and --fp8-format cannot be used
      simultaneously. Please choose one."; "--fp4-param-gather must be used together with --fp4-format."
    * `megatron/core/transformer/transformer_config.py:1527-1567@d98e8a6`: "Delayed scaling does not support
      first / last layer in BF16."; "num_layers_at_start_in_bf16 ({n}) must be between 0 and number of layers
      per pipeline stage ({L // p})."; "fp8_quantizer_factory must be provided when fp8_recipe is 'custom'.";
      "fp8_param must be used together with fp8 mode." (`fp8_param = args.fp8_param_gather`,
      `megatron/training/argument_utils.py:312`)
    """

    code = "TL150"
    name = "megatron-low-precision-arguments"
    summary = "FP8/FP4 options Megatron-LM accepts only together (param gather, recipes, bf16 edge layers)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("fp8", "fp4", "fp8_param_gather", "fp4_param_gather", "use_distributed_optimizer",
                       "use_torch_fsdp2", "use_megatron_fsdp", "fp8_recipe", "first_last_layers_bf16",
                       "fp8_quantizer_factory", "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"):
            return
        fp8, fp4 = a.get("fp8"), a.get("fp4")
        if a.on("fp8_param_gather"):
            if not (a.on("use_distributed_optimizer") or a.on("use_torch_fsdp2") or a.on("use_megatron_fsdp")
                    or a.not_training()):
                yield Finding("--fp8-param-gather without --use-distributed-optimizer: Megatron-LM stops with "
                              "\"--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron "
                              "fsdp, or inference mode\"", at=a.at("fp8_param_gather"),
                              fix="add --use-distributed-optimizer")
            elif fp8 is None:
                yield Finding("--fp8-param-gather without --fp8-format: Megatron-Core stops with \"fp8_param must be used "
                              "together with fp8 mode.\"", at=a.at("fp8_param_gather"))
        if fp4 is not None and fp8 is not None:
            yield Finding(f"--fp4-format {fp4} with --fp8-format {fp8}: Megatron-LM stops with \"--fp4-format and "
                          "--fp8-format cannot be used simultaneously. Please choose one.\"", at=a.at("fp4"),
                          also=((a.at("fp8"), "FP8 format"),))
        if a.on("fp4_param_gather") and fp4 is None:
            yield Finding("--fp4-param-gather without --fp4-format: Megatron-LM stops with \"--fp4-param-gather must be "
                          "used together with --fp4-format.\"", at=a.at("fp4_param_gather"))
        if fp8 is None or (fp4 is not None):
            return
        recipe = a.get("fp8_recipe")
        if a.on("first_last_layers_bf16"):
            if recipe == "delayed":
                yield Finding(f"--first-last-layers-bf16 with the {recipe} FP8 recipe"
                              f"{'' if a.given('fp8_recipe') else ' (the default --fp8-recipe)'}: Megatron-Core stops "
                              "with \"Delayed scaling does not support first / last layer in BF16.\"",
                              at=a.at("first_last_layers_bf16"), also=((a.at("fp8_recipe"), "FP8 recipe"),),
                              fix="add --fp8-recipe tensorwise (or another recipe)")
            else:
                per_stage = None
                layers, pp = a.int_field("model.num_layers"), a.int_field("parallel.pipeline")
                if layers is not None and pp:
                    per_stage = layers // pp
                for dest, which in (("num_layers_at_start_in_bf16", "start"), ("num_layers_at_end_in_bf16", "end")):
                    n = a.get(dest)
                    if per_stage is not None and isinstance(n, int) and not 0 <= n <= per_stage:
                        yield Finding(f"--num-layers-at-{which}-in-bf16 {n} outside 0..{per_stage} (layers per pipeline "
                                      f"stage): Megatron-Core stops with \"num_layers_at_{which}_in_bf16 ({n}) must be "
                                      f"between 0 and number of layers per pipeline stage ({per_stage}).\"", at=a.at(dest))
        if recipe == "custom" and not a.get("fp8_quantizer_factory"):
            yield Finding("--fp8-recipe custom without --fp8-quantizer-factory: Megatron-Core stops with "
                          "\"fp8_quantizer_factory must be provided when fp8_recipe is 'custom'.\"", at=a.at("fp8_recipe"))
