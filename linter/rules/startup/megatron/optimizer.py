"""TL140-TL143: the optimizer, the distributed optimizer and Megatron-FSDP."""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Severity
from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class OverlapParamGather(MegatronRule):
    """## What it does
    Checks the prerequisites of `--overlap-param-gather` and
    `--overlap-param-gather-with-optimizer-step`.

    ## Why is this bad?
    Megatron-LM asserts them in `validate_args` and the job stops before the first step:

    * `--overlap-param-gather` needs the distributed optimizer (or Megatron-FSDP, or
      `--optimizer dist_muon`) and `--overlap-grad-reduce`;
    * `--overlap-param-gather-with-optimizer-step` needs the distributed optimizer,
      `--overlap-param-gather`, the interleaved schedule (virtual pipeline stages) and the legacy
      `torch` checkpoint format (`use_dist_ckpt = ckpt_format != "torch"`, and the default
      format is `torch_dist`).

    ## Example
    ```bash
    pretrain_gpt.py ... --overlap-param-gather
    ```

    ## Fix
    Add `--use-distributed-optimizer --overlap-grad-reduce`, or drop `--overlap-param-gather`.

    ## References
    * `megatron/training/arguments.py:1024-1029@d98e8a6`: `assert args.use_distributed_optimizer or
      args.use_megatron_fsdp or args.optimizer == 'dist_muon'`, "--overlap-param-gather only supported
      with distributed optimizer, megatron fsdp, or dist_muon"; `assert args.overlap_grad_reduce`,
      "Must use --overlap-param-gather with --overlap-grad-reduce"
    * `megatron/training/arguments.py:1066-1074@d98e8a6`: "--overlap-param-gather-with-optimizer-step only
      supported with distributed optimizer", "Must use --overlap-param-gather-with-optimizer-step with
      --overlap-param-gather", "--overlap-param-gather-with-optimizer-step only supported with interleaved
      pipeline parallelism", "--overlap-param-gather-with-optimizer-step not supported with distributed
      checkpointing yet"
    """

    code = "TL140"
    name = "megatron-overlap-param-gather"
    summary = "--overlap-param-gather without the distributed optimizer or --overlap-grad-reduce"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        needs = ("overlap_param_gather", "use_distributed_optimizer", "use_megatron_fsdp", "optimizer",
                 "overlap_grad_reduce")
        if a.known(*needs) and a.on("overlap_param_gather"):
            if not (a.on("use_distributed_optimizer") or a.on("use_megatron_fsdp") or a.get("optimizer") == "dist_muon"):
                yield Finding(
                    f"{a.flag('overlap_param_gather')} without --use-distributed-optimizer: Megatron-LM stops with "
                    "\"--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or dist_muon\"",
                    at=a.at("overlap_param_gather"), fix="add --use-distributed-optimizer")
            if not a.on("overlap_grad_reduce"):
                yield Finding(
                    f"{a.flag('overlap_param_gather')} without --overlap-grad-reduce: Megatron-LM stops with "
                    "\"Must use --overlap-param-gather with --overlap-grad-reduce\"",
                    at=a.at("overlap_param_gather"), fix="add --overlap-grad-reduce")
        dest = "overlap_param_gather_with_optimizer_step"
        if not (a.known(dest, *needs, "ckpt_format") and a.on(dest)):
            return
        if not a.on("use_distributed_optimizer"):
            yield Finding(f"{a.flag(dest)} without --use-distributed-optimizer: Megatron-LM stops with "
                          f"\"{a.flag(dest)} only supported with distributed optimizer\"", at=a.at(dest))
        if not a.on("overlap_param_gather"):
            yield Finding(f"{a.flag(dest)} without --overlap-param-gather: Megatron-LM stops with "
                          "\"Must use --overlap-param-gather-with-optimizer-step with --overlap-param-gather\"",
                          at=a.at(dest))
        known, vpp = a.vpp()
        if known and vpp is None:
            yield Finding(f"{a.flag(dest)} without virtual pipeline stages: Megatron-LM stops with "
                          "\"--overlap-param-gather-with-optimizer-step only supported with interleaved pipeline "
                          "parallelism\"", at=a.at(dest),
                          also=(("parallel.pipeline", "pipeline size"),))
        if a.get("ckpt_format") != "torch":
            yield Finding(f"{a.flag(dest)} with --ckpt-format {a.get('ckpt_format')} (distributed checkpointing): "
                          "Megatron-LM stops with \"--overlap-param-gather-with-optimizer-step not supported with "
                          "distributed checkpointing yet\"", at=a.at(dest),
                          also=((a.at("ckpt_format"), "checkpoint format"),), fix="add --ckpt-format torch")


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


