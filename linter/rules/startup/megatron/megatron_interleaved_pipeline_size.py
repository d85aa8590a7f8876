"""TL148: virtual pipeline stages with a pipeline size of 1 (or 2 without P2P overlap)"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


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
