"""Megatron-Bridge's own launch-time checks (``ConfigContainer.validate()`` and the sub-configs'
``finalize()`` in ``src/megatron/bridge/training/config.py``), one module per rule named by its slug,
and TL116 (``CUDA_DEVICE_MAX_CONNECTIONS``), which Megatron-Core runs need whatever the format.

Each reads the ConfigContainer's fields as written (``spec.settings["bridge:<path>"]``), with Bridge's
dataclass defaults where a field is not written; facts are quoted with the line of config.py at the
Megatron-Bridge commit of the shipped recipe catalog. The family is one rule bundle, registered
through the ``trainlint_rules`` hook a plugin implements, from the codes table.
"""

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
