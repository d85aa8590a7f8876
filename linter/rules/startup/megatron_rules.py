"""TL140-TL179: Megatron-LM's own start-up checks (``validate_args`` and the Megatron-Core
config ``__post_init__`` checks it triggers), decided statically.

Cross-framework failures (batch triple, world-size divisibility, heads/TP, layers % PP, fp16+bf16,
SP without TP, seq vs positions, experts % EP) are in :mod:`.cross_framework`; removed and renamed
flags are input diagnostics (TL008) from the adapter. Every rule here runs only on runs read as
current Megatron-LM (not Megatron-DeepSpeed, not old Megatron-LM copies): their conditions and
messages are those of Megatron-LM at d98e8a6.
"""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs, is_current
from trainlint.spec import TrainingSpec

ARGS = "megatron/training/arguments.py"
TCFG = "megatron/core/transformer/transformer_config.py"
CALC = "megatron/core/num_microbatches_calculator.py"


class _MegatronRule(Rule):
    """Runs :meth:`findings` on current Megatron-LM runs only."""

    frameworks = ("megatron",)

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if not is_current(spec):
            return
        yield from self.findings(MegatronArgs(spec), ctx)

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:  # pragma: no cover
        raise NotImplementedError


# ---------------------------------------------------------------------------------- optimizer


class OverlapParamGather(_MegatronRule):
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


class OptimizerArguments(_MegatronRule):
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


class FsdpArguments(_MegatronRule):
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


class FreezeAllLayers(_MegatronRule):
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


# ------------------------------------------------------------------------------- recomputation


class RecomputeArguments(_MegatronRule):
    """## What it does
    Checks `--recompute-method` and `--recompute-num-layers` against `--recompute-granularity`.

    ## Why is this bad?
    Megatron-Core's `TransformerConfig.__post_init__` (built at start-up from the arguments) and
    `validate_args` refuse: full recomputation without a method or without a number of layers, and
    selective recomputation with either (`--recompute-activations` means selective).

    ## Example
    ```bash
    pretrain_gpt.py ... --recompute-granularity full
    ```

    ## Fix
    For full recomputation give both: `--recompute-method uniform --recompute-num-layers 1`. For
    selective recomputation give neither.

    ## References
    * `megatron/core/transformer/transformer_config.py:1908-1917@d98e8a6`: "Using recompute_granularity: full
      so recompute_method must be \\"block\\" or \\"uniform\\""
    * `megatron/core/transformer/transformer_config.py:1919-1932@d98e8a6`: "When using recompute_granularity:
      full recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: {L // p}"; "When using
      recompute_granularity: selective recompute_num_layers must be None."
    * `megatron/training/arguments.py:1425-1428@d98e8a6`: "recompute method is not yet supported for
      selective recomputing granularity"
    """

    code = "TL144"
    name = "megatron-recompute-arguments"
    summary = "full recomputation without --recompute-method/--recompute-num-layers, or selective with them"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("recompute_granularity", "recompute_activations", "recompute_method", "recompute_num_layers"):
            return
        granularity = "selective" if a.on("recompute_activations") else a.get("recompute_granularity")
        gran_at = a.at("recompute_activations") if a.on("recompute_activations") else a.at("recompute_granularity")
        method, layers = a.get("recompute_method"), a.get("recompute_num_layers")
        if granularity == "full":
            per_rank = a.layers_per_stage()
            bound = f" (between 1 and {per_rank} layers per pipeline rank)" if per_rank else ""
            if method is None:
                yield Finding("--recompute-granularity full without --recompute-method: Megatron-Core stops with "
                              "\"Using recompute_granularity: full so recompute_method must be \"block\" or "
                              "\"uniform\"\"", at=gran_at, fix="add --recompute-method uniform (or block)")
            if layers is None:
                yield Finding("--recompute-granularity full without --recompute-num-layers: Megatron-Core stops with "
                              f"\"recompute_num_layers must be between 1 and num_layers_per_pipeline_rank\"{bound}",
                              at=gran_at, fix="add --recompute-num-layers 1")
        elif granularity == "selective":
            if method is not None:
                yield Finding(f"{a.flag('recompute_method')} {method} with selective recomputation: Megatron-LM stops "
                              "with \"recompute method is not yet supported for selective recomputing granularity\"",
                              at=a.at("recompute_method"), also=((gran_at, "selective recomputation"),))
            if layers is not None:
                yield Finding(f"{a.flag('recompute_num_layers')} {layers} with selective recomputation: Megatron-Core "
                              "stops with \"When using recompute_granularity: selective recompute_num_layers must be "
                              "None.\"", at=a.at("recompute_num_layers"), also=((gran_at, "selective recomputation"),))


