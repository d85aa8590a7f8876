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

from trainlint import hookimpl


@hookimpl
def trainlint_rules() -> list[type]:
    """This family's rules (one module each, named by the rule's slug), as listed in the codes table."""
    from trainlint.rules.codes import family_rules

    return family_rules(__name__)
