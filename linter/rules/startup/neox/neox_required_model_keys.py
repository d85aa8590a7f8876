"""TL185: a model config without num_layers, hidden_size, num_attention_heads or max_position_embeddings"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule


class RequiredModelKeys(_NeoXRule):
    """## What it does
    Checks that a model config sets `num_layers`, `hidden_size`, `num_attention_heads` and
    `max_position_embeddings` (NeoX has no defaults for them).

    ## Why is this bad?
    NeoX's `validate_values` raises "... is None." for the first missing one. The rule runs when
    the checked files set at least one of the four (a model config); a file with none of them is
    taken to be another part of a split config (a run named on its own with none of them: TL191).

    ## Example
    ```yaml
    num_layers: 12
    hidden_size: 768
    num_attention_heads: 12
    ```
    (no `max_position_embeddings`)

    ## Fix
    Add the missing keys (`max_position_embeddings` is usually `seq_length`).

    ## References
    * `megatron/neox_arguments/arguments.py:1224-1242@ea7aefd`: `required_args = ["num_layers", "hidden_size",
      "num_attention_heads", "max_position_embeddings"]`; "NeoXArgs.validate_values() {arg} is None."
    """

    code = "TL185"
    name = "neox-required-model-keys"
    summary = "a model config without num_layers, hidden_size, num_attention_heads or max_position_embeddings"

    _KEYS = ("num_layers", "hidden_size", "num_attention_heads", "max_position_embeddings")

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        present = [k for k in self._KEYS if a.given(k)]
        missing = [k for k in self._KEYS if not a.given(k)]
        if not present or not missing:
            return
        yield Finding(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set (NeoX has no default): NeoX "
                      f"stops with \"NeoXArgs.validate_values() {missing[0]} is None.\"",
                      at=a.at(present[0]), fix=f"add {missing[0]}")
