"""TL1xx: the checks the frameworks themselves would fail at launch, decided statically.

Each rule quotes the framework's own condition and error text in its documentation, and its
message carries the numbers that led to it. One rule bundle per family folder:

* this package: the same failure in several frameworks (framework-assertions.md section 4, X100-X112:
  batch triple, world size divisibility, ZeRO >= 2 with pipeline parallelism, precision conflicts,
  heads and layers), each decided the way that framework decides it (DP as each framework computes
  it, NeoX's pipeline engine at ``pipe_parallel_size >= 1``...; X102 is TL110 here; X107-X109 are input
  diagnostics the adapters report: TL008, TL004, TL009), and the Hugging Face Trainer's own check of
  the DeepSpeed config it runs (it fills the config's "auto" values from its TrainingArguments and
  requires every value the config states to equal the argument it would have filled it from:
  HfTrainerDeepSpeedConfig.trainer_config_process and fill_match, transformers/integrations/deepspeed.py).
  Shared helpers: :mod:`.helpers`, :mod:`.derive` (values as each framework derives them),
  :mod:`.releases` (which releases make a check); Megatron-LM's arguments with their defaults are
  read through the Megatron adapter's :mod:`trainlint.adapters.megatron.arguments`;
* :mod:`.deepspeed`, :mod:`.megatron`, :mod:`.neox`: one framework's own checks."""

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
