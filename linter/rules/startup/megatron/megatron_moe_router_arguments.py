"""TL156: MoE router options Megatron-Core refuses (top-1 softmax, group routing, expert bias)"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class MoeRouterArguments(MegatronRule):
    """## What it does
    Checks the MoE router: top-1 routing with softmax scores needs `--moe-router-pre-softmax`;
    group-limited routing (`--moe-router-group-topk`) needs `--moe-router-num-groups` dividing the
    number of experts and at least the group top-k; aux-loss-free expert bias needs the sigmoid or
    sqrtsoftplus score function.

    ## Why is this bad?
    Megatron-Core raises these when it builds the model config. Top-1 softmax without pre-softmax
    would give zero router gradients.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 8 --moe-router-topk 1
    ```

    ## Fix
    Add `--moe-router-pre-softmax` for top-1; choose a group count that divides the experts.

    ## References
    * `megatron/core/transformer/transformer_config.py:2662-2669@d98e8a6`: "Please use --moe-router-pre-softmax
      when topk is 1."
    * `megatron/core/transformer/transformer_config.py:2671-2689@d98e8a6`: "When using group limited routing,
      moe_router_num_groups must be specified."; "num_moe_experts ({E}) should be divisible by
      moe_router_num_groups ({G})."; "moe_router_group_topk ({k}) should be smaller than moe_router_num_groups
      ({G})."
    * `megatron/core/transformer/transformer_config.py:2617-2625@d98e8a6`: "Expert bias for aux-loss-free
      routing only supports 'sigmoid' and 'sqrtsoftplus' score functions."
    """

    code = "TL156"
    name = "megatron-moe-router-arguments"
    summary = "MoE router options Megatron-Core refuses (top-1 softmax, group routing, expert bias)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dests = ("num_experts", "moe_router_topk", "moe_router_score_function", "moe_router_pre_softmax",
                 "moe_router_load_balancing_type", "moe_router_group_topk", "moe_router_num_groups",
                 "moe_router_enable_expert_bias")
        if not a.known(*dests):
            return
        experts = a.get("num_experts")
        if not experts:
            return
        lb = a.get("moe_router_load_balancing_type")
        lb_types = lb if isinstance(lb, list) else [lb]
        if a.get("moe_router_topk") == 1 and a.get("moe_router_score_function") == "softmax" \
                and not a.on("moe_router_pre_softmax") and lb_types != ["sinkhorn"]:
            yield Finding("--moe-router-topk 1 with softmax scores and no --moe-router-pre-softmax: Megatron-Core stops "
                          "with \"Please use --moe-router-pre-softmax when topk is 1.\"", at=a.at("moe_router_topk"),
                          fix="add --moe-router-pre-softmax")
        group_topk, groups = a.get("moe_router_group_topk"), a.get("moe_router_num_groups")
        if group_topk:
            if not groups:
                yield Finding(f"--moe-router-group-topk {group_topk} without --moe-router-num-groups: Megatron-Core stops "
                              "with \"When using group limited routing, moe_router_num_groups must be specified.\"",
                              at=a.at("moe_router_group_topk"))
            elif isinstance(experts, int) and isinstance(groups, int):
                if experts % groups:
                    yield Finding(f"{experts} experts are not divisible by --moe-router-num-groups {groups}: Megatron-Core "
                                  f"stops with \"num_moe_experts ({experts}) should be divisible by moe_router_num_groups "
                                  f"({groups}).\"", at=a.at("moe_router_num_groups"),
                                  also=((a.at("num_experts"), "number of experts"),))
                if isinstance(group_topk, int) and group_topk > groups:
                    yield Finding(f"--moe-router-group-topk {group_topk} > --moe-router-num-groups {groups}: "
                                  f"Megatron-Core stops with \"moe_router_group_topk ({group_topk}) should be smaller "
                                  f"than moe_router_num_groups ({groups}).\"", at=a.at("moe_router_group_topk"))
        score = a.get("moe_router_score_function")
        if a.on("moe_router_enable_expert_bias") and score not in ("sigmoid", "sqrtsoftplus"):
            yield Finding(f"--moe-router-enable-expert-bias with the {score} score function: Megatron-Core stops with "
                          "\"Expert bias for aux-loss-free routing only supports 'sigmoid' and 'sqrtsoftplus' score "
                          "functions.\"", at=a.at("moe_router_enable_expert_bias"),
                          fix="add --moe-router-score-function sigmoid")