class DistributeSavedActivations(_MegatronRule):
    """## What it does
    Checks the conditions of `--distribute-saved-activations`.

    ## Why is this bad?
    Megatron-LM only distributes recomputed activations across a tensor-parallel group, with full
    recomputation and a recompute method, and not with sequence parallelism; otherwise it stops.

    ## Example
    ```bash
    pretrain_gpt.py ... --tensor-model-parallel-size 1 --distribute-saved-activations
    ```

    ## Fix
    Use it with `--tensor-model-parallel-size` > 1, `--recompute-granularity full`, a
    `--recompute-method` and without `--sequence-parallel`, or drop it.

    ## References
    * `megatron/training/arguments.py:1410-1419@d98e8a6`: "can distribute recomputed activations only across
      tensor model parallel groups", "distributed recompute activations is only application to full recompute
      granularity", "for distributed recompute activations to work you need to use a recompute method "
    * `megatron/core/transformer/transformer_config.py:1934-1937@d98e8a6`: "distribute_saved_activations: True
      must be false when sequence parallel is enabled: True"
    """

    code = "TL145"
    name = "megatron-distribute-saved-activations"
    summary = "--distribute-saved-activations without TP > 1, full recomputation and a method, or with SP"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dest = "distribute_saved_activations"
        if not (a.known(dest, "recompute_granularity", "recompute_activations", "recompute_method") and a.on(dest)):
            return
        tp = a.int_field("parallel.tensor")
        granularity = "selective" if a.on("recompute_activations") else a.get("recompute_granularity")
        if tp is not None and tp <= 1:
            yield Finding(f"--distribute-saved-activations with tensor-model-parallel size {tp}: Megatron-LM stops with "
                          "\"can distribute recomputed activations only across tensor model parallel groups\"",
                          at=a.at(dest), also=(("parallel.tensor", "tensor parallel size"),))
            return  # Megatron stops at the first assertion; SP is off anyway with TP 1
        if granularity != "full":
            yield Finding(f"--distribute-saved-activations with recompute granularity {granularity}: Megatron-LM stops "
                          "with \"distributed recompute activations is only application to full recompute granularity\"",
                          at=a.at(dest))
        elif a.get("recompute_method") is None:
            yield Finding("--distribute-saved-activations without --recompute-method: Megatron-LM stops with \"for "
                          "distributed recompute activations to work you need to use a recompute method\"", at=a.at(dest))
        elif tp is not None and a.spec.value("parallel.sequence_parallel") is True:
            yield Finding("--distribute-saved-activations with --sequence-parallel: Megatron-Core stops with "
                          "\"distribute_saved_activations: True must be false when sequence parallel is enabled\"",
                          at=a.at(dest), also=(("parallel.sequence_parallel", "sequence parallelism"),))


class CpuOffloading(_MegatronRule):
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


# ----------------------------------------------------------------------- pipeline layout


