"""TL140-TL179, a rule bundle: Megatron-LM's own start-up checks (``validate_args`` and the Megatron-Core
config ``__post_init__`` checks it triggers), decided statically.

Cross-framework failures (batch triple, world-size divisibility, heads/TP, layers % PP, fp16+bf16,
SP without TP, seq vs positions, experts % EP) are in :mod:`trainlint.rules.startup`; removed and renamed
flags are input diagnostics (TL008) from the adapter. Every rule here runs only on runs read as
current Megatron-LM (not Megatron-DeepSpeed, not old Megatron-LM copies): their conditions and
messages are those of Megatron-LM at d98e8a6.

One module per rule, named by its slug (``megatron_tp_comm_overlap_without_sp.py`` is TL152); the
base class in :mod:`.base`; the rules written as tables of checks from the launch-check audit
(TL167-TL175) share :mod:`.check_table`. Each rule's golden cases are in ``tests/rules/cases/TLnnn.yaml``."""

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
