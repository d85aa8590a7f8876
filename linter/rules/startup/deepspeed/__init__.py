"""DeepSpeed's own start-up checks, a rule bundle: the failures (framework-assertions.md section 1) that a
static check of the DeepSpeed config can decide and that the schema does not already report, and those
found by the launch-check audit (docs/launch-checks.md: the dynamic loss-scaling ranges of the fp16
config model, the elasticity config of ``ElasticityConfig`` and ``compute_elastic_config``, each
naming the releases that make its check).

Not here: DS001/DS004-DS008/DS030 (the DeepSpeed adapter and its schema: TL003/TL004/TL006/
TL008), DS010 (TL103), DS020-DS023 batch triple (TL100; DS020 is TL120), DS060 (TL112),
DS072 (TL111), DS100 (TL110). Not decidable from the config: DS070 (MoQ lives in
compression_training), DS071 (the optimizer usually comes from code), DS073 (needs the mpu).

One module per rule, named by its slug; shared helpers in :mod:`.helpers` and :mod:`.launch_helpers`."""

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