class VirtualPipelineArguments(_MegatronRule):
    """## What it does
    Checks the arguments that set virtual pipeline stages (interleaving):
    `--num-layers-per-virtual-pipeline-stage`, `--num-virtual-stages-per-pipeline-rank` and
    `--pipeline-model-parallel-layout`. (Layers per stage divisible by the layers per virtual stage
    is the cross-framework layers rule, TL105.)

    ## Why is this bad?
    `validate_args` accepts at most one of the three, and refuses
    `--num-layers-per-virtual-pipeline-stage` with uneven first/last stages.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-layers-per-virtual-pipeline-stage 2 --num-virtual-stages-per-pipeline-rank 4
    ```

    ## Fix
    Give one of the three; with uneven first/last stages use `--num-virtual-stages-per-pipeline-rank`.

    ## References
    * `megatron/training/arguments.py:928-939@d98e8a6`: "No more than one of the following arguments can be set
      at the same time: --num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,
      --pipeline-model-parallel-layout."
    * `megatron/training/arguments.py:955-956@d98e8a6`: "please use --num-virtual-stages-per-pipeline-rank to
      specify virtual pipeline parallel degree when enable uneven pipeline parallelism"
    """

    code = "TL147"
    name = "megatron-virtual-pipeline-arguments"
    summary = "more than one virtual-pipeline argument, or layers per virtual stage with uneven first/last stages"

    _DESTS = ("num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
              "pipeline_model_parallel_layout")

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        given = [d for d in self._DESTS if a.given(d)]
        if len(given) > 1:
            yield Finding(f"{' and '.join(a.flag(d) for d in given)} are all given: Megatron-LM stops with \"No more than "
                          "one of the following arguments can be set at the same time\"", at=a.at(given[-1]),
                          also=tuple((a.at(d), "also given") for d in given[:-1]))
            return
        dest = "num_layers_per_virtual_pipeline_stage"
        if given != [dest]:
            return
        uneven = [d for d in ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers") if a.given(d)]
        if uneven:
            yield Finding(f"{a.flag(dest)} with {a.flag(uneven[0])}: Megatron-LM stops with \"please use "
                          "--num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel degree when "
                          "enable uneven pipeline parallelism\"", at=a.at(dest),
                          also=tuple((a.at(d), "uneven pipeline stage") for d in uneven))
            return


class InterleavedPipelineSize(_MegatronRule):
    """## What it does
    Checks the pipeline size of an interleaved (virtual pipeline) schedule.

    ## Why is this bad?
    With virtual pipeline stages, Megatron-LM needs a pipeline-model-parallel size > 1, and > 2 when
    `--no-overlap-p2p-communication` is given; otherwise it stops.

    ## Example
    ```bash
    pretrain_gpt.py ... --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 \\
        --no-overlap-p2p-communication
    ```

    ## Fix
    Raise the pipeline size, keep P2P overlap on, or drop the virtual stages.

    ## References
    * `megatron/training/arguments.py:1000-1009@d98e8a6`: "When interleaved schedule is used,
      pipeline-model-parallel size should be greater than 1"; "When interleaved schedule is used and p2p
      communication overlap is disabled, pipeline-model-parallel size should be greater than 2 to avoid having
      multiple p2p sends and recvs between same 2 ranks per communication batch"
    """

    code = "TL148"
    name = "megatron-interleaved-pipeline-size"
    summary = "virtual pipeline stages with a pipeline size of 1 (or 2 without P2P overlap)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        known, vpp = a.vpp()
        pp = a.int_field("parallel.pipeline")
        if not known or vpp is None or pp is None or not a.known("overlap_p2p_comm"):
            return
        setter = next((d for d in ("num_virtual_stages_per_pipeline_rank", "num_layers_per_virtual_pipeline_stage")
                       if a.given(d)), None)
        also = ((a.at(setter), f"{vpp} virtual stages per pipeline rank"),) if setter else ()
        if a.on("overlap_p2p_comm"):
            if pp <= 1:
                yield Finding(f"{vpp} virtual pipeline stages with pipeline-model-parallel size {pp}: Megatron-LM stops "
                              "with \"When interleaved schedule is used, pipeline-model-parallel size should be greater "
                              "than 1\"", at=a.at_written("pipeline_model_parallel_size", *( [setter] if setter else [])),
                              also=also)
        elif pp <= 2:
            yield Finding(f"{vpp} virtual pipeline stages with pipeline-model-parallel size {pp} and "
                          "--no-overlap-p2p-communication: Megatron-LM stops with \"pipeline-model-parallel size should "
                          "be greater than 2 to avoid having multiple p2p sends and recvs between same 2 ranks\"",
                          at=a.at_written("pipeline_model_parallel_size", *([setter] if setter else [])),
                          also=also + ((a.at("overlap_p2p_comm"), "P2P overlap disabled"),))


class UnevenPipelineStages(_MegatronRule):
    """## What it does
    Checks uneven pipeline stages (`--decoder-first-pipeline-num-layers`,
    `--decoder-last-pipeline-num-layers`): positive counts, not combined with
    `--account-for-embedding/loss-in-pipeline-split` or a layout, and the remaining layers spread
    evenly over the middle stages (and over the virtual stages).

    ## Why is this bad?
    Megatron-Core's `TransformerConfig.__post_init__` raises for each of these before training.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-layers 30 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 6
    ```
    (24 layers on 3 middle/last stages is fine; 25 would not be.)

    ## Fix
    Choose first/last stage sizes such that the rest divides evenly over the other stages.

    ## References
    * `megatron/core/transformer/transformer_config.py:2229-2240@d98e8a6`: "num_layers_in_first_pipeline_stage
      and num_layers_in_last_pipeline_stage cannot beset at the same time with
      account_for_embedding_in_pipeline_splitand account_for_loss_in_pipeline_split"
    * `megatron/core/transformer/transformer_config.py:2244-2258@d98e8a6`: "pipeline_model_parallel_layout
      cannot be set with other pipeline layout arguments."
    * `megatron/core/transformer/transformer_config.py:2298-2369@d98e8a6`: "num_layers_in_first_pipeline_stage
      must be larger than 0"; "number of layers at first stage: {n}must be divisible by virtual pipelineparallel
      degree {vpp}"; "Mismatch: {n} middle layers remaining but {m} middle PP stages available."; "number of
      layers at middle stage: {n} must be divisible bythe middle pipeline model parallel size {m}"; "number of
      layers on each middle pipeline rank:{n} must be divisible by virtualpipeline parallel degree {vpp}"
    * `megatron/training/argument_utils.py:310@d98e8a6`: `num_layers_in_first_pipeline_stage =
      args.decoder_first_pipeline_num_layers`
    """

    code = "TL149"
    name = "megatron-uneven-pipeline-stages"
    summary = "first/last pipeline stage sizes that leave the middle stages uneven, or conflicting layout args"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        first_d, last_d = "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers"
        if not a.known(first_d, last_d, "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
                       "pipeline_model_parallel_layout"):
            return
        uneven = [d for d in (first_d, last_d) if a.get(d) is not None]
        accounts = [d for d in ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")
                    if a.on(d)]
        if a.given("pipeline_model_parallel_layout"):
            others = uneven + accounts
            if others:
                yield Finding(f"--pipeline-model-parallel-layout with {a.flag(others[0])}: Megatron-Core stops with "
                              "\"pipeline_model_parallel_layout cannot be set with other pipeline layout arguments.\"",
                              at=a.at(others[0]), also=((a.at("pipeline_model_parallel_layout"), "layout"),))
            return
        if not uneven:
            return
        if accounts:
            yield Finding(f"{a.flag(uneven[0])} with {a.flag(accounts[0])}: Megatron-Core stops with "
                          "\"num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot be set at the "
                          "same time with account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split\"",
                          at=a.at(accounts[0]), also=((a.at(uneven[0]), "uneven stage"),))
            return
        layers, pp = a.int_field("model.num_layers"), a.int_field("parallel.pipeline")
        known, vpp = a.vpp()
        remaining, middle = layers, pp
        for dest, which in ((first_d, "first"), (last_d, "last")):
            n = a.get(dest)
            if n is None:
                continue
            if not isinstance(n, int):
                return
            if n <= 0:
                yield Finding(f"{a.flag(dest)} {n}: Megatron-Core stops with \"num_layers_in_{which}_pipeline_stage must "
                              "be larger than 0\"", at=a.at(dest))
                return
            if known and vpp is not None and n % vpp:
                yield Finding(f"{a.flag(dest)} {n} is not a multiple of {vpp} virtual stages: Megatron-Core stops with "
                              f"\"number of layers at {which} stage: {n} must be divisible by virtual pipeline parallel "
                              f"degree {vpp}\"", at=a.at(dest))
            if remaining is not None and middle is not None:
                remaining, middle = remaining - n, middle - 1
        if remaining is None or middle is None:
            return
        sizes = ", ".join(f"{a.flag(d)} {a.get(d)}" for d in uneven)
        also = tuple((a.at(d), "uneven stage") for d in uneven[:-1]) + (("model.num_layers", f"{layers} layers"),
                                                                       ("parallel.pipeline", f"PP {pp}"))
        if bool(remaining) != bool(middle) or remaining < 0 or middle < 0:
            yield Finding(f"{layers} layers over PP {pp} with {sizes}: {remaining} middle layers remain for {middle} "
                          f"middle stages; Megatron-Core stops with \"Mismatch: {remaining} middle layers remaining but "
                          f"{middle} middle PP stages available.\"", at=a.at(uneven[-1]), also=also)
        elif middle and remaining % middle:
            yield Finding(f"{layers} layers over PP {pp} with {sizes}: {remaining} middle layers do not divide over "
                          f"{middle} middle stages; Megatron-Core stops with \"number of layers at middle stage: "
                          f"{remaining} must be divisible by the middle pipeline model parallel size {middle}\"",
                          at=a.at(uneven[-1]), also=also)
        elif middle and known and vpp is not None and (remaining // middle) % vpp:
            yield Finding(f"{remaining // middle} layers on each middle pipeline rank are not a multiple of {vpp} virtual "
                          "stages: Megatron-Core stops with \"number of layers on each middle pipeline rank: "
                          f"{remaining // middle} must be divisible by virtual pipeline parallel degree {vpp}\"",
                          at=a.at(uneven[-1]), also=also)


# ------------------------------------------------------------------------------------ precision


class LowPrecisionArguments(_MegatronRule):
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
            if not (a.on("use_distributed_optimizer") or a.on("use_torch_fsdp2") or a.on("use_megatron_fsdp")):
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


class MixedPrecisionOptions(_MegatronRule):
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


# ------------------------------------------------------------------------ tensor / context


class TpCommOverlapWithoutSequenceParallel(_MegatronRule):
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


class HierarchicalContextParallel(_MegatronRule):
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


# ------------------------------------------------------------------------------------- MoE


class MoeArgumentsWithoutExperts(_MegatronRule):
    """## What it does
    Checks MoE-only options given to a dense model (no `--num-experts`): `--moe-ffn-hidden-size`
    (unless `--moe-layer-freq` leaves dense layers) and `--moe-latent-size`.

    ## Why is this bad?
    Megatron-LM stops: these size MoE layers that do not exist, and usually mean `--num-experts` was
    forgotten.

    ## Example
    ```bash
    pretrain_gpt.py ... --moe-ffn-hidden-size 1408
    ```

    ## Fix
    Add `--num-experts N`, or drop the MoE options.

    ## References
    * `megatron/core/transformer/transformer_config.py:1689-1706@d98e8a6`: "moe_ffn_hidden_size is set but
      num_moe_experts is None. Please set num_moe_experts or remove moe_ffn_hidden_size."
    * `megatron/training/arguments.py:1979-1982@d98e8a6`: "MoE latent projection dimension has to be greater than
      zero."; "MoE latent projections are applicable only for MoE models."
    """

    code = "TL154"
    name = "megatron-moe-arguments-without-experts"
    summary = "--moe-ffn-hidden-size or --moe-latent-size on a model without --num-experts"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("num_experts", "moe_ffn_hidden_size", "moe_latent_size", "moe_layer_freq"):
            return
        experts = a.get("num_experts")
        dense = experts is None or experts == 0
        freq = a.get("moe_layer_freq")
        mixed = (isinstance(freq, int) and freq > 1) or (isinstance(freq, str) and "0" in freq)
        if dense and a.get("moe_ffn_hidden_size") is not None and not mixed:
            yield Finding(f"--moe-ffn-hidden-size {a.get('moe_ffn_hidden_size')} without --num-experts: Megatron-Core "
                          "stops with \"moe_ffn_hidden_size is set but num_moe_experts is None. Please set "
                          "num_moe_experts or remove moe_ffn_hidden_size.\"", at=a.at("moe_ffn_hidden_size"))
        latent = a.get("moe_latent_size")
        if latent is not None:
            if isinstance(latent, int) and latent <= 0:
                yield Finding(f"--moe-latent-size {latent}: Megatron-LM stops with \"MoE latent projection dimension has "
                              "to be greater than zero.\"", at=a.at("moe_latent_size"))
            elif dense:
                yield Finding(f"--moe-latent-size {latent} without --num-experts: Megatron-LM stops with \"MoE latent "
                              "projections are applicable only for MoE models.\"", at=a.at("moe_latent_size"))


class MoeBiasWithExpertTensorParallel(_MegatronRule):
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


class MoeRouterArguments(_MegatronRule):
    """## What it does
    Checks the MoE router: top-1 routing with softmax scores needs `--moe-router-pre-softmax`;
    group-limited routing (`--moe-router-group-topk`) needs `--moe-router-num-groups` dividing the
    number of experts and at least the group top-k; aux-loss-free expert bias needs the sigmoid or
    sqrtsoftplus score function.

    ## Why is this bad?
    Megatron-Core raises these when it builds the model config. Top-1 softmax without pre-softmax
    would give zero router gradients.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 8 --moe-router-topk 1
    ```

    ## Fix
    Add `--moe-router-pre-softmax` for top-1; choose a group count that divides the experts.

    ## References
    * `megatron/core/transformer/transformer_config.py:2662-2669@d98e8a6`: "Please use --moe-router-pre-softmax
      when topk is 1."
    * `megatron/core/transformer/transformer_config.py:2671-2689@d98e8a6`: "When using group limited routing,
      moe_router_num_groups must be specified."; "num_moe_experts ({E}) should be divisible by
      moe_router_num_groups ({G})."; "moe_router_group_topk ({k}) should be smaller than moe_router_num_groups
      ({G})."
    * `megatron/core/transformer/transformer_config.py:2617-2625@d98e8a6`: "Expert bias for aux-loss-free
      routing only supports 'sigmoid' and 'sqrtsoftplus' score functions."
    """

    code = "TL156"
    name = "megatron-moe-router-arguments"
    summary = "MoE router options Megatron-Core refuses (top-1 softmax, group routing, expert bias)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dests = ("num_experts", "moe_router_topk", "moe_router_score_function", "moe_router_pre_softmax",
                 "moe_router_load_balancing_type", "moe_router_group_topk", "moe_router_num_groups",
                 "moe_router_enable_expert_bias")
        if not a.known(*dests):
            return
        experts = a.get("num_experts")
        if not experts:
            return
        lb = a.get("moe_router_load_balancing_type")
        lb_types = lb if isinstance(lb, list) else [lb]
        if a.get("moe_router_topk") == 1 and a.get("moe_router_score_function") == "softmax" \
                and not a.on("moe_router_pre_softmax") and lb_types != ["sinkhorn"]:
            yield Finding("--moe-router-topk 1 with softmax scores and no --moe-router-pre-softmax: Megatron-Core stops "
                          "with \"Please use --moe-router-pre-softmax when topk is 1.\"", at=a.at("moe_router_topk"),
                          fix="add --moe-router-pre-softmax")
        group_topk, groups = a.get("moe_router_group_topk"), a.get("moe_router_num_groups")
        if group_topk:
            if not groups:
                yield Finding(f"--moe-router-group-topk {group_topk} without --moe-router-num-groups: Megatron-Core stops "
                              "with \"When using group limited routing, moe_router_num_groups must be specified.\"",
                              at=a.at("moe_router_group_topk"))
            elif isinstance(experts, int) and isinstance(groups, int):
                if experts % groups:
                    yield Finding(f"{experts} experts are not divisible by --moe-router-num-groups {groups}: Megatron-Core "
                                  f"stops with \"num_moe_experts ({experts}) should be divisible by moe_router_num_groups "
                                  f"({groups}).\"", at=a.at("moe_router_num_groups"),
                                  also=((a.at("num_experts"), "number of experts"),))
                if isinstance(group_topk, int) and group_topk > groups:
                    yield Finding(f"--moe-router-group-topk {group_topk} > --moe-router-num-groups {groups}: "
                                  f"Megatron-Core stops with \"moe_router_group_topk ({group_topk}) should be smaller "
                                  f"than moe_router_num_groups ({groups}).\"", at=a.at("moe_router_group_topk"))
        score = a.get("moe_router_score_function")
        if a.on("moe_router_enable_expert_bias") and score not in ("sigmoid", "sqrtsoftplus"):
            yield Finding(f"--moe-router-enable-expert-bias with the {score} score function: Megatron-Core stops with "
                          "\"Expert bias for aux-loss-free routing only supports 'sigmoid' and 'sqrtsoftplus' score "
                          "functions.\"", at=a.at("moe_router_enable_expert_bias"),
                          fix="add --moe-router-score-function sigmoid")


class MoeDispatcherArguments(_MegatronRule):
    """## What it does
    Checks MoE token-dispatcher options: DeepEP needs the `flex` dispatcher; shared-expert overlap
    needs `alltoall` or `flex`; a capacity factor needs an aux-loss style load balancing;
    `--moe-pad-expert-input-to-capacity` needs a capacity factor.

    ## Why is this bad?
    Megatron-Core raises these when it builds the model config; the default dispatcher is
    `allgather`.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 64 --moe-enable-deepep
    ```

    ## Fix
    Add `--moe-token-dispatcher-type flex` (DeepEP) or `alltoall` (shared-expert overlap), and a
    `--moe-expert-capacity-factor` when padding to capacity.

    ## References
    * `megatron/core/transformer/transformer_config.py:1743-1745@d98e8a6`: "DeepEP backend is only supported with
      flex token dispatcher."
    * `megatron/core/transformer/transformer_config.py:1819-1826@d98e8a6`: "moe_shared_expert_overlap only works
      with alltoall or flex token dispatcher."
    * `megatron/core/transformer/transformer_config.py:1836-1866@d98e8a6`: "moe_expert_capacity_factor only works
      with aux_loss, seq_aux_loss, global_aux_loss or none load balancing"; "moe_expert_capacity_factor must be
      set to use moe_pad_expert_input_to_capacity"
    """

    code = "TL157"
    name = "megatron-moe-dispatcher-arguments"
    summary = "MoE dispatcher options Megatron-Core refuses (DeepEP without flex, overlap, capacity)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dests = ("num_experts", "moe_token_dispatcher_type", "moe_enable_deepep", "moe_shared_expert_overlap",
                 "moe_shared_expert_intermediate_size", "moe_expert_capacity_factor", "moe_router_load_balancing_type",
                 "moe_pad_expert_input_to_capacity")
        if not a.known(*dests) or not a.get("num_experts"):
            return
        dispatcher = a.get("moe_token_dispatcher_type")
        disp_note = ((a.at("moe_token_dispatcher_type"), "token dispatcher"),)
        if a.on("moe_enable_deepep") and dispatcher != "flex":
            yield Finding(f"--moe-enable-deepep with the {dispatcher} token dispatcher: Megatron-Core stops with \"DeepEP "
                          "backend is only supported with flex token dispatcher.\"", at=a.at("moe_enable_deepep"),
                          also=disp_note, fix="add --moe-token-dispatcher-type flex")
        if a.on("moe_shared_expert_overlap") and a.get("moe_shared_expert_intermediate_size") is not None \
                and dispatcher not in ("alltoall", "flex"):
            yield Finding(f"--moe-shared-expert-overlap with the {dispatcher} token dispatcher: Megatron-Core stops with "
                          "\"moe_shared_expert_overlap only works with alltoall or flex token dispatcher.\"",
                          at=a.at("moe_shared_expert_overlap"), also=disp_note,
                          fix="add --moe-token-dispatcher-type alltoall")
        capacity = a.get("moe_expert_capacity_factor")
        if isinstance(capacity, (int, float)) and capacity < 0:
            capacity = None  # Megatron treats a negative factor as no capacity limit
        lb = a.get("moe_router_load_balancing_type")
        lb_types = lb if isinstance(lb, list) else [lb]
        allowed = ("aux_loss", "seq_aux_loss", "global_aux_loss", "none")
        if capacity is not None and any(t not in allowed for t in lb_types):
            bad = next(t for t in lb_types if t not in allowed)
            yield Finding(f"--moe-expert-capacity-factor {capacity} with --moe-router-load-balancing-type {bad}: "
                          "Megatron-Core stops with \"moe_expert_capacity_factor only works with aux_loss, seq_aux_loss, "
                          "global_aux_loss or none load balancing\"",
                          at=a.at_written("moe_router_load_balancing_type", "moe_expert_capacity_factor"),
                          also=((a.at("moe_expert_capacity_factor"), "capacity factor"),))
        if a.on("moe_pad_expert_input_to_capacity") and capacity is None:
            yield Finding("--moe-pad-expert-input-to-capacity without --moe-expert-capacity-factor: Megatron-Core stops "
                          "with \"moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity\"",
                          at=a.at("moe_pad_expert_input_to_capacity"))


