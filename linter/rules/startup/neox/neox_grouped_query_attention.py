"""TL184: GQA/MQA (num_kv_heads < heads) with sparse or non-flash/global attention"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule, _number


class GroupedQueryAttention(_NeoXRule):
    """## What it does
    Checks grouped/multi-query attention (`num_kv_heads` < `num_attention_heads`): only flash or
    global attention and no sparsity config are allowed. (KV heads dividing the heads and
    `model_parallel_size` are part of the cross-framework heads rule, TL104.)

    ## Why is this bad?
    NeoX asserts each of these at start-up.

    ## Example
    ```yaml
    num_attention_heads: 32
    num_kv_heads: 8
    attention_config: [[["local"], "all"]]
    ```

    ## Fix
    Use flash (or global) attention with GQA, and no sparsity config.

    ## References
    * `megatron/neox_arguments/arguments.py:1131-1148@ea7aefd`: "num_kv_heads must evenly divide
      num_attention_heads and be no greater than it"; "Sparse attention not compatible with GQA or MQA"; "GQA / MQA
      currently only compatible with Flash or standard global/sliding window Attention"
    """

    code = "TL184"
    name = "neox-grouped-query-attention"
    summary = "GQA/MQA (num_kv_heads < heads) with sparse or non-flash/global attention"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        kv, heads = _number(a.get("num_kv_heads")), _number(a.spec.value("model.num_attention_heads"))
        if not isinstance(kv, int) or not isinstance(heads, int) or kv <= 0 or not a.given("num_kv_heads"):
            return
        if heads % kv or kv >= heads:
            return  # heads % KV heads is the cross-framework heads rule (TL104)
        if a.get("sparsity_config"):
            yield Finding(f"num_kv_heads {kv} < {heads} heads with a sparsity_config: NeoX stops with \"Sparse attention "
                          "not compatible with GQA or MQA\"", at=a.at("sparsity_config"),
                          also=((a.at("num_kv_heads"), "KV heads"),))
        types, _ = a.attention_types()
        other = sorted({t for t in types or [] if t not in ("flash", "global")})
        if other:
            yield Finding(f"num_kv_heads {kv} < {heads} heads with {', '.join(other)} attention: NeoX stops with \"GQA / "
                          "MQA currently only compatible with Flash or standard global/sliding window Attention\"",
                          at=a.at("attention_config"), also=((a.at("num_kv_heads"), "KV heads"),))
