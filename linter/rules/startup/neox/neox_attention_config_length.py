"""TL182: attention_config does not expand to num_layers entries, or names an unknown attention type"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule, _number


ATTENTION_TYPES = ("global", "local", "sparse_fixed", "sparse_variable", "bigbird", "bslongformer", "gmlp", "amlp",
                   "flash", "rwkv", "mamba")
"""ATTENTION_TYPE_CHOICES, megatron/neox_arguments/neox_args.py:29-41@ea7aefd."""


class AttentionConfigLength(_NeoXRule):
    """## What it does
    Expands `attention_config` as NeoX does and checks it has one entry per layer and only known
    attention types.

    ## Why is this bad?
    NeoX asserts the expanded list has `num_layers` entries. `[[["global", "local"], 12]]` expands
    to 24 entries (the pattern repeated 12 times), not 12; `"all"` needs `num_layers` divisible by
    the pattern length.

    ## Example
    ```yaml
    num_layers: 24
    attention_config: [[["flash"], 12]]
    ```

    ## Fix
    Make the counts add up to `num_layers`, or use `[[["flash"], "all"]]`.

    ## References
    * `megatron/neox_arguments/arguments.py:1091-1104@ea7aefd`: "Length of attention config list must equal
      num_layers"; "Attention type {item} not recognized"
    * `megatron/utils.py:326-353@ea7aefd` (expand_attention_types): "Number of layers ({n}) is not divisible by
      the length of pattern: {pattern}"
    """

    code = "TL182"
    name = "neox-attention-config-length"
    summary = "attention_config does not expand to num_layers entries, or names an unknown attention type"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.given("attention_config"):
            return
        layers = _number(a.spec.value("model.num_layers"))
        types, error = a.attention_types()
        also = (("model.num_layers", f"num_layers {layers}"),)
        if error:
            yield Finding(f"attention_config: NeoX stops with \"{error}\"", at=a.at("attention_config"), also=also)
            return
        if types is None or not isinstance(layers, int):
            return
        if len(types) != layers:
            yield Finding(f"attention_config expands to {len(types)} layers but num_layers is {layers}: NeoX stops with "
                          "\"Length of attention config list must equal num_layers\"", at=a.at("attention_config"),
                          also=also)
        unknown = sorted({t for t in types if t not in ATTENTION_TYPES})
        if unknown:
            yield Finding(f"attention_config names {', '.join(unknown)}: NeoX stops with \"Attention type {unknown[0]} not "
                          f"recognized\" (known: {', '.join(ATTENTION_TYPES)})", at=a.at("attention_config"))
