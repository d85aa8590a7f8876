"""TL144-TL146: activation recomputation and CPU offloading."""

from __future__ import annotations

from typing import Iterator

from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class RecomputeArguments(MegatronRule):
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
    behaviour_changed = ("Megatron-LM up to 23.06 (and Megatron-DeepSpeed) defaulted --recompute-num-layers to 1; "
                         "core_v0.4.0 and later default it to None")
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


class DistributeSavedActivations(MegatronRule):
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


RULES: list[type] = [
    RecomputeArguments,
    DistributeSavedActivations,
    CpuOffloading,
]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
