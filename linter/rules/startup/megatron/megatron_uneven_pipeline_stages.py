"""TL149: first/last pipeline stage sizes that leave the middle stages uneven, or conflicting layout args"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class UnevenPipelineStages(MegatronRule):
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
