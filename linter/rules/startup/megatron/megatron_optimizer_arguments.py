"""TL141: optimizer options Megatron-LM accepts only with others (emerging optimizers, cpu offload)"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class OptimizerArguments(MegatronRule):
    """## What it does
    Checks optimizer options that Megatron-LM only accepts together with others: the "emerging"
    optimizers (muon, lion, soap, ...), `--optimizer-cpu-offload` and `--load-main-params-from-ckpt`.

    ## Why is this bad?
    Each is an assertion in `validate_args`; the job stops before the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --optimizer-cpu-offload
    ```

    ## Fix
    Add `--use-precision-aware-optimizer` (cpu offload), `--no-load-optim` (main params from the
    checkpoint), and keep emerging optimizers to `--ckpt-format torch|torch_dist` without FSDP.

    ## References
    * `megatron/training/arguments.py:1727-1741@d98e8a6`: for `optimizer not in ('sgd', 'adam')`:
      "Emerging optimizer does not support Torch-FSDP2 for now.", "Emerging optimizer does not support
      Megatron-FSDP for now.", "Emerging optimizer supports torch and torch_dist checkpoint format."
    * `megatron/training/arguments.py:1884-1891@d98e8a6`: "The optimizer cpu offload must be used in
      conjunction with `--use-precision-aware-optimizer`, as the hybrid device optimizer reuses the code path
      of this flag."; "When `--fp8-param-gather` is enabled, the optimizer cpu offload must be used in
      conjunction with `--fp8-recipe delayed`."
    * `megatron/training/arguments.py:1811-1812@d98e8a6`: "--load-main-params-from-ckpt must be used with
      --no-load-optim."
    """

    code = "TL141"
    name = "megatron-optimizer-arguments"
    summary = "optimizer options Megatron-LM accepts only with others (emerging optimizers, cpu offload)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.known("optimizer", "use_torch_fsdp2", "use_megatron_fsdp", "ckpt_format"):
            opt = a.get("optimizer")
            if opt not in ("sgd", "adam"):
                for dest, what in (("use_torch_fsdp2", "Torch-FSDP2"), ("use_megatron_fsdp", "Megatron-FSDP")):
                    if a.on(dest):
                        yield Finding(f"--optimizer {opt} with {a.flag(dest)}: Megatron-LM stops with \"Emerging "
                                      f"optimizer does not support {what} for now.\"", at=a.at("optimizer"),
                                      also=((a.at(dest), "FSDP enabled here"),))
                if a.get("ckpt_format") not in ("torch", "torch_dist"):
                    yield Finding(f"--optimizer {opt} with --ckpt-format {a.get('ckpt_format')}: Megatron-LM stops "
                                  "with \"Emerging optimizer supports torch and torch_dist checkpoint format.\"",
                                  at=a.at_written("ckpt_format", "optimizer"), also=((a.at("optimizer"), "optimizer"),))
        if a.known("optimizer_cpu_offload", "use_precision_aware_optimizer", "fp8_param_gather", "fp8_recipe") \
                and a.on("optimizer_cpu_offload"):
            if not a.on("use_precision_aware_optimizer"):
                yield Finding("--optimizer-cpu-offload without --use-precision-aware-optimizer: Megatron-LM stops with "
                              "\"The optimizer cpu offload must be used in conjunction with "
                              "`--use-precision-aware-optimizer`\"", at=a.at("optimizer_cpu_offload"),
                              fix="add --use-precision-aware-optimizer")
            if a.on("fp8_param_gather") and a.get("fp8_recipe") != "delayed":
                yield Finding(f"--optimizer-cpu-offload with --fp8-param-gather and --fp8-recipe {a.get('fp8_recipe')}: "
                              "Megatron-LM stops with \"When `--fp8-param-gather` is enabled, the optimizer cpu offload "
                              "must be used in conjunction with `--fp8-recipe delayed`.\"",
                              at=a.at("optimizer_cpu_offload"), also=((a.at("fp8_param_gather"), "fp8 param gather"),))
        if a.known("load_main_params_from_ckpt", "no_load_optim") and a.on("load_main_params_from_ckpt") \
                and not a.on("no_load_optim"):
            yield Finding("--load-main-params-from-ckpt without --no-load-optim: Megatron-LM stops with "
                          "\"--load-main-params-from-ckpt must be used with --no-load-optim.\"",
                          at=a.at("load_main_params_from_ckpt"), fix="add --no-load-optim")
