"""TL180-TL199, a rule bundle: GPT-NeoX's own start-up checks (``NeoXArgs.__post_init__``:
``calculate_derived`` and ``validate_values`` in megatron/neox_arguments/arguments.py), decided
statically, and those found by the launch-check audit (docs/launch-checks.md: a run, as the user names
it, that lacks what every NeoX run needs).

Cross-framework failures (batch triple, world-size divisibility, ZeRO >= 2 with the pipeline
engine, precision conflicts, heads, positions, SP without TP, MoE with ZeRO) are in
:mod:`trainlint.rules.startup`; unknown keys, types and the optimizer/scheduler dict shape are input
diagnostics from the adapter and the NeoX schema.

One module per rule, named by its slug; shared helpers (the run's arguments, the rules' base class,
whether the files checked describe a whole run) in :mod:`.helpers`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainlint import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.rules import DeferredRule


@hookimpl
def trainlint_rules() -> list[DeferredRule]:
    """This family's rules as the codes table declares them (one module each, named by the rule's slug), each imported when first needed."""
    from trainlint.rules.codes import family_declarations

    return family_declarations(__name__)
