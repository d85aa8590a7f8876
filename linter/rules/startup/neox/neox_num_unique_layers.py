"""TL188: num_unique_layers greater than num_layers or not dividing it"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule, _number


class NumUniqueLayers(_NeoXRule):
    """## What it does
    Checks `num_unique_layers` (parameter sharing): at most `num_layers`, and a divisor of it.

    ## Why is this bad?
    NeoX's `validate_values` raises.

    ## Example
    ```yaml
    num_layers: 24
    num_unique_layers: 5
    ```

    ## Fix
    Use a divisor of `num_layers`.

    ## References
    * `megatron/neox_arguments/arguments.py:1293-1312@ea7aefd`: "num-unique-layers must be smaller or equal
      num_layers"; "num-layers should be divisible by num-unique-layers"
    """

    code = "TL188"
    name = "neox-num-unique-layers"
    summary = "num_unique_layers greater than num_layers or not dividing it"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        unique, layers = _number(a.get("num_unique_layers")), _number(a.spec.value("model.num_layers"))
        if not isinstance(unique, int) or not isinstance(layers, int) or unique <= 0:
            return
        also = (("model.num_layers", f"num_layers {layers}"),)
        if unique > layers:
            yield Finding(f"num_unique_layers {unique} > num_layers {layers}: NeoX stops with \"num-unique-layers must be "
                          "smaller or equal num_layers\"", at=a.at("num_unique_layers"), also=also)
        elif layers % unique:
            yield Finding(f"num_layers {layers} is not divisible by num_unique_layers {unique}: NeoX stops with "
                          "\"num-layers should be divisible by num-unique-layers\"", at=a.at("num_unique_layers"),
                          also=also)
