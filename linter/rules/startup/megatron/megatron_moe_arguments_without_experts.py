"""TL154: --moe-ffn-hidden-size or --moe-latent-size on a model without --num-experts"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class MoeArgumentsWithoutExperts(MegatronRule):
    """## What it does
    Checks MoE-only options given to a dense model (no `--num-experts`): `--moe-ffn-hidden-size`
    (unless `--moe-layer-freq` leaves dense layers) and `--moe-latent-size`.

    ## Why is this bad?
    Megatron-LM stops: these size MoE layers that do not exist, and usually mean `--num-experts` was
    forgotten.

    ## Example
    ```bash
    pretrain_gpt.py ... --moe-ffn-hidden-size 1408
    ```

    ## Fix
    Add `--num-experts N`, or drop the MoE options.

    ## References
    * `megatron/core/transformer/transformer_config.py:1689-1706@d98e8a6`: "moe_ffn_hidden_size is set but
      num_moe_experts is None. Please set num_moe_experts or remove moe_ffn_hidden_size."
    * `megatron/training/arguments.py:1979-1982@d98e8a6`: "MoE latent projection dimension has to be greater than
      zero."; "MoE latent projections are applicable only for MoE models."
    """

    code = "TL154"
    name = "megatron-moe-arguments-without-experts"
    summary = "--moe-ffn-hidden-size or --moe-latent-size on a model without --num-experts"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("num_experts", "moe_ffn_hidden_size", "moe_latent_size", "moe_layer_freq"):
            return
        experts = a.get("num_experts")
        dense = experts is None or experts == 0
        freq = a.get("moe_layer_freq")
        mixed = (isinstance(freq, int) and freq > 1) or (isinstance(freq, str) and "0" in freq)
        if dense and a.get("moe_ffn_hidden_size") is not None and not mixed:
            yield Finding(f"--moe-ffn-hidden-size {a.get('moe_ffn_hidden_size')} without --num-experts: Megatron-Core "
                          "stops with \"moe_ffn_hidden_size is set but num_moe_experts is None. Please set "
                          "num_moe_experts or remove moe_ffn_hidden_size.\"", at=a.at("moe_ffn_hidden_size"))
        latent = a.get("moe_latent_size")
        if latent is not None:
            if isinstance(latent, int) and latent <= 0:
                yield Finding(f"--moe-latent-size {latent}: Megatron-LM stops with \"MoE latent projection dimension has "
                              "to be greater than zero.\"", at=a.at("moe_latent_size"))
            elif dense:
                yield Finding(f"--moe-latent-size {latent} without --num-experts: Megatron-LM stops with \"MoE latent "
                              "projections are applicable only for MoE models.\"", at=a.at("moe_latent_size"))
