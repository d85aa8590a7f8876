"""TL2xx-TL4xx and TL900, a rule bundle: rules on the estimate (memory, throughput, communication).

Each finding carries a fix computed by re-estimating modified copies of the spec
(:mod:`.fixes`), spelled in the input format's own terms. One module per rule (named by its slug);
shared helpers: :mod:`.scope` (what the estimate models), :mod:`.world_bound` (the memory verdict),
:mod:`.fixes` (the fix search), :mod:`.memory_helpers`."""

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
