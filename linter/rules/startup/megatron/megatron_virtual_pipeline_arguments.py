"""TL147: more than one virtual-pipeline argument, or layers per virtual stage with uneven first/last stages"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
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