# --------------------------------------------------------------------------- model arguments


class AttentionVariantArguments(_MegatronRule):
    """## What it does
    Checks the attention variant flags: `--multi-latent-attention` excludes
    `--group-query-attention`; `--num-query-groups` without `--group-query-attention` is ignored.

    ## Why is this bad?
    MLA with GQA stops Megatron-LM. `--num-query-groups` only takes effect with
    `--group-query-attention`; without it Megatron builds plain multi-head attention (one KV head per
    query head), with more KV memory and a different checkpoint layout than the script intends.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-attention-heads 32 --num-query-groups 8
    ```

    ## Fix
    Add `--group-query-attention` next to `--num-query-groups`; do not combine GQA with MLA.

    ## References
    * `megatron/training/arguments.py:1973-1974@d98e8a6`: "Group query attention is mutually exclusive with
      multi latent attention."
    * `megatron/training/argument_utils.py:330-333@d98e8a6`: `if args.group_query_attention:
      kw_args['num_query_groups'] = args.num_query_groups else: kw_args['num_query_groups'] = None`
    """

    code = "TL158"
    name = "megatron-attention-variant-arguments"
    summary = "--multi-latent-attention with GQA, or --num-query-groups without --group-query-attention"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("multi_latent_attention", "group_query_attention"):
            return
        if a.on("multi_latent_attention") and a.on("group_query_attention"):
            yield Finding("--multi-latent-attention with --group-query-attention: Megatron-LM stops with \"Group query "
                          "attention is mutually exclusive with multi latent attention.\"",
                          at=a.at("group_query_attention"), also=((a.at("multi_latent_attention"), "MLA"),))
        elif a.given("num_query_groups") and not a.on("group_query_attention") and not a.on("multi_latent_attention"):
            yield Finding(f"--num-query-groups {a.get('num_query_groups')} without --group-query-attention is ignored: "
                          "Megatron-LM builds multi-head attention with one KV head per attention head",
                          at=a.at("num_query_groups"), severity=Severity.WARNING, fix="add --group-query-attention")


