"""TL635: the experimental attention variants' options (gated delta net, DeepSeek sparse attention)
that Megatron-Core's ``TransformerConfig`` refuses (from the launch-check audit).

Upstream names the gated delta net ``gdn`` (and ``gdn2``) and reads the older ``gated_delta_net``
as ``gdn`` before its checks; core_v0.16.0 to core_v0.19.0 know only ``gated_delta_net``.
"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.releases import Releases

_VARIANT = "experimental_attention_variant"
_GDN_OLD: Cond = (_VARIANT, "==", "gated_delta_net")
_GDN_ANY: Cond = (_VARIANT, "in", ("gdn", "gdn2", "gated_delta_net"))
_DSA: Cond = (_VARIANT, "==", "dsa")
_KEY_TP = ("linear_num_key_heads", "not a multiple of", "tensor_model_parallel_size")
_VALUE_TP = ("linear_num_value_heads", "not a multiple of", "tensor_model_parallel_size")
_VALUE_KEY = ("linear_num_value_heads", "not a multiple of", "linear_num_key_heads")
_KEY_MSG = "self.linear_num_key_heads must be a multiple of (self.tensor_model_parallel_size * self.context_parallel_size)."
_VALUE_MSG = ("self.linear_num_value_heads must be a multiple of (self.tensor_model_parallel_size * "
              "self.context_parallel_size).")
_RATIO_MSG = "linear_num_value_heads must be a multiple of linear_num_key_heads."
_DSA_CP = "DSAttention context parallelism currently supports cp_comm_type=allgather only."
_BIAS_MSG = "DSA uses AbsorbedMLASelfAttention, which requires add_bias_linear=False."


class AttentionVariantArguments(CheckTable):
    """## What it does
    Checks `--experimental-attention-variant` against its options as Megatron-Core's
    `TransformerConfig.__post_init__` does: a gated delta net needs `--linear-attention-freq`, value
    heads that are a multiple of its key heads, and key and value heads divisible by the tensor
    (times context) parallel size (no context parallelism at all in core_v0.16.0 and core_v0.17.0);
    DeepSeek sparse attention (`dsa`) needs linear layers without biases, a positive indexer top-k
    frequency and a non-negative top-k offset, and with context parallelism the `allgather`
    communication type for every layer (no context parallelism at all in core_v0.16.0 to
    core_v0.18.0).

    The divisibility is checked against the tensor-parallel size alone, which every failing
    product also fails: a finding is always a refusal, a remainder only from the product is missed.

    ## Why is this bad?
    Megatron-Core raises while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --experimental-attention-variant gdn --linear-attention-freq 4 \\
        --linear-num-key-heads 6 --tensor-model-parallel-size 4
    ```

    ## Fix
    Give the option the message names, or a head count the parallel size divides;
    `--disable-bias-linear` with DSA.
    """

    code = "TL635"
    name = "megatron-core-attention-variant-arguments"
    summary = "gated delta net or DSA options Megatron-Core's TransformerConfig refuses"
    checks = (
        # gated delta net: upstream (gdn, gdn2, gated_delta_net read as gdn)
        _C(TCFG, 1475, "main", (_VARIANT, "in", ("gdn", "gated_delta_net")), ("linear_attention_freq", "unset"),
           says="linear_attention_freq must be set for linear gdn."),
        _C(TCFG, 1495, "main", _GDN_ANY, _VALUE_KEY, says=_RATIO_MSG),
        _C(TCFG, 1502, "main", _GDN_ANY, _KEY_TP, says=_KEY_MSG),
        _C(TCFG, 1506, "main", _GDN_ANY, _VALUE_TP, says=_VALUE_MSG),
        # gated delta net: the releases
        _C(TCFG, 1348, "core_v0.16.0", _GDN_OLD, ("linear_attention_freq", "unset"),
           says="linear_attention_freq must be set for linear gated_delta_net.", last="core_v0.19.0"),
        _C(TCFG, 1368, "core_v0.16.0", _GDN_OLD, _VALUE_KEY, says=_RATIO_MSG, last="core_v0.19.0"),
        _C(TCFG, 1375, "core_v0.18.0", _GDN_OLD, _KEY_TP, says=_KEY_MSG, last="core_v0.19.0"),
        _C(TCFG, 1379, "core_v0.18.0", _GDN_OLD, _VALUE_TP, says=_VALUE_MSG, last="core_v0.19.0"),
        _C(TCFG, 1094, "core_v0.16.0", _GDN_OLD, _KEY_TP,
           says="linear_num_key_heads must be a multiple of tensor_model_parallel_size.", last="core_v0.17.0"),
        _C(TCFG, 1097, "core_v0.16.0", _GDN_OLD, _VALUE_TP,
           says="linear_num_value_heads must be a multiple of tensor_model_parallel_size.", last="core_v0.17.0"),
        _C(TCFG, 1102, "core_v0.16.0", _GDN_OLD, ("context_parallel_size", "!=", 1),
           says="Gated delta net does not support context parallel for now", last="core_v0.17.0"),
        # DeepSeek sparse attention
        _C(TCFG, 1513, "main", _DSA, ("add_bias_linear", "on"), says=_BIAS_MSG),
        _C(TCFG, 1518, "main", _DSA, ("dsa_indexer_topk_freq", "<", 1), says="dsa_indexer_topk_freq must be positive"),
        _C(TCFG, 1522, "main", _DSA, ("dsa_indexer_skip_topk_offset", "<", 0),
           says="dsa_indexer_skip_topk_offset must be non-negative"),
        _C(TCFG, 1386, "core_v0.19.0", _DSA, ("add_bias_linear", "on"), says=_BIAS_MSG, last="core_v0.19.0"),
        _C(TCFG, 1391, "core_v0.19.0", _DSA, ("dsa_indexer_topk_freq", "<", 1),
           says="dsa_indexer_topk_freq must be positive", last="core_v0.19.0"),
        _C(TCFG, 1395, "core_v0.19.0", _DSA, ("dsa_indexer_skip_topk_offset", "<", 0),
           says="dsa_indexer_skip_topk_offset must be non-negative", last="core_v0.19.0"),
        _C(TCFG, 2543, "core_v0.16.0", _DSA, ("context_parallel_size", "!=", 1),
           says="Currently context parallelism is not supported by DSAttention!", last="core_v0.18.0"),
    )


    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        yield from super().findings(a, ctx)
        yield from self._dsa_context_parallel(a)

    @staticmethod
    def _dsa_context_parallel(a: MegatronArgs) -> Iterator[Finding]:
        """DSA with context parallelism: every --cp-comm-type must be allgather (core_v0.19.0 on)."""
        if not a.given(_VARIANT) or a.get(_VARIANT) != "dsa" or not a.known("context_parallel_size", "cp_comm_type") \
                or not Releases("megatron", first="core_v0.19.0").includes(a.spec.target):
            return
        cp, types = a.get("context_parallel_size"), a.get("cp_comm_type")
        types = [types] if isinstance(types, str) else types
        if not isinstance(cp, int) or cp <= 1 or not isinstance(types, (list, tuple)) or not types \
                or not all(isinstance(t, str) for t in types):
            return
        if all(t.replace("_", "").lower() == "allgather" for t in types):
            return
        yield Finding(f"{a.flag(_VARIANT)} dsa with {a.flag('context_parallel_size')} {cp} and {a.flag('cp_comm_type')} "
                      f"{' '.join(types)}: Megatron-Core stops with \"{_DSA_CP}\"", at=a.at(_VARIANT),
                      also=tuple((a.at(d), "with this option") for d in ("context_parallel_size", "cp_comm_type") if a.given(d)),
                      fix=f"{a.flag('cp_comm_type')} allgather")


AttentionVariantArguments.__doc__ = (AttentionVariantArguments.__doc__ or "").rstrip() + "\n" + \
    references(AttentionVariantArguments.checks) + \
    f"    * `{TCFG}:3162-3172@d98e8a6` (since core_v0.19.0): \"{_DSA_CP}\"\n"
