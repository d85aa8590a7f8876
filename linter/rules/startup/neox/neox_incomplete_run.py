"""TL191: a NeoX run named on its own that sets no batch size or none of the model keys"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_NEOX_ARGUMENTS
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs
from trainlint.rules.startup.releases import ReleaseBoundRule, Releases
from trainlint.core.spec import TrainingSpec


MODEL_KEYS = ("num_layers", "hidden_size", "num_attention_heads", "max_position_embeddings")
"""NeoXArgs.validate_values' required_args (megatron/neox_arguments/arguments.py:1225-1230@ea7aefd)."""


class IncompleteRun(ReleaseBoundRule):
    """## What it does
    Reports a NeoX run, as named on the command line (or as a declared run of several files), that
    sets no batch size (neither `train_batch_size` nor `train_micro_batch_size_per_gpu`) or none of
    the model keys (`num_layers`, `hidden_size`, `num_attention_heads`, `max_position_embeddings`).
    A file met while walking a directory is left alone: it may be one part of a split config
    (`local_setup.yml` beside `125M.yml`); a run that sets some of the model keys but not all is
    TL185's.

    ## Why is this bad?
    `NeoXArgs` derives the batch first and asserts "Either train_batch_size or
    train_micro_batch_size_per_gpu needs to be provided", then `validate_values` raises
    "num_layers is None." for the first missing model key: NeoX refuses the run before training.

    ## Example
    ```bash
    python deepy.py train.py configs/local_setup.yml   # data paths only: no model, no batch
    ```

    ## Fix
    Give the model config with it (`python deepy.py train.py configs/125M.yml configs/local_setup.yml`),
    or check the files together as one run.

    ## References
    * `megatron/neox_arguments/arguments.py:858-862@ea7aefd`: "Either train_batch_size or
      train_micro_batch_size_per_gpu needs to be provided"
    * `megatron/neox_arguments/arguments.py:1225-1242@ea7aefd`: `required_args = ["num_layers", "hidden_size",
      "num_attention_heads", "max_position_embeddings"]`; "NeoXArgs.validate_values() {arg} is None."
    * GPT-NeoX `tests/neox_args/test_neoxargs_load.py::test_neoxargs_fail_instantiate_without_required_params`
      (`local_setup.yml` alone is refused)
    """

    code = "TL191"
    name = "neox-incomplete-run"
    default_severity = Severity.ERROR
    summary = "a NeoX run named on its own that sets no batch size or none of the model keys"
    requires = frozenset({CAP_NEOX_ARGUMENTS})
    releases = Releases("neox")

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if not spec.named:
            return
        a = NeoXArgs(spec)
        if a.given("autotuning") or any(k in spec.unresolved for k in ("train_batch_size", "train_micro_batch_size_per_gpu")):
            return  # the autotuner, or a value only known at launch, may give the batch
        files = " + ".join(spec.sources) if len(spec.sources) > 1 else "the file"
        if not (a.given("train_batch_size") or a.given("train_micro_batch_size_per_gpu")):
            yield Finding(f"the run ({files}) sets neither train_batch_size nor train_micro_batch_size_per_gpu: NeoX "
                          "stops with \"Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided\"",
                          fix="give the model config (with its batch) in the same run, e.g. "
                              "`deepy.py train.py 125M.yml local_setup.yml`")
        if not any(a.given(k) or k in spec.unresolved for k in MODEL_KEYS):
            yield Finding(f"the run ({files}) sets none of {', '.join(MODEL_KEYS)}: NeoX stops with "
                          "\"NeoXArgs.validate_values() num_layers is None.\"",
                          fix="give the model config in the same run")