class EncoderArgumentsTwice(_MegatronRule):
    """## What it does
    Checks that the layer count and the sequence length are each given once: `--num-layers` or
    `--encoder-num-layers`, `--seq-length` or `--encoder-seq-length`.

    ## Why is this bad?
    `validate_args` refuses both spellings together (they are the same setting for GPT models).

    ## Example
    ```bash
    pretrain_gpt.py ... --num-layers 24 --encoder-num-layers 24
    ```

    ## Fix
    Keep one of each pair.

    ## References
    * `megatron/training/arguments.py:1304-1306@d98e8a6`: "cannot have both num-layers and encoder-num-layers
      specified"
    * `megatron/training/arguments.py:1346-1347@d98e8a6`: `assert args.encoder_seq_length is None` when
      `--seq-length` is given
    """

    code = "TL159"
    name = "megatron-encoder-arguments-twice"
    summary = "--num-layers with --encoder-num-layers, or --seq-length with --encoder-seq-length"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.given("num_layers") and a.given("encoder_num_layers"):
            yield Finding("--num-layers and --encoder-num-layers are both given: Megatron-LM stops with \"cannot have "
                          "both num-layers and encoder-num-layers specified\"", at=a.at("encoder_num_layers"),
                          also=((a.at("num_layers"), "--num-layers"),))
        if a.given("seq_length") and a.given("encoder_seq_length"):
            yield Finding("--seq-length and --encoder-seq-length are both given: Megatron-LM's assertion "
                          "`args.encoder_seq_length is None` fails", at=a.at("encoder_seq_length"),
                          also=((a.at("seq_length"), "--seq-length"),))