class FsdpArguments(MegatronRule):
    """## What it does
    Checks the combinations Megatron-LM refuses with `--use-torch-fsdp2` and `--use-megatron-fsdp`,
    and the checkpoint formats tied to them (`--ckpt-format torch_dcp`, `fsdp_dtensor`).

    ## Why is this bad?
    `validate_args` asserts each of them; the job stops before the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --use-torch-fsdp2 --pipeline-model-parallel-size 2
    ```

    ## Fix
    FSDP2 runs without pipeline or expert parallelism, without the distributed optimizer, with
    `--no-gradient-accumulation-fusion`, `--untie-embeddings-and-output-weights`, bf16 or fp32, and
    `--ckpt-format torch_dist|torch_dcp`. Megatron-FSDP needs `--ckpt-format fsdp_dtensor` and the
    sgd or adam optimizer.

    ## References
    * `megatron/training/arguments.py:1031-1049@d98e8a6`: "--use-torch-fsdp2 is not supported with pipeline
      parallelism", "... with expert parallelism", "--use-torch-fsdp2 is not supported with MCore's distributed
      optimizer", "--use-torch-fsdp2 is not supported with gradient accumulation fusion", "--use-torch-fsdp2
      requires --ckpt-format torch_dist or torch_dcp", "--use-torch-fsdp2 requires
      --untie-embeddings-and-output-weights", "--use-torch-fsdp2 not supported with fp16 yet"
    * `megatron/training/arguments.py:1118-1170@d98e8a6`: "--megatron-fsdp-version 2 is not compatible with
      --use-distributed-optimizer", "Megatron-FSDP does not support the {optimizer} optimizer yet.",
      "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format."
    * `megatron/training/arguments.py:1667-1676@d98e8a6`: "--ckpt-format torch_dcp is only tested with FSDP.",
      "--ckpt-format torch_dcp is not tested with megatron tensor parallelism.", "... pipeline parallelism.",
      "--ckpt-format fsdp_dtensor is only tested with Megatron FSDP."
    """

    code = "TL142"
    name = "megatron-fsdp-arguments"
    summary = "FSDP2 / Megatron-FSDP combined with options Megatron-LM refuses, or the wrong checkpoint format"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        pp, ep, tp = a.int_field("parallel.pipeline"), a.int_field("parallel.expert"), a.int_field("parallel.tensor")
        dests = ("use_torch_fsdp2", "use_distributed_optimizer", "gradient_accumulation_fusion", "ckpt_format",
                 "untie_embeddings_and_output_weights", "fp16", "use_megatron_fsdp", "megatron_fsdp_version", "optimizer")
        if not a.known(*dests):
            return
        fmt = a.get("ckpt_format")
        if a.on("use_torch_fsdp2"):
            fsdp = a.flag("use_torch_fsdp2")
            if pp is not None and pp > 1:
                yield Finding(f"{fsdp} with pipeline-model-parallel size {pp}: Megatron-LM stops with "
                              "\"--use-torch-fsdp2 is not supported with pipeline parallelism\"", at="parallel.pipeline",
                              also=((a.at("use_torch_fsdp2"), "FSDP2 enabled here"),))
            if ep is not None and ep > 1:
                yield Finding(f"{fsdp} with expert-model-parallel size {ep}: Megatron-LM stops with "
                              "\"--use-torch-fsdp2 is not supported with expert parallelism\"", at="parallel.expert",
                              also=((a.at("use_torch_fsdp2"), "FSDP2 enabled here"),))
            for dest, message in (
                    ("use_distributed_optimizer", "--use-torch-fsdp2 is not supported with MCore's distributed optimizer"),
                    ("gradient_accumulation_fusion", "--use-torch-fsdp2 is not supported with gradient accumulation "
                                                     "fusion"),
                    ("fp16", "--use-torch-fsdp2 not supported with fp16 yet")):
                if a.on(dest):
                    hint = " (on by default: add --no-gradient-accumulation-fusion)" \
                        if dest == "gradient_accumulation_fusion" else ""
                    yield Finding(f"{fsdp} with {dest.replace('_', '-')}{hint}: Megatron-LM stops with \"{message}\"",
                                  at=a.at("use_torch_fsdp2") if dest == "gradient_accumulation_fusion" else a.at(dest),
                                  also=((a.at("use_torch_fsdp2"), "FSDP2 enabled here"),))
            if fmt not in ("torch_dist", "torch_dcp"):
                yield Finding(f"{fsdp} with --ckpt-format {fmt}: Megatron-LM stops with \"--use-torch-fsdp2 requires "
                              "--ckpt-format torch_dist or torch_dcp\"", at=a.at_written("ckpt_format", "use_torch_fsdp2"),
                              also=((a.at("use_torch_fsdp2"), "FSDP2 enabled here"),))
            if not a.on("untie_embeddings_and_output_weights"):
                yield Finding(f"{fsdp} with tied embeddings: Megatron-LM stops with \"--use-torch-fsdp2 requires "
                              "--untie-embeddings-and-output-weights\"", at=a.at("use_torch_fsdp2"),
                              fix="add --untie-embeddings-and-output-weights")
        if a.on("use_megatron_fsdp"):
            fsdp = a.flag("use_megatron_fsdp")
            if a.get("megatron_fsdp_version") == 2 and a.on("use_distributed_optimizer"):
                yield Finding("--megatron-fsdp-version 2 with --use-distributed-optimizer: Megatron-LM stops with "
                              "\"--megatron-fsdp-version 2 is not compatible with --use-distributed-optimizer\"",
                              at=a.at("use_distributed_optimizer"))
            if a.get("optimizer") not in ("sgd", "adam"):
                yield Finding(f"{fsdp} with --optimizer {a.get('optimizer')}: Megatron-LM stops with \"Megatron-FSDP "
                              f"does not support the {a.get('optimizer')} optimizer yet.\"", at=a.at("optimizer"))
            if fmt != "fsdp_dtensor":
                yield Finding(f"{fsdp} with --ckpt-format {fmt}: Megatron-LM stops with \"Megatron-FSDP requires the "
                              "`fsdp_dtensor` checkpointing format.\"", at=a.at_written("ckpt_format", "use_megatron_fsdp"),
                              also=((a.at("use_megatron_fsdp"), "Megatron-FSDP enabled here"),),
                              fix="add --ckpt-format fsdp_dtensor")
        if fmt == "torch_dcp":
            if not a.on("use_torch_fsdp2"):
                yield Finding("--ckpt-format torch_dcp without --use-torch-fsdp2: Megatron-LM stops with "
                              "\"--ckpt-format torch_dcp is only tested with FSDP.\"", at=a.at("ckpt_format"))
            for size, field, what in ((tp, "parallel.tensor", "tensor"), (pp, "parallel.pipeline", "pipeline")):
                if size is not None and size > 1:
                    yield Finding(f"--ckpt-format torch_dcp with {what}-model-parallel size {size}: Megatron-LM stops "
                                  f"with \"--ckpt-format torch_dcp is not tested with megatron {what} parallelism.\"",
                                  at=a.at("ckpt_format"), also=((field, f"{what} parallel size"),))
        if fmt == "fsdp_dtensor" and not a.on("use_megatron_fsdp"):
            yield Finding("--ckpt-format fsdp_dtensor without --use-megatron-fsdp: Megatron-LM stops with "
                          "\"--ckpt-format fsdp_dtensor is only tested with Megatron FSDP.\"", at=a.at("ckpt_format"))


