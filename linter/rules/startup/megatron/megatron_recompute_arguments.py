"""TL144: full recomputation without --recompute-method/--recompute-num-layers, or selective with them"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
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