class PositionEmbeddingArguments(_MegatronRule):
    """## What it does
    Checks position-embedding flags: `--no-position-embedding` is only accepted with rotary
    embeddings; `--position-embedding-type mrope` needs `--mrope-section`.

    ## Why is this bad?
    Megatron-LM raises a RuntimeError for `--no-position-embedding` unless the position embedding
    type is `rope` (also set by `--use-rotary-position-embeddings`), and asserts the mrope section.

    ## Example
    ```bash
    pretrain_gpt.py ... --no-position-embedding
    ```

    ## Fix
    Use `--position-embedding-type rope` (or `none`) instead of `--no-position-embedding`.

    ## References
    * `megatron/training/arguments.py:1626-1634@d98e8a6`: `if not args.add_position_embedding and
      args.position_embedding_type != 'rope': raise RuntimeError('--no-position-embedding is deprecated, use
      --position-embedding-type')`
    * `megatron/training/arguments.py:1643-1645@d98e8a6`: "--mrope-section should be set when using
      --position-embedding-type mrope."
    """

    code = "TL160"
    name = "megatron-position-embedding-arguments"
    summary = "--no-position-embedding without rope, or mrope without --mrope-section"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("add_position_embedding", "position_embedding_type", "use_rotary_position_embeddings",
                       "mrope_section"):
            return
        kind = "rope" if a.on("use_rotary_position_embeddings") else a.get("position_embedding_type")
        if not a.on("add_position_embedding") and kind != "rope":
            yield Finding(f"--no-position-embedding with position embedding type {kind}: Megatron-LM raises "
                          "\"--no-position-embedding is deprecated, use --position-embedding-type\"",
                          at=a.at("add_position_embedding"),
                          fix="replace --no-position-embedding with --position-embedding-type rope (or none)")
        if kind == "mrope" and not a.get("mrope_section"):
            yield Finding("--position-embedding-type mrope without --mrope-section: Megatron-LM stops with "
                          "\"--mrope-section should be set when using --position-embedding-type mrope.\"",
                          at=a.at("position_embedding_type"))


# ------------------------------------------------------------------- batch, schedule, data


