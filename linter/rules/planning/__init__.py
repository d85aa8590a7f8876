"""TL5xx planning, a rule bundle: the run's length against the compute-optimal token count and the 200B-token
advice (Transformer Math 101), and its estimated duration and cost against the project's limits (a CI
gate on spend). Shared helpers are in :mod:`.helpers`."""

from __future__ import annotations

from trainlint import hookimpl


@hookimpl
def trainlint_rules() -> list[type]:
    """This family's rules (one module each, named by the rule's slug), as listed in the codes table."""
    from trainlint.rules.codes import family_rules

    return family_rules(__name__)
