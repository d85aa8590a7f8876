"""TL637: fine-grained activation-offloading module lists against the recomputation, fused MLP and
paged-stash options Megatron-Core's ``TransformerConfig`` refuses them with (from the launch-check
audit). The offloading switches themselves (CPU offloading, empty lists, ``attn_proj`` alone, the
fractions) are TL168's."""

from __future__ import annotations

from trainlint import hookimpl
from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.combinations import CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references

_ON: Cond = ("fine_grained_activation_offloading", "on")
_SELECTIVE: Cond = ("recompute_granularity", "==", "selective")
_MOE_RECOMPUTE = ("Cannot offload {...} while recomputing the entire MoE layer. 'moe' in recompute_modules wraps the "
                  "full MoE forward in a checkpoint")
_FUSED = "fused_group_mlp offloads the whole fused grouped MLP and cannot be combined with expert_fc1 or moe_act."
_STASH = "When moe_paged_stash is enabled, offload_modules must not include expert_fc1, moe_act, or fused_group_mlp"


class OffloadModuleCombinations(CheckTable):
    """## What it does
    Checks `--offload-modules` (fine-grained activation offloading) against the other module lists:
    no `gdp_qkv` offload while `gdp_in_proj` is recomputed (upstream); nothing offloaded inside an
    MoE layer (`moe_act`, `expert_fc1`, `fused_group_mlp`) while the whole `moe` is recomputed; no
    `expert_fc1` / `moe_act` next to `fused_group_mlp`; none of them with `--moe-paged-stash`
    (since core_v0.18.0; `fused_group_mlp` since core_v0.19.0).

    ## Why is this bad?
    Megatron-Core stops while it builds the model configuration: the activations are either
    recomputed or offloaded, not both.

    ## Example
    ```bash
    pretrain_gpt.py ... --fine-grained-activation-offloading --offload-modules moe_act \\
        --recompute-granularity selective --recompute-modules moe
    ```

    ## Fix
    Remove the module from one of the two lists, as the message says.
    """

    code = "TL637"
    name = "megatron-core-offload-module-combinations"
    summary = "an activation-offloading module list with recomputation or paged stashing Megatron-Core refuses"
    checks = (
        _C(TCFG, 2159, "main", _ON, ("offload_modules", "has", "gdp_qkv"), _SELECTIVE, ("recompute_modules", "has", "gdp_in_proj"),
           says="gdp_qkv cannot be set in offload_modules together with gdp_in_proj in recompute_modules"),
        *(_C(TCFG, 2169, "core_v0.19.0", _ON, ("offload_modules", "has", module), _SELECTIVE,
             ("recompute_modules", "has", "moe"), says=_MOE_RECOMPUTE)
          for module in ("moe_act", "expert_fc1", "fused_group_mlp")),
        *(_C(TCFG, 2191, "core_v0.19.0", _ON, ("offload_modules", "has", "fused_group_mlp"),
             ("offload_modules", "has", module), says=_FUSED)
          for module in ("expert_fc1", "moe_act")),
        *(_C(TCFG, 2222, "core_v0.18.0", ("moe_paged_stash", "on"), ("offload_modules", "has", module), says=_STASH)
          for module in ("expert_fc1", "moe_act")),
        _C(TCFG, 2222, "core_v0.19.0", ("moe_paged_stash", "on"), ("offload_modules", "has", "fused_group_mlp"),
           says=_STASH),
    )


OffloadModuleCombinations.__doc__ = (OffloadModuleCombinations.__doc__ or "").rstrip() + "\n" + \
    references(OffloadModuleCombinations.checks)

RULES: list[type] = [OffloadModuleCombinations]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