class BatchScheduleArguments(_MegatronRule):
    """## What it does
    Checks the batch-size schedule and the evaluation batch: `--step-batch-size-schedule` excludes
    `--global-batch-size` and `--decrease-batch-size-if-needed`; the evaluation global batch (default:
    the training one) must be a multiple of eval micro batch x DP.

    ## Why is this bad?
    Megatron-LM stops in `validate_args` or when it builds the micro-batch calculator.

    ## Example
    ```bash
    pretrain_gpt.py ... --global-batch-size 512 --step-batch-size-schedule "0:256 1B:512"
    ```

    ## Fix
    Give either the schedule or the global batch size; pick an evaluation batch that divides.

    ## References
    * `megatron/training/arguments.py:698-701@d98e8a6`: "Cannot specify both --step-batch-size-schedule and
      --global-batch-size"
    * `megatron/core/num_microbatches_calculator.py:264-269@d98e8a6`: "Cannot specify both
      --step-batch-size-schedule and --decrease-batch-size-if-needed"
    * `megatron/training/arguments.py:709-720@d98e8a6`: "eval_global_batch_size ({g}) must be divisible by
      eval_micro_batch_size ({m}) * data_parallel_size ({d}) * gtp_weight_remat_size (1)"
    """

    code = "TL161"
    name = "megatron-batch-schedule-arguments"
    summary = "--step-batch-size-schedule with a fixed global batch, or an eval batch not divisible by micro x DP"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.given("step_batch_size_schedule"):
            for dest in ("global_batch_size", "decrease_batch_size_if_needed"):
                if a.given(dest) and (dest != "decrease_batch_size_if_needed" or a.on(dest)):
                    yield Finding(f"--step-batch-size-schedule with {a.flag(dest)}: Megatron-LM stops with \"Cannot "
                                  f"specify both --step-batch-size-schedule and {a.flag(dest)}\"", at=a.at(dest),
                                  also=((a.at("step_batch_size_schedule"), "batch size schedule"),))
            return
        if not (a.given("eval_global_batch_size") or a.given("eval_micro_batch_size")):
            return
        if not a.known("eval_global_batch_size", "eval_micro_batch_size") or \
                a.written("tensor_parallel_num_weight_shards"):
            return
        dp = a.int_field("parallel.data")
        g = a.get("eval_global_batch_size") or a.spec.value("batch.global_batch")
        m = a.get("eval_micro_batch_size") or a.spec.value("batch.micro_batch")
        if not all(isinstance(x, int) and x > 0 for x in (dp, g, m)):
            return
        if g % (m * dp):
            at = a.at("eval_global_batch_size") if a.given("eval_global_batch_size") else a.at("eval_micro_batch_size")
            yield Finding(f"eval global batch {g} is not divisible by eval micro batch {m} x DP {dp} = {m * dp}: "
                          f"Megatron-LM stops with \"eval_global_batch_size ({g}) must be divisible by "
                          f"eval_micro_batch_size ({m}) * data_parallel_size ({dp})\"", at=at,
                          also=(("parallel.data", "data-parallel size"),))


class TrainingLengthArguments(_MegatronRule):
    """## What it does
    Checks that iteration-based and sample-based training options are not mixed: `--train-iters`
    excludes `--train-samples`, `--lr-decay-samples` and `--lr-warmup-samples`; `--train-samples`
    excludes `--train-iters`, `--lr-decay-iters` and `--lr-warmup-iters`; `--lr-warmup-fraction`
    excludes the explicit warmup of the same kind.

    ## Why is this bad?
    `validate_args` asserts each of these (unless `--skip-train`).

    ## Example
    ```bash
    pretrain_gpt.py ... --train-iters 10000 --lr-decay-samples 1000000
    ```

    ## Fix
    Use one unit for the run length, the decay and the warmup.

    ## References
    * `megatron/training/arguments.py:1274-1302@d98e8a6`: "expected iteration-based training", "expected
      iteration-based learning rate decay", "expected iteration-based learning rate warmup", "can only specify
      one of lr-warmup-fraction and lr-warmup-iters", "expected sample-based training", "expected sample-based
      learning rate decay", "expected sample-based learnig rate warmup", "can only specify one of
      lr-warmup-fraction and lr-warmup-samples"
    """

    code = "TL162"
    name = "megatron-training-length-arguments"
    summary = "iteration-based and sample-based training/LR options mixed"

    _ITER = (("train_samples", "expected iteration-based training"),
             ("lr_decay_samples", "expected iteration-based learning rate decay"),
             ("lr_warmup_samples", "expected iteration-based learning rate warmup"))
    _SAMPLE = (("train_iters", "expected sample-based training"),
               ("lr_decay_iters", "expected sample-based learning rate decay"),
               ("lr_warmup_iters", "expected sample-based learnig rate warmup"))

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dests = ("train_iters", "train_samples", "lr_decay_samples", "lr_warmup_samples", "lr_decay_iters",
                 "lr_warmup_iters", "lr_warmup_fraction", "skip_train")
        if not a.known(*dests) or a.on("skip_train"):
            return
        for main, others, warmup in (("train_iters", self._ITER, "lr_warmup_iters"),
                                     ("train_samples", self._SAMPLE, "lr_warmup_samples")):
            if not a.get(main):
                continue
            for dest, message in others:
                value = a.get(dest)
                if (value is not None and value != 0) if dest.startswith("lr_warmup") else value is not None:
                    yield Finding(f"{a.flag(main)} {a.get(main)} with {a.flag(dest)} {value}: Megatron-LM stops with "
                                  f"\"{message}\"", at=a.at(dest), also=((a.at(main), "training length"),))
            if a.get("lr_warmup_fraction") is not None and a.get(warmup):
                yield Finding(f"--lr-warmup-fraction with {a.flag(warmup)}: Megatron-LM stops with \"can only specify one "
                              f"of lr-warmup-fraction and {warmup.replace('_', '-')}\"", at=a.at(warmup),
                              also=((a.at("lr_warmup_fraction"), "warmup fraction"),))
            return  # Megatron checks the iteration branch first; a run with both fails there


