"""TL104: attention heads / KV heads not divisible by TP, or hidden size not divisible by the heads"""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS, CAP_MEGATRON_MODEL, CAP_NEOX_ARGUMENTS
from trainlint.core.diagnostics import Severity
from trainlint.core.provenance import Origin
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    from_checkpoint,
)
from trainlint.core.spec import TrainingSpec
from trainlint.rules.startup.helpers import _also, _mamba


class AttentionHeadsLayout(Rule):
    """## What it does
    Checks the attention shape against tensor parallelism: attention heads divisible by TP,
    hidden size divisible by the heads (when the head size is not given), and the KV heads
    (GQA query groups) compatible with TP and with the heads.

    ## Why is this bad?
    Each TP rank must hold whole heads; the frameworks refuse the layout when the model is built.

    ## Example
    `--num-attention-heads 20 --tensor-model-parallel-size 8`

    ## Fix
    Pick a TP that divides the number of heads (and of KV heads), or change the heads.

    ## References
    - Megatron-LM `megatron/core/transformer/transformer_config.py:1446-1449` @ d98e8a6:
      "num_attention_heads (...) must be a multiple of tensor_model_parallel_size (...)";
      `transformer_config.py:1458-1468`: "num_query_groups (...) must be a multiple or divisor of
      tensor_model_parallel_size (...)"; `megatron/training/arguments.py:1331-1333`:
      `assert args.hidden_size % args.num_attention_heads == 0` when `--kv-channels` is not given.
    - GPT-NeoX `megatron/neox_arguments/arguments.py:1245-1255` @ ea7aefd: "hidden_size must be
      divisible by num_attention_heads"; `arguments.py:1131-1148`: "num_kv_heads must evenly divide
      num_attention_heads", "Number of KV heads must be at least model_parallel_size for now!";
      heads per partition via `megatron/mpu/utils.py:24` ("{} is not divisible by {}").
    """

    code = "TL104"
    release_dependent = False
    name = "attention-heads-layout"
    default_severity = Severity.ERROR
    summary = "attention heads / KV heads not divisible by TP, or hidden size not divisible by the heads"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        m, p = spec.model, spec.parallel
        if from_checkpoint(spec):
            return
        heads, hidden, kv, tp = as_int(m.num_attention_heads), as_int(m.hidden_size), as_int(m.num_kv_heads), as_int(p.tensor)
        mla = bool(as_bool(spec.model.latent_attention))
        tp_name = "model_parallel_size" if CAP_NEOX_ARGUMENTS in capabilities(spec) else "tensor parallel size"
        if heads is not None and tp is not None and heads > 0 and tp > 1 and heads % tp:
            quote = ("\"num_attention_heads (...) must be a multiple of tensor_model_parallel_size\""
                     if CAP_MEGATRON_ARGUMENTS in capabilities(spec) else "\"... is not divisible by ...\" (mpu.divide)")
            yield Finding(f"{heads} attention heads are not divisible by {tp_name} {tp}; the framework stops: {quote}",
                          at=p.tensor, also=_also((m.num_attention_heads, "attention heads")),
                          fix=f"use a {tp_name} that divides {heads}")
        kv_given = m.num_kv_heads is not None and m.num_kv_heads.provenance.origin is Origin.FILE
        kv_channels_given = m.kv_channels is not None and m.kv_channels.provenance.origin is not Origin.DERIVED
        if hidden is not None and heads and not (CAP_MEGATRON_ARGUMENTS in capabilities(spec) and kv_channels_given) \
                and not mla and not _mamba(spec) and hidden % heads:
            yield Finding(f"hidden size {hidden} is not divisible by {heads} attention heads; the framework stops "
                          "(\"hidden_size must be divisible by num_attention_heads\")",
                          at=m.hidden_size, also=_also((m.num_attention_heads, "attention heads")),
                          fix="make the hidden size a multiple of the number of heads" +
                              (" or give --kv-channels" if CAP_MEGATRON_ARGUMENTS in capabilities(spec) else ""))
        if not kv_given or kv is None or kv < 1 or mla:
            return
        if CAP_NEOX_ARGUMENTS in capabilities(spec) and heads is not None and heads % kv:
            yield Finding(f"{heads} attention heads are not divisible by {kv} KV heads; NeoX stops: \"num_kv_heads must "
                          "evenly divide num_attention_heads and be no greater than it\"",
                          at=m.num_kv_heads, also=_also((m.num_attention_heads, "attention heads")))
        if tp is None or tp <= 1:
            return
        if CAP_MEGATRON_ARGUMENTS in capabilities(spec):
            if kv % tp and tp % kv:
                yield Finding(f"{kv} query groups is neither a multiple nor a divisor of tensor parallel size {tp}; "
                              "Megatron stops: \"num_query_groups (...) must be a multiple or divisor of "
                              "tensor_model_parallel_size\"", at=m.num_kv_heads, also=_also((p.tensor, "tensor parallel")))
        elif heads is not None and kv < heads and kv % tp:
            yield Finding(f"{kv} KV heads are not divisible by model_parallel_size {tp}; NeoX stops: \"Number of KV heads "
                          "must be at least model_parallel_size for now!\"", at=m.num_kv_heads,
                          also=_also((p.tensor, "model_parallel_size")))
