"""TL157: MoE dispatcher options Megatron-Core refuses (DeepEP without flex, overlap, capacity)"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class MoeDispatcherArguments(MegatronRule):
    """## What it does
    Checks MoE token-dispatcher options: DeepEP needs the `flex` dispatcher; shared-expert overlap
    needs `alltoall` or `flex`; a capacity factor needs an aux-loss style load balancing;
    `--moe-pad-expert-input-to-capacity` needs a capacity factor.

    ## Why is this bad?
    Megatron-Core raises these when it builds the model config; the default dispatcher is
    `allgather`.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 64 --moe-enable-deepep
    ```

    ## Fix
    Add `--moe-token-dispatcher-type flex` (DeepEP) or `alltoall` (shared-expert overlap), and a
    `--moe-expert-capacity-factor` when padding to capacity.

    ## References
    * `megatron/core/transformer/transformer_config.py:1743-1745@d98e8a6`: "DeepEP backend is only supported with
      flex token dispatcher."
    * `megatron/core/transformer/transformer_config.py:1819-1826@d98e8a6`: "moe_shared_expert_overlap only works
      with alltoall or flex token dispatcher."
    * `megatron/core/transformer/transformer_config.py:1836-1866@d98e8a6`: "moe_expert_capacity_factor only works
      with aux_loss, seq_aux_loss, global_aux_loss or none load balancing"; "moe_expert_capacity_factor must be
      set to use moe_pad_expert_input_to_capacity"
    """

    code = "TL157"
    name = "megatron-moe-dispatcher-arguments"
    summary = "MoE dispatcher options Megatron-Core refuses (DeepEP without flex, overlap, capacity)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dests = ("num_experts", "moe_token_dispatcher_type", "moe_enable_deepep", "moe_shared_expert_overlap",
                 "moe_shared_expert_intermediate_size", "moe_expert_capacity_factor", "moe_router_load_balancing_type",
                 "moe_pad_expert_input_to_capacity")
        if not a.known(*dests) or not a.get("num_experts"):
            return
        dispatcher = a.get("moe_token_dispatcher_type")
        disp_note = ((a.at("moe_token_dispatcher_type"), "token dispatcher"),)
        if a.on("moe_enable_deepep") and dispatcher != "flex":
            yield Finding(f"--moe-enable-deepep with the {dispatcher} token dispatcher: Megatron-Core stops with \"DeepEP "
                          "backend is only supported with flex token dispatcher.\"", at=a.at("moe_enable_deepep"),
                          also=disp_note, fix="add --moe-token-dispatcher-type flex")
        if a.on("moe_shared_expert_overlap") and a.get("moe_shared_expert_intermediate_size") is not None \
                and dispatcher not in ("alltoall", "flex"):
            yield Finding(f"--moe-shared-expert-overlap with the {dispatcher} token dispatcher: Megatron-Core stops with "
                          "\"moe_shared_expert_overlap only works with alltoall or flex token dispatcher.\"",
                          at=a.at("moe_shared_expert_overlap"), also=disp_note,
                          fix="add --moe-token-dispatcher-type alltoall")
        capacity = a.get("moe_expert_capacity_factor")
        if isinstance(capacity, (int, float)) and capacity < 0:
            capacity = None  # Megatron treats a negative factor as no capacity limit
        lb = a.get("moe_router_load_balancing_type")
        lb_types = lb if isinstance(lb, list) else [lb]
        allowed = ("aux_loss", "seq_aux_loss", "global_aux_loss", "none")
        if capacity is not None and any(t not in allowed for t in lb_types):
            bad = next(t for t in lb_types if t not in allowed)
            yield Finding(f"--moe-expert-capacity-factor {capacity} with --moe-router-load-balancing-type {bad}: "
                          "Megatron-Core stops with \"moe_expert_capacity_factor only works with aux_loss, seq_aux_loss, "
                          "global_aux_loss or none load balancing\"",
                          at=a.at_written("moe_router_load_balancing_type", "moe_expert_capacity_factor"),
                          also=((a.at("moe_expert_capacity_factor"), "capacity factor"),))
        if a.on("moe_pad_expert_input_to_capacity") and capacity is None:
            yield Finding("--moe-pad-expert-input-to-capacity without --moe-expert-capacity-factor: Megatron-Core stops "
                          "with \"moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity\"",
                          at=a.at("moe_pad_expert_input_to_capacity"))