class FreezeAllLayers(MegatronRule):
    """## What it does
    Warns when `--freeze-all-layers` is combined with `--use-distributed-optimizer` or
    `--overlap-param-gather`.

    ## Why is this bad?
    Megatron-LM silently turns those options off (it only prints a warning), so the run does not
    use the memory layout the script asks for.

    ## Example
    ```bash
    pretrain_gpt.py ... --freeze-all-layers --use-distributed-optimizer
    ```

    ## Fix
    Drop the options Megatron-LM disables anyway.

    ## References
    * `megatron/training/arguments.py:1840-1849@d98e8a6`: "--freeze-all-layers incompatible with
      use_distributed_optimizer. Disabling use_distributed_optimizer."; "--freeze-all-layers incompatible
      with overlap_param_gather. Disabling overlap_param_gather."
    """

    code = "TL143"
    name = "megatron-freeze-all-layers"
    default_severity = Severity.WARNING
    summary = "--freeze-all-layers silently disables the distributed optimizer and overlap-param-gather"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not (a.known("freeze_all_layers") and a.on("freeze_all_layers")):
            return
        for dest in ("use_distributed_optimizer", "overlap_param_gather"):
            if a.known(dest) and a.on(dest):
                yield Finding(f"--freeze-all-layers with {a.flag(dest)}: Megatron-LM disables {dest} (\"--freeze-all-"
                              f"layers incompatible with {dest}. Disabling {dest}.\")", at=a.at(dest),
                              also=((a.at("freeze_all_layers"), "--freeze-all-layers"),))


RULES: list[type] = [
    OverlapParamGather,
    OptimizerArguments,
    FsdpArguments,
    FreezeAllLayers,
]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
