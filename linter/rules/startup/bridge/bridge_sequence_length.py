"""TL671: model.seq_length and dataset.seq_length differ"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, positive_int


class SequenceLengths(BridgeRule):
    """## What it does
    Checks that a ConfigContainer YAML gives the model and the dataset the same sequence length
    (`ConfigContainer.validate`: "Please ensure sequence length configuration in model config and dataset
    config match").

    ## Why is this bad?
    `pretrain()` stops with an `AssertionError` before the first step. (`run_recipe.py` copies
    `dataset.seq_length` into `model.seq_length` after the overrides, so a recipe launch line cannot
    disagree; a YAML given to your own script can.)

    ## Example
    ```yaml
    model:
      seq_length: 8192
    dataset:
      seq_length: 4096
    ```

    ## Fix
    Give both the same value.
    """

    code = "TL671"
    name = "bridge-sequence-length"
    summary = "model.seq_length and dataset.seq_length differ"

    def findings(self, f: Fields) -> Iterator[Finding]:
        model, data = f.entry("model.seq_length"), f.entry("dataset.seq_length")
        if f.spec.label.startswith("run_recipe.py") or model is None or data is None:
            return
        if positive_int(model.value) and positive_int(data.value) and model.value != data.value:
            yield Finding(f"`model.seq_length` {model.value} != `dataset.seq_length` {data.value}: Bridge stops with "
                          "\"Please ensure sequence length configuration in model config and dataset config match\"",
                          at=data, also=((model, "model's sequence length"),))
