"""TL613: a virtual pipeline size that the pipeline layout contradicts (``TransformerConfig``, core_v0.13.0
on): the layout language of ``--pipeline-model-parallel-layout`` read for its number of stages."""

from __future__ import annotations

import re
from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.releases import Releases

RELEASES = Releases("megatron", first="core_v0.13.0")
_LIMIT = 1_000_000
"""Characters an unrolled layout may reach before it is left unread (``(t)*999999999`` is not unrolled)."""
_UNROLL = (re.compile(r"\(([^)]+)\)\*(\d+)"), re.compile(r"(.)\*(\d+)"))
_LAYERS = frozenset("ELtm")


def stage_count(layout: str) -> int | None:
    """The number of pipeline stages (PP x VPP) a layout string names, unrolled as
    ``PipelineParallelLayerLayout.parse_str_to_list`` does: commas dropped, ``(...)*n`` then ``x*n``
    repeated, stages split at ``|``. None: too large to unroll, or a character that is no layer (the
    layout's own assertion, not this check)."""
    text = layout.replace(",", "")
    for pattern in _UNROLL:
        size = len(text) + sum(len(m.group(1)) * int(m.group(2)) for m in pattern.finditer(text))
        if size > _LIMIT:
            return None
        text = pattern.sub(lambda m: m.group(1) * int(m.group(2)), text)
    stages = text.split("|")
    if any(ch not in _LAYERS for stage in stages for ch in stage):
        return None
    return len(stages)


class PipelineLayoutStages(MegatronRule):
    """## What it does
    Checks a virtual pipeline size given beside `pipeline_model_parallel_layout` against the layout: the
    layout's stages divided by the pipeline-parallel size is the virtual pipeline size Megatron-Core
    detects, and a different one given is refused. The layout is unrolled as Megatron-Core reads it
    (`(tt|)*4` repeats, `|` separates stages, commas are cosmetic).

    Megatron-LM's own arguments never give both (validate_args refuses the combination and sets the
    virtual size from the layout); a configuration that builds Megatron-Core's config itself
    (a Megatron-Bridge `ConfigContainer`) can.

    ## Why is this bad?
    `TransformerConfig.__post_init__` asserts while it builds the model configuration.

    ## Example
    ```yaml
    model:
      pipeline_model_parallel_size: 2
      virtual_pipeline_model_parallel_size: 4
      pipeline_model_parallel_layout: "Et|(tt|)*2,tL"   # 4 stages: a virtual size of 2
    ```

    ## Fix
    Drop the virtual pipeline size (the layout gives it), or write as many stages as PP x VPP.

    ## References
    * `megatron/core/transformer/transformer_config.py:2275-2285@d98e8a6` (since core_v0.13.0):
      "virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout"
    * `megatron/core/transformer/pipeline_parallel_layer_layout.py:283-326@d98e8a6`: the layout language
    """

    code = "TL613"
    name = "megatron-core-pipeline-layout-stages"
    summary = "a virtual pipeline size the pipeline layout's stage count contradicts"
    core_config_check = True

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        layout_dest, vpp_dest = "pipeline_model_parallel_layout", "num_virtual_stages_per_pipeline_rank"
        if not a.given(layout_dest) or not a.given(vpp_dest) or not RELEASES.includes(a.spec.target):
            return
        if not a.spec.core_configs_only:
            return  # validate_args refuses both together first (another check, another message)
        layout, vpp, pp = a.get(layout_dest), a.get(vpp_dest), a.get("pipeline_model_parallel_size")
        if not isinstance(layout, str) or not a.known("pipeline_model_parallel_size"):
            return
        if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (vpp, pp)):
            return
        stages = stage_count(layout)
        if stages is None or stages % pp:
            return  # the layout's own divisibility assertion
        detected = stages // pp
        if detected == vpp:
            return
        yield Finding(f"{a.flag(vpp_dest)} {vpp} with a layout of {stages} stages over pipeline size {pp} (a virtual "
                      f"size of {detected}): Megatron-Core stops with \"virtual_pipeline_model_parallel_size conflicts "
                      "with pipeline_model_parallel_layout\"", at=a.at(vpp_dest),
                      also=((a.at(layout_dest), "the layout"),), fix=f"{a.flag(vpp_dest)} {detected}, or drop it")


RULES: list[type] = [PipelineLayoutStages]
