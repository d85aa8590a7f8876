"""How Megatron-Core splits the decoder layers over the pipeline ranks and their virtual stages.

Facts (Megatron-LM megatron/core/transformer/transformer_block.py ``get_num_layers_to_build`` and
megatron/core/transformer/pipeline_parallel_layer_layout.py at d98e8a6), read here from the settings
(argparse dests; the Bridge adapter maps its ``model.*`` fields onto the same dests):

* ``--pipeline-model-parallel-layout``: stages separated by ``|``, ``E`` embedding, ``t`` decoder layer,
  ``m`` MTP layer, ``L`` loss; ``x*n`` and ``(...)*n`` repeat, commas are cosmetic. The stage count is
  PP x VPP; virtual stage ``k`` runs on pipeline rank ``k % PP`` as its chunk ``k // PP``.
* ``--decoder-first-pipeline-num-layers F`` / ``--decoder-last-pipeline-num-layers L``: the first / last
  rank holds F / L layers; the rest are spread evenly over the other ranks; every rank's layers are split
  evenly over its chunks.
* ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``: the embedding
  and the loss count as one layer each; num_layers (+1, +1) is spread evenly over the PP x VPP virtual
  stages, the first virtual stage holding one decoder layer fewer for the embedding, the last one fewer
  for the loss.

The result is the decoder layers of every chunk of every rank, ``split[rank][chunk]``; None when the
layers are split evenly or when what is written cannot be split (the start-up rules judge that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_REPEAT_GROUP = re.compile(r"\(([^)]+)\)\*(\d+)")
_REPEAT_ONE = re.compile(r"(.)\*(\d+)")
_LAYER_CHARS = {"E": "embedding", "t": "decoder", "m": "mtp", "L": "loss"}
_MAX_STAGES = 4096
_MAX_CHARS = 1 << 20
"""A layout with more stages or characters than these is not a real run (and unrolling it must not run away)."""


@dataclass(frozen=True)
class PipelineSplit:
    """Decoder layers per chunk per pipeline rank, and how it was given."""

    layers: tuple[tuple[int, ...], ...]
    """``layers[rank][chunk]``"""
    how: str
    """the setting that decides it (a Megatron flag)"""

    @property
    def per_rank(self) -> tuple[int, ...]:
        return tuple(sum(chunks) for chunks in self.layers)

    @property
    def chunks(self) -> int:
        return len(self.layers[0]) if self.layers else 1


def parse_layout(text: str) -> list[list[str]] | None:
    """The stages of a layout string as lists of layer kinds, or None when it is not one."""
    text = text.replace(",", "")  # commas are cosmetic
    too_long = False

    def unroll(m: re.Match[str]) -> str:
        nonlocal too_long
        count = int(m.group(2))
        if too_long or count * len(m.group(1)) > _MAX_CHARS:
            too_long = True  # a repetition no real run writes: do not build it
            return ""
        return m.group(1) * count

    for pattern in (_REPEAT_GROUP, _REPEAT_ONE):  # one pass each, as Megatron's parse_str_to_list
        text = pattern.sub(unroll, text)
        if too_long or len(text) > _MAX_CHARS:
            return None
    stages: list[list[str]] = []
    for stage in text.split("|"):
        kinds = []
        for char in stage:
            if char not in _LAYER_CHARS:
                return None
            kinds.append(_LAYER_CHARS[char])
        stages.append(kinds)
    return stages if 0 < len(stages) <= _MAX_STAGES else None


def _layout_stages(layout: Any) -> list[list[str]] | None:
    """A layout as Megatron takes it: a string, or a list of lists of layer-kind names (a Bridge YAML)."""
    if isinstance(layout, str):
        return parse_layout(layout)
    if isinstance(layout, list) and layout and all(isinstance(s, list) for s in layout):
        names = set(_LAYER_CHARS.values())
        if all(isinstance(k, str) and k in names for s in layout for k in s):
            return [list(s) for s in layout]
    return None


def from_layout(layout: Any, pp: int) -> PipelineSplit | None:
    stages = _layout_stages(layout)
    if stages is None or pp < 1 or len(stages) % pp:
        return None
    vpp = len(stages) // pp
    split = tuple(tuple(stages[chunk * pp + rank].count("decoder") for chunk in range(vpp)) for rank in range(pp))
    return PipelineSplit(split, "--pipeline-model-parallel-layout")


def from_first_last(layers: int, pp: int, vpp: int, first: int | None, last: int | None) -> PipelineSplit | None:
    rest, left = layers, pp
    for given in (first, last):
        if given is not None:
            if given < 0:
                return None
            rest -= given
            left -= 1
    if left < 0 or rest < 0 or (left > 0 and rest % left) or (left == 0 and rest):
        return None
    middle = rest // left if left > 0 else 0
    per_rank = [middle] * pp
    if first is not None:
        per_rank[0] = first
    if last is not None:
        per_rank[-1] = last
    if any(n % vpp for n in per_rank):
        return None
    how = "--decoder-first-pipeline-num-layers" if first is not None else "--decoder-last-pipeline-num-layers"
    return PipelineSplit(tuple(tuple([n // vpp] * vpp) for n in per_rank), how)


def from_accounting(layers: int, pp: int, vpp: int, embedding: bool, loss: bool) -> PipelineSplit | None:
    total = layers + int(embedding) + int(loss)
    stages = pp * vpp
    if total % stages:
        return None
    each = total // stages
    counts = [each] * stages
    counts[0] -= int(embedding)
    counts[-1] -= int(loss)
    if min(counts) < 0:
        return None
    split = tuple(tuple(counts[chunk * pp + rank] for chunk in range(vpp)) for rank in range(pp))
    how = "--account-for-embedding-in-pipeline-split" if embedding else "--account-for-loss-in-pipeline-split"
    return PipelineSplit(split, how)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def pipeline_split(settings: dict[str, Any], layers: int | None, pp: int | None, vpp: int | None) -> PipelineSplit | None:
    """The split Megatron-Core builds from ``settings`` (dest -> plain value), or None for an even split or one
    that cannot be read. ``vpp``: chunks per rank as the spec states them (None or 1: no interleaving); a
    layout states its own."""
    if not layers or not pp or pp < 1 or layers < 1:
        return None
    layout = settings.get("pipeline_model_parallel_layout")
    if layout is not None:
        return from_layout(layout, pp)
    if pp == 1:
        return None
    chunks = vpp if vpp and vpp > 1 else 1
    first = _int(settings.get("decoder_first_pipeline_num_layers"))
    last = _int(settings.get("decoder_last_pipeline_num_layers"))
    if first is not None or last is not None:
        return from_first_last(layers, pp, chunks, first, last)
    embedding = settings.get("account_for_embedding_in_pipeline_split") is True
    loss = settings.get("account_for_loss_in_pipeline_split") is True
    if embedding or loss:
        return from_accounting(layers, pp, chunks, embedding, loss)
    return None
