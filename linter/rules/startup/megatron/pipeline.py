"""TL147-TL149: the pipeline layout (virtual stages, interleaving, uneven stages)."""

from __future__ import annotations

from typing import Iterator

from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class VirtualPipelineArguments(MegatronRule):
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


class InterleavedPipelineSize(MegatronRule):
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


RULES: list[type] = [
    VirtualPipelineArguments,
    InterleavedPipelineSize,
    UnevenPipelineStages,
]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
