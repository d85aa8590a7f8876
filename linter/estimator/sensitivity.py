"""How much an assumed input moves the estimate: said beside the assumption, so a reader knows
whether the stated guess matters (an assumed vocabulary is a small share of most models)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from trainlint.estimator import coefficients as C
from trainlint.estimator.inputs import Assumption
from trainlint.provenance import Origin
from trainlint.tokenizer_vocab import VOCAB_RANGE

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.estimator.core import Estimate

# spec field -> (Inputs attribute, the range the estimate is re-made at)
_RANGES = {"model.vocab_size": ("vocab", VOCAB_RANGE)}


def with_sensitivity(est: "Estimate") -> "Estimate":
    """``est`` whose assumed inputs (of those in _RANGES) say how much the worst stage's memory moves
    over the field's range; the estimate itself is unchanged."""
    from trainlint.estimator.core import estimate_inputs

    changed = False
    notes: list[Assumption] = []
    for a in est.assumptions:
        spec = _RANGES.get(a.field)
        if spec is None or a.origin != Origin.ASSUMED.value:
            notes.append(a)
            continue
        attr, (low, high) = spec
        totals = [estimate_inputs(dataclasses.replace(est.inputs, **{attr: v, "assumptions": []})).worst_stage.total
                  for v in (low, high)]
        notes.append(dataclasses.replace(a, source=f"{a.source}; total memory {totals[0] / C.GIB:.1f} GiB at {low:,} "
                                                   f"to {totals[1] / C.GIB:.1f} GiB at {high:,} "
                                                   f"({(totals[1] - totals[0]) / C.GIB:+.1f} GiB)"))
        changed = True
    if not changed:
        return est
    est.assumptions[:] = notes  # the same list the inputs hold: one record of what was assumed
    return est
