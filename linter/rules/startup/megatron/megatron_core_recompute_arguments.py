"""TL640: selective-recomputation module lists against the precision and model options
Megatron-Core's ``TransformerConfig`` refuses them with (from the launch-check audit). The module
names themselves are TL636's; recomputation against CUDA graphs, offloading and MoE overlap are
TL167, TL637 and TL169's."""

from __future__ import annotations

from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references

_GRAPHS = "CUDA graphs not supported with activation recomputation."
_SELECTIVE: Cond = ("recompute_granularity", "==", "selective")
_DELAYED = "Delayed scaling does not support moe_act and layernorm recompute for fp8."
_GDN = "gdn_norm_out in recompute_modules is only supported with experimental_attention_variant='gdn' or 'gdn2'."


class RecomputeArguments(CheckTable):
    """## What it does
    Checks `--recompute-modules` under selective recomputation: `moe_act` or `layernorm` with FP8
    only with a recipe other than delayed scaling (`--fp8-recipe delayed` is the default; any FP8 in
    core_v0.13.0); `gdn_norm_out` only with a gated-delta-net attention variant; a positive
    `--mhc-recompute-layer-num` with `mhc`; and `--gdp-num-chunk-states-to-recompute` in [0, 64]
    with `--gdp-cutedsl-kernel` (upstream); recomputation with CUDA graphs in core_v0.11.0 to
    core_v0.15.0 (core_v0.15.0 graphs only Transformer Engine attention under selective recomputation).

    ## Why is this bad?
    `TransformerConfig.__post_init__` raises while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --fp8-format hybrid --recompute-granularity selective --recompute-modules moe_act
    ```

    ## Fix
    Use a current-scaling FP8 recipe (`--fp8-recipe tensorwise`, `mxfp8`, ...), or drop the module.
    """

    code = "TL640"
    name = "megatron-core-recompute-arguments"
    summary = "selective-recompute modules with FP8 delayed scaling or a model option Megatron-Core refuses"
    checks = (
        *(_C(TCFG, 2003, "core_v0.14.0", ("recompute_modules", "has", module), _SELECTIVE, ("fp8", "set"),
             ("fp8_recipe", "==", "delayed"), says=_DELAYED) for module in ("moe_act", "layernorm")),
        *(_C(TCFG, 846, "core_v0.13.0", ("recompute_modules", "has", module), _SELECTIVE, ("fp8", "set"),
             says="moe_act and layernorm recompute cannot work with fp8.", last="core_v0.13.0")
          for module in ("moe_act", "layernorm")),
        _C(TCFG, 1978, "main", ("recompute_modules", "has", "gdn_norm_out"), _SELECTIVE,
           ("experimental_attention_variant", "not in", ("gdn", "gdn2", "gated_delta_net")), says=_GDN),
        _C(TCFG, 1799, "core_v0.19.0", ("recompute_modules", "has", "gdn_norm_out"), _SELECTIVE,
           ("experimental_attention_variant", "!=", "gated_delta_net"),
           says="gdn_norm_out in recompute_modules is only supported with experimental_attention_variant="
                "'gated_delta_net'.", last="core_v0.19.0"),
        _C(TCFG, 2041, "main", ("mhc_recompute_layer_num", "<", 1), _SELECTIVE, ("recompute_modules", "has", "mhc"),
           says="mhc_recompute_layer_num must be a positive integer when 'mhc' is in recompute_modules."),
        _C(TCFG, 2197, "main", ("gdp_num_chunk_states_to_recompute", "<", 0), ("gdp_cutedsl_kernel", "on"),
           says="gdp_num_chunk_states_to_recompute must be in range [0, 64]"),
        _C(TCFG, 2197, "main", ("gdp_num_chunk_states_to_recompute", ">", 64), ("gdp_cutedsl_kernel", "on"),
           says="gdp_num_chunk_states_to_recompute must be in range [0, 64]"),
        # recomputation with CUDA graphs in the releases before the graph-module checks (TL167, TL638)
        _C(TCFG, 1271, "core_v0.11.0", ("recompute_granularity", "set"), ("enable_cuda_graph", "on"),
           says=_GRAPHS, last="core_v0.14.0"),
        _C(TCFG, 1403, "core_v0.15.0", ("recompute_granularity", "==", "full"), ("cuda_graph_impl", "!=", "none"),
           says=_GRAPHS, last="core_v0.15.0"),
        _C(TCFG, 1403, "core_v0.15.0", ("recompute_granularity", "set"), ("cuda_graph_impl", "==", "local"),
           says=_GRAPHS, last="core_v0.15.0"),
        _C(TCFG, 1403, "core_v0.15.0", ("recompute_granularity", "set"), ("cuda_graph_impl", "==", "transformer_engine"),
           ("cuda_graph_scope", "!=", "attn"), says=_GRAPHS, last="core_v0.15.0"),
    )


RecomputeArguments.__doc__ = (RecomputeArguments.__doc__ or "").rstrip() + "\n" + references(RecomputeArguments.checks)
