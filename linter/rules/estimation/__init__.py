"""TL2xx-TL4xx and TL900, a rule bundle: rules on the estimate (memory, throughput, communication).

Each finding carries a fix computed by re-estimating modified copies of the spec
(:mod:`.fixes`), spelled in the input format's own terms. One module per rule (named by its slug);
shared helpers: :mod:`.scope` (what the estimate models), :mod:`.world_bound` (the memory verdict),
:mod:`.fixes` (the fix search), :mod:`.memory_helpers`."""

from __future__ import annotations

from trainlint import hookimpl


@hookimpl
def trainlint_rules() -> list[type]:
    """This family's rules (one module each, named by the rule's slug), as listed in the codes table."""
    from trainlint.rules.codes import family_rules

    return family_rules(__name__)
