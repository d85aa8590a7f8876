"""TL5xx planning, a rule bundle: the run's length against the compute-optimal token count and the 200B-token
advice (Transformer Math 101), and its estimated duration and cost against the project's limits (a CI
gate on spend). Shared helpers are in :mod:`.helpers`."""

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
