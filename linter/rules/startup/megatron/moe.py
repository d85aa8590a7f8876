"""TL154-TL157: mixture of experts (router, dispatcher, expert tensor parallelism)."""

from __future__ import annotations

from typing import Iterator

from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs
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


class MoeBiasWithExpertTensorParallel(MegatronRule):
    """## What it does
    Checks MoE models that keep linear biases (the default; `--disable-bias-linear` removes them)
    with an expert-tensor-parallel size other than 1 (it defaults to the tensor-parallel size).

    ## Why is this bad?
    Megatron-Core asserts "Bias in Moe is only supported when ETP==1" when it builds the model
    config, so an MoE run with TP > 1 that forgets `--disable-bias-linear` stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 8 --tensor-model-parallel-size 2
    ```

    ## Fix
    Add `--disable-bias-linear` (as Megatron's MoE examples do), or `--expert-tensor-parallel-size 1`.

    ## References
    * `megatron/core/transformer/transformer_config.py:2612-2615@d98e8a6`: `if self.num_moe_experts is not
      None and self.add_bias_linear: assert self.expert_tensor_parallel_size == 1`, "Bias in Moe is only
      supported when ETP==1"
    * `megatron/training/arguments.py:587-588@d98e8a6`: ETP defaults to the tensor-parallel size
    """

    code = "TL155"
    name = "megatron-moe-bias-with-expert-tp"
    summary = "MoE with linear biases (the default) and an expert-tensor-parallel size other than 1"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("num_experts", "add_bias_linear"):
            return
        experts, etp = a.get("num_experts"), a.int_field("parallel.expert_tensor")
        if not experts or etp is None or etp == 1 or not a.on("add_bias_linear"):
            return
        how = "given" if a.given("expert_tensor_parallel_size") else "defaults to the tensor-parallel size"
        yield Finding(f"MoE ({experts} experts) with linear biases (no --disable-bias-linear) and expert-tensor-parallel "
                      f"size {etp} ({how}): Megatron-Core stops with \"Bias in Moe is only supported when ETP==1\"",
                      at="parallel.expert_tensor", also=((a.at("num_experts"), "MoE enabled here"),),
                      fix="add --disable-bias-linear")


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


RULES: list[type] = [
    MoeArgumentsWithoutExperts,
    MoeBiasWithExpertTensorParallel,
    MoeRouterArguments,
    MoeDispatcherArguments,
]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
