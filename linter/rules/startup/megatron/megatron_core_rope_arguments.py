"""TL632: rotary-embedding options Megatron-Core's ``TransformerConfig`` / ``MLATransformerConfig``
refuse together (from the launch-check audit).

The RoPE fusion (``apply_rope_fusion``) is on by default; ``validate_args`` turns it off unless
``--position-embedding-type rope`` (since core_v0.10.0), so every check here also asks for that
position embedding: a run whose fusion Megatron turns off is never refused.
"""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, _C
from trainlint.rules.startup.megatron.core_releases import references

_ROPE = ("position_embedding_type", "==", "rope")
_FUSED = ("apply_rope_fusion", "on")


class RopeArguments(CheckTable):
    """## What it does
    Checks rotary-embedding options against what Megatron-Core's transformer configs accept: the
    RoPE fusion with multi-latent attention and a RoPE type other than YaRN (with MLA at all in
    core_v0.11.0 and core_v0.12.0), the RoPE fusion with interleaved rotary embeddings (core_v0.5.0
    to core_v0.12.0), and a `--no-rope-freq` that does not divide the number of layers.

    ## Why is this bad?
    Megatron-Core raises while it builds the model configuration, before the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --multi-latent-attention --position-embedding-type rope --rope-type rope
    ```

    ## Fix
    Add `--no-rope-fusion`, or use YaRN RoPE with MLA (`--rope-type yarn`); give a `--no-rope-freq`
    that divides `--num-layers`.
    """

    code = "TL632"
    name = "megatron-core-rope-arguments"
    summary = "RoPE fusion or no-RoPE layers in a combination Megatron-Core's transformer config refuses"
    checks = (
        _C("megatron/core/transformer/transformer_config.py", 3346, "core_v0.13.0", ("multi_latent_attention", "on"),
           _FUSED, _ROPE, ("rope_type", "==", "rope"), says="apply_rope_fusion for MLA only works with YARN RoPE."),
        _C(TCFG, 926, "core_v0.11.0", ("multi_latent_attention", "on"), _FUSED, _ROPE,
           says="multi_latent_attention does not support apply_rope_fusion.", last="core_v0.12.0"),
        _C(TCFG, 913, "core_v0.5.0", ("rotary_interleaved", "on"), _FUSED, _ROPE,
           says="rotary_interleaved does not work with apply_rope_fusion.", last="core_v0.12.0"),
        _C(TCFG, 3141, "core_v0.13.0", ("no_rope_freq", ">", 0), ("num_layers", "not a multiple of", "no_rope_freq"),
           says="no_rope_freq=... should be divisible by num_layers=..."),
    )


RopeArguments.__doc__ = (RopeArguments.__doc__ or "").rstrip() + "\n" + references(RopeArguments.checks)
