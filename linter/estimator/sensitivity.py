"""How much an assumed input moves the estimate: said beside the assumption, so a reader knows
whether the stated guess matters (an assumed vocabulary is a small share of most models; an assumed
micro batch or sequence length is often most of the activations).

Each assumed input in _VARIANTS is re-estimated at a low and a high plausible value, everything else
unchanged (the batch stays micro x accumulation x DP, DP stays world / model-parallel size)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

from trainlint.estimator import coefficients as C
from trainlint.estimator.inputs import Assumption, Inputs
from trainlint.core.framework import data_parallel_size
from trainlint.core.provenance import Origin
from trainlint.adapters.hf.tokenizer_vocab import VOCAB_RANGE

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.estimator.core import Estimate

MICRO_BATCH_RANGE = (1, 8)
"""Micro batches per GPU seen in the corpus's launch scripts run from 1 to a handful; 8 is the high end."""
SEQ_RANGE = (2048, 8192)
"""Pre-training context lengths from GPT-3's 2,048 to Llama 3's 8,192."""
MAX_NODES = 8
"""The high end of an assumed world size: eight nodes (the low end: one model replica, DP 1)."""


def _vocab(inputs: Inputs) -> list[tuple[str, dict]]:
    return [(f"{v:,}", {"vocab": v}) for v in VOCAB_RANGE]


def _micro(inputs: Inputs) -> list[tuple[str, dict]]:
    return [(f"micro batch {m}", {"micro": m, "global_batch": m * inputs.grad_accum * inputs.dp})
            for m in MICRO_BATCH_RANGE]


def _seq(inputs: Inputs) -> list[tuple[str, dict]]:
    return [(f"sequence {s:,}", {"seq": s}) for s in SEQ_RANGE]


def _world(inputs: Inputs) -> list[tuple[str, dict]]:
    model_parallel = max(1, inputs.tp * inputs.pp * inputs.cp)
    out = []
    for world in (model_parallel, max(model_parallel, MAX_NODES * inputs.gpus_per_node // model_parallel * model_parallel)):
        dp = data_parallel_size(world, model_parallel) or 1  # world is a multiple of the product: never None
        out.append((f"{world:,} GPU{'s' if world != 1 else ''}",
                    {"world": world, "dp": dp, "global_batch": inputs.micro * inputs.grad_accum * dp}))
    return out


# spec field -> the (label, Inputs changes) of its low and high plausible values
_VARIANTS: dict[str, Callable[[Inputs], list[tuple[str, dict]]]] = {
    "model.vocab_size": _vocab,
    "batch.micro_batch": _micro,
    "model.seq_length": _seq,
    "cluster.world_size": _world,
}


def _guessed(a: Assumption) -> bool:
    """Assumed by trainlint, or (sequence length) the pre-training context of a --model preset."""
    return a.origin == Origin.ASSUMED.value or (a.field == "model.seq_length" and "pre-training context" in a.source)


def with_sensitivity(est: Estimate) -> Estimate:
    """``est`` whose assumed inputs (of those in _VARIANTS) say how much the worst stage's memory
    moves between their low and high plausible values; the estimate itself is unchanged."""
    from trainlint.estimator.core import estimate_inputs

    changed = False
    notes: list[Assumption] = []
    for a in est.assumptions:
        variants = _VARIANTS.get(a.field)
        if variants is None or not _guessed(a):
            notes.append(a)
            continue
        totals = []
        try:
            for label, changes in variants(est.inputs):
                stage = estimate_inputs(dataclasses.replace(est.inputs, **changes, assumptions=[])).worst_stage
                totals.append((label, stage.total))
        except (ValueError, ZeroDivisionError, ArithmeticError):
            notes.append(a)  # a variant the formulas reject (not divisible...): no range rather than a wrong one
            continue
        (low_label, low), (high_label, high) = totals
        notes.append(dataclasses.replace(a, source=f"{a.source}; total memory {low / C.GIB:.1f} GiB at {low_label} "
                                                   f"to {high / C.GIB:.1f} GiB at {high_label} "
                                                   f"({(high - low) / C.GIB:+.1f} GiB)"))
        changed = True
    if not changed:
        return est
    est.assumptions[:] = notes  # the same list the inputs hold: one record of what was assumed
    return est