class MinLrAboveLr(_MegatronRule):
    """## What it does
    Checks that `--min-lr` is not above `--lr`.

    ## Why is this bad?
    `validate_args` asserts `min_lr <= lr`; the learning-rate schedule would otherwise decay upwards.

    ## Example
    ```bash
    pretrain_gpt.py ... --lr 1e-5 --min-lr 1e-4
    ```

    ## Fix
    Set `--min-lr` at or below `--lr` (often lr / 10).

    ## References
    * `megatron/training/arguments.py:1359-1360@d98e8a6`: `if args.lr is not None: assert args.min_lr <= args.lr`
      (a bare assertion: Megatron prints no message)
    """

    code = "TL163"
    name = "megatron-min-lr-above-lr"
    summary = "--min-lr greater than --lr"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("lr", "min_lr"):
            return
        lr, min_lr = a.get("lr"), a.get("min_lr")
        if isinstance(lr, (int, float)) and isinstance(min_lr, (int, float)) and min_lr > lr:
            yield Finding(f"--min-lr {min_lr} is greater than --lr {lr}: Megatron-LM's assertion `min_lr <= lr` fails",
                          at=a.at("min_lr"), also=((a.at("lr"), "--lr"),))


class SaveInterval(_MegatronRule):
    """## What it does
    Checks that a run that saves checkpoints (`--save`) gives a positive `--save-interval`, and that
    `--save-retain-interval` is a positive multiple of it.

    ## Why is this bad?
    `validate_args` asserts these (bare assertions, no message): the job stops before training.

    ## Example
    ```bash
    pretrain_gpt.py ... --save /checkpoints/run1
    ```

    ## Fix
    Add `--save-interval N`.

    ## References
    * `megatron/training/arguments.py:1361-1367@d98e8a6`: `if args.save is not None: assert args.save_interval
      is not None; assert args.save_interval > 0; ... assert args.save_retain_interval % args.save_interval == 0`
    """

    code = "TL164"
    name = "megatron-save-interval"
    summary = "--save without a positive --save-interval, or a retain interval not a multiple of it"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.given("save") or not a.known("save_interval", "save_retain_interval"):
            return
        interval, retain = a.get("save_interval"), a.get("save_retain_interval")
        if interval is None:
            yield Finding("--save without --save-interval: Megatron-LM's assertion `save_interval is not None` fails",
                          at=a.at("save"), fix="add --save-interval")
            return
        if isinstance(interval, int) and interval <= 0:
            yield Finding(f"--save-interval {interval}: Megatron-LM's assertion `save_interval > 0` fails",
                          at=a.at("save_interval"))
            return
        if isinstance(retain, int) and isinstance(interval, int) and (retain <= 0 or retain % interval):
            yield Finding(f"--save-retain-interval {retain} is not a positive multiple of --save-interval {interval}: "
                          "Megatron-LM's assertion `save_retain_interval % save_interval == 0` fails",
                          at=a.at("save_retain_interval"), also=((a.at("save_interval"), "save interval"),))


class DataSources(_MegatronRule):
    """## What it does
    Checks that one data source is given: `--data-path` or `--data-args-path`; per-split paths
    (`--train/valid/test-data-path`) or `--per-split-data-args-path`; and not more than one of
    `--mock-data`, `--data-path` and per-split paths.

    ## Why is this bad?
    `validate_args` asserts each of these; the job stops before building datasets.

    ## Example
    ```bash
    pretrain_gpt.py ... --data-path corpus_text_document --mock-data
    ```

    ## Fix
    Keep one data source.

    ## References
    * `megatron/training/arguments.py:674-686@d98e8a6`: `assert (args.data_path is None) or (args.data_args_path
      is None)`; per-split paths or `--per-split-data-args-path` (bare assertions)
    * `megatron/training/arguments.py:1679-1682@d98e8a6`: "A single data source must be provided in training
      mode, else None"
    """

    code = "TL165"
    name = "megatron-data-sources"
    summary = "more than one data source (--data-path, --data-args-path, per-split paths, --mock-data)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        split = [d for d in ("train_data_path", "valid_data_path", "test_data_path") if a.given(d)]
        if a.given("data_path") and a.given("data_args_path"):
            yield Finding("--data-path and --data-args-path are both given: Megatron-LM's assertion `data_path is None or "
                          "data_args_path is None` fails", at=a.at("data_args_path"),
                          also=((a.at("data_path"), "--data-path"),))
        if split and a.given("per_split_data_args_path"):
            yield Finding(f"{a.flag(split[0])} and --per-split-data-args-path are both given: Megatron-LM asserts only "
                          "one of them", at=a.at("per_split_data_args_path"), also=((a.at(split[0]), "per-split path"),))
        sources = [d for d in ("mock_data", "data_path") if a.given(d) and a.get(d)] + split[:1]
        if len(sources) > 1:
            yield Finding(f"{' and '.join(a.flag(d) for d in sources)} are all given: Megatron-LM stops with \"A single "
                          "data source must be provided in training mode, else None\"", at=a.at(sources[-1]),
                          also=tuple((a.at(d), "data source") for d in sources[:-1]))


class CudaGraphFlags(_MegatronRule):
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


RULES: list[type] = [
    OverlapParamGather,
    OptimizerArguments,
    FsdpArguments,
    FreezeAllLayers,
    RecomputeArguments,
    DistributeSavedActivations,
    CpuOffloading,
    VirtualPipelineArguments,
    InterleavedPipelineSize,
    UnevenPipelineStages,
    LowPrecisionArguments,
    MixedPrecisionOptions,
    TpCommOverlapWithoutSequenceParallel,
    HierarchicalContextParallel,
    MoeArgumentsWithoutExperts,
    MoeBiasWithExpertTensorParallel,
    MoeRouterArguments,
    MoeDispatcherArguments,
    AttentionVariantArguments,
    EncoderArgumentsTwice,
    PositionEmbeddingArguments,
    BatchScheduleArguments,
    TrainingLengthArguments,
    MinLrAboveLr,
    SaveInterval,
    DataSources,
    CudaGraphFlags,
]
