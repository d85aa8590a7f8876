"""Megatron-DeepSpeed runs (``--deepspeed --deepspeed_config``): the ZeRO stage is a fix candidate
and a searched layout dimension, spelled where the run sets it, and never ZeRO >= 2 while
DeepSpeed's pipeline engine is engaged (TL110: Megatron-DeepSpeed builds GPTModelPipe unless
--no-pipeline-parallel)."""

from __future__ import annotations

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_source
from trainlint.estimator import build_context, estimate
from trainlint.layout.search import SearchOptions, search
from trainlint.rules.estimation.fixes import communication_candidates, memory_candidates
from trainlint.files.sources import SourceText

SCRIPT = """\
#!/bin/bash
STAGE={stage}
cat <<EOT > ds_config.json
{{
  "train_micro_batch_size_per_gpu": 1,
  "zero_optimization": {{"stage": $STAGE}},
  "bf16": {{"enabled": true}}
}}
EOT
deepspeed --num_gpus 8 --num_nodes 1 pretrain_gpt.py \\
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --ffn-hidden-size 11008 --swiglu \\
    --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64 \\
    --bf16 --use-flash-attn-v2 {extra}--deepspeed --deepspeed_config ds_config.json
"""


def spec_of(stage: int, extra: str = ""):
    result = check_source(SourceText("run.sh", SCRIPT.format(stage=stage, extra=extra)), builtin_adapters())
    assert result.specs, result.diagnostics
    spec = result.specs[0]
    assert spec.framework == "megatron" and spec.value("parallel.zero_stage") == stage
    return spec


def zero_candidates(spec, candidates):
    return [c for c in candidates(spec) if c.target == "parallel.zero_stage"]


def test_pipeline_engine_caps_the_zero_candidate_at_stage_1():
    """Without --no-pipeline-parallel the pipeline engine runs even at PP 1: ZeRO 0 -> 1 is offered,
    ZeRO 1 -> 2 is not (DeepSpeed: "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism")."""
    spec = spec_of(0)
    assert spec.value("parallel.pipeline_engine") is True
    (only,) = zero_candidates(spec, memory_candidates)
    assert only.spec.value("parallel.zero_stage") == 1
    assert only.spelling == '"zero_optimization": {"stage": 1} in run.sh'  # the here-document in the script
    assert zero_candidates(spec_of(1), memory_candidates) == []


def test_no_pipeline_parallel_allows_higher_stages_and_the_estimate_follows():
    spec = spec_of(1, "--no-pipeline-parallel ")
    assert spec.value("parallel.pipeline_engine") is False
    (up,) = zero_candidates(spec, memory_candidates)
    assert up.spec.value("parallel.zero_stage") == 2
    ctx = build_context(spec, gpu="h100-sxm")
    before, after = estimate(spec, ctx), estimate(up.spec, ctx)
    assert after.ok and after.worst_stage.grads < before.worst_stage.grads  # ZeRO 2 shards the gradients
    # Megatron's distributed optimizer is not what runs under --deepspeed: never offered
    assert not [c for c in memory_candidates(spec) if c.target == "parallel.distributed_optimizer"]


def test_zero_stage_flag_is_spelled_where_the_script_passes_it():
    spec = spec_of(0, "--zero-stage $STAGE ")
    (only,) = zero_candidates(spec, memory_candidates)
    assert "--zero-stage 1" in only.spelling and '"stage": 1' in only.spelling


def test_communication_candidates_lower_zero_3():
    spec = spec_of(3, "--no-pipeline-parallel --zero-stage 3 ")
    lower = zero_candidates(spec, communication_candidates)
    assert [c.spec.value("parallel.zero_stage") for c in lower] == [2, 1]


@pytest.mark.parametrize("extra, most", [("", 1), ("--no-pipeline-parallel ", 3)])
def test_layout_search_varies_the_zero_stage_within_the_pipeline_engine_rule(extra, most):
    spec = spec_of(0, extra)
    found = search(spec, build_context(spec, gpu="h100-sxm"), SearchOptions(top=50, vary=frozenset({"zero"})))
    stages = {sg.layout.zero for sg in found.suggestions}
    assert stages and max(stages) == most, stages
    for sg in found.suggestions:
        if sg.layout.zero != 0:
            assert sg.changes.get("parallel.zero_stage") == sg.layout.zero
