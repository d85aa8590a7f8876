"""The pipeline split as Megatron-Core builds it (issue 30): a layout string, first/last-stage layer counts,
the embedding and loss counted in the split; read by the adapter, costed by the estimator (the slowest rank
for the step time, the largest rank for memory)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.adapters.megatron.pipeline_split import (
    from_accounting,
    from_first_last,
    from_layout,
    parse_layout,
    pipeline_split,
)
from trainlint.estimator import build_context
from trainlint.estimator.core import estimate, estimate_inputs
from trainlint.estimator.memory import stage_kinds, stage_layers, worst_stage_total
from trainlint.estimator.performance import step_time, step_time_floor
from trainlint.files.sources import SourceText

from test_estimator import make_inputs

# ------------------------------------------------------------------------------ the split's arithmetic


def test_layout_string_follows_megatrons_grammar() -> None:
    # the example of Megatron's docs: 61 decoder layers, an MTP layer, PP 16 -> VPP 2
    split = from_layout("Et*3|(tt|)*29,m|L", 16)
    assert split is not None and split.chunks == 2
    assert split.layers[0] == (3, 2)       # rank 0: embedding + 3 layers, then 2
    assert split.layers[14] == (2, 0)      # rank 14's second chunk is the MTP layer: no decoder layer
    assert split.layers[15] == (2, 0)      # the loss stage
    assert sum(split.per_rank) == 61
    # virtual stage k runs on rank k % PP
    assert from_layout("Et|tt|ttt|tL", 2).layers == ((1, 3), (2, 1))


@pytest.mark.parametrize("text", ["Ex|L", "E(t|)*99999999999L", "t*9999999999", "E|t)*2|L"])
def test_a_layout_that_is_not_one_gives_no_split(text: str) -> None:
    assert parse_layout(text) is None
    assert from_layout(text, 1) is None


def test_layout_stage_count_must_be_a_multiple_of_pp() -> None:
    assert from_layout("Et|t|tL", 2) is None


def test_first_and_last_stage_layers() -> None:
    split = from_first_last(30, 4, 1, 6, None)
    assert split is not None and split.per_rank == (6, 8, 8, 8)
    split = from_first_last(61, 16, 1, None, 1)
    assert split is not None and split.per_rank == (4,) * 15 + (1,)
    assert from_first_last(30, 4, 1, 5, None) is None  # 25 layers do not split over 3 ranks
    # with interleaving each rank's layers are split evenly over its chunks
    split = from_first_last(28, 4, 2, 4, None)
    assert split is not None and split.layers == ((2, 2), (4, 4), (4, 4), (4, 4))
    assert from_first_last(29, 4, 2, 5, None) is None  # 5 layers do not split over 2 chunks


def test_embedding_and_loss_counted_in_the_split() -> None:
    split = from_accounting(126, 8, 4, True, True)  # Llama-3.1-405B: 128 / 32 virtual stages
    assert split is not None
    assert split.layers[0] == (3, 4, 4, 4) and split.layers[7] == (4, 4, 4, 3)
    assert sum(split.per_rank) == 126
    assert from_accounting(126, 8, 4, True, False) is None  # 127 is not a multiple of 32


def test_settings_pick_the_layout_first() -> None:
    settings = {"pipeline_model_parallel_layout": "Ett|tL", "decoder_first_pipeline_num_layers": 1}
    split = pipeline_split(settings, 3, 2, None)
    assert split is not None and split.how == "--pipeline-model-parallel-layout" and split.per_rank == (2, 1)
    assert pipeline_split({}, 32, 4, None) is None  # even


# ------------------------------------------------------------------------------ read from a launch script


def _script(*flags: str, layers: int = 30, pp: int = 4) -> str:
    return ("torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py \\\n"
            f"  --num-layers {layers} --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 \\\n"
            "  --max-position-embeddings 4096 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 256 \\\n"
            f"  --tensor-model-parallel-size 2 --pipeline-model-parallel-size {pp} --bf16 \\\n"
            f"  {' '.join(flags)} --train-iters 10 --lr 1e-4\n")


def _spec(text: str):
    result = MegatronAdapter().load(SourceText(str(Path("inline.sh").resolve()), text), LoadContext())
    (spec,) = result.specs
    return spec


def _estimate(text: str):
    spec = _spec(text)
    found = estimate(spec, build_context(spec, gpu="h100-sxm"))
    assert found.ok, found
    return found


def test_script_layout_sets_the_split_and_the_chunks() -> None:
    spec = _spec(_script('--pipeline-model-parallel-layout "Et*3|(t*4|)*6t*3L"', layers=30, pp=4))
    assert spec.parallel.stage_layers is not None
    assert spec.parallel.stage_layers.value == [[3, 4], [4, 4], [4, 4], [4, 3]]
    assert spec.parallel.virtual_pipeline is not None and spec.parallel.virtual_pipeline.value == 2
    est = _estimate(_script('--pipeline-model-parallel-layout "Et*3|(t*4|)*6t*3L"', layers=30, pp=4))
    assert [s.layers for s in est.stages] == [7, 8, 8, 7]


def test_a_heavier_first_stage_is_slower_and_larger_than_the_even_split() -> None:
    even = _estimate(_script(layers=32, pp=4))
    heavy = _estimate(_script("--decoder-first-pipeline-num-layers 11", layers=32, pp=4))
    assert [s.layers for s in heavy.stages] == [11, 7, 7, 7]
    assert heavy.time.step_time > even.time.step_time * 1.2  # 11 layers instead of 8 on the slowest rank
    assert heavy.worst_stage.stage == 0 and heavy.worst_stage.total > even.worst_stage.total


def test_a_heavier_middle_stage_is_the_one_judged() -> None:
    i = make_inputs(layers=30, pp=4, dp=2, stage_split=(6, 12, 6, 6), split_layout=(4, 1))
    assert stage_layers(i) == [6, 12, 6, 6]
    est = estimate_inputs(i)
    worst = max(est.stages, key=lambda s: s.total)
    assert worst.stage == 1 and worst_stage_total(i) == pytest.approx(worst.total)
    even = estimate_inputs(dataclasses.replace(i, stage_split=()))
    assert est.time.step_time > even.time.step_time
    assert step_time_floor(i) <= step_time(i).step_time


def test_split_kinds_cover_every_rank_once() -> None:
    split = (3, 4, 4, 5, 5, 4, 2)
    i = make_inputs(layers=sum(split), pp=len(split), dp=1, stage_split=split, split_layout=(len(split), 1))
    kinds = stage_kinds(i)
    expanded = [layers for _, layers, count in kinds for _ in range(count)]
    assert expanded == list(split)
    assert [k[0] for k in kinds] == [0, 1, 3, 5, 6]


def test_a_split_for_another_layout_is_not_applied() -> None:
    # a layout search that changes PP or VPP splits evenly again
    i = make_inputs(layers=32, pp=4, dp=2, stage_split=(11, 7, 7, 7), split_layout=(4, 1))
    assert stage_layers(dataclasses.replace(i, pp=2)) == [16, 16]
    assert stage_layers(dataclasses.replace(i, vpp=2)) == [8, 8, 8, 8]


def test_embedding_and_loss_flags_lighten_the_end_ranks() -> None:
    est = _estimate(_script("--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split",
                            layers=30, pp=4))
    assert [s.layers for s in est.stages] == [7, 8, 8, 7]
