"""TL167-TL175: Megatron-LM / Megatron-Core checks of option combinations found by the launch-check
audit (docs/launch-checks.md) that no other rule made: CUDA graphs, activation offloading, MoE
dispatch and overlap, model variants (MTP, mHC, Householder, MLA), RL options, checkpoint and data
options, weight shards.

Most are "option A needs (or excludes) option B" and are written as tables of :class:`Check`: the
conditions under which Megatron stops, transcribed from the source line each names, the message it
stops with, and the first release that makes it (from the audit: the oldest pinned release whose
source has the check; ``main``: only upstream after the newest release). A check runs only when
its first option is written in the script, every option it reads is known (written and resolved,
or left to Megatron's default), and the release checked against makes it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.derive import from_checkpoint
from trainlint.rules.startup.megatron.base import ARGS, TCFG, MegatronRule
from trainlint.rules.startup.megatron_args import COMMIT, MegatronArgs
from trainlint.rules.startup.releases import Releases, release_key

MPC = "megatron/core/model_parallel_config.py"

Cond = tuple[Any, ...]
"""``(dest, op)`` or ``(dest, op, operand)``; ops: ``on`` / ``off`` (truthy / falsy), ``set`` / ``unset``
(not None / None), ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in`` / ``not in`` (a tuple),
``not a multiple of`` (another option's value, named by its dest),
``has`` / ``lacks`` (a list option contains / lacks the operand), ``empty`` / ``nonempty``."""

_DERIVED = {
    # validate_args: `if args.cpu_offloading_num_layers > 0: args.cpu_offloading = True`
    "cpu_offloading": ("cpu_offloading_num_layers", lambda n: isinstance(n, int) and n > 0),
}


@dataclass(frozen=True)
class Check:
    path: str
    line: int
    first: str
    """The first release that makes the check (``core_v0.18.0``; ``main``: upstream only)."""
    when: tuple[Cond, ...]
    says: str
    """What Megatron stops with (its message, or the assertion when it has none)."""
    last: str | None = None
    """The last release that makes it (None: every later release and upstream)."""


def release_stated(target: Any) -> bool:
    """The run names a release (stated or located), not an assumed upstream or a checkout of
    unknown version: a check that only older releases make is judged only then."""
    return target is not None and bool(getattr(target, "known", False)) and \
        release_key(getattr(target, "version", None)) is not None


def _value(a: MegatronArgs, dest: str) -> Any:
    if dest in _DERIVED:
        source, derive = _DERIVED[dest]
        return derive(a.get(source))
    return a.get(dest)


def _holds(a: MegatronArgs, cond: Cond) -> bool | None:
    dest, op = cond[0], cond[1]
    value = _value(a, dest)
    operand = cond[2] if len(cond) > 2 else None
    if op == "on":
        return bool(value)
    if op == "off":
        return not value
    if op == "set":
        return value is not None
    if op == "unset":
        return value is None
    if op in ("empty", "nonempty"):
        empty = value is None or (isinstance(value, (list, tuple, str)) and len(value) == 0)
        return empty if op == "empty" else not empty
    if op in ("has", "lacks"):
        items = value if isinstance(value, (list, tuple)) else ([] if value is None else [value])
        return (operand in items) if op == "has" else (operand not in items)
    if op == "==":
        return value == operand
    if op == "!=":
        return value != operand
    if op == "not a multiple of":
        other = a.get(operand) if isinstance(operand, str) else None
        if isinstance(value, bool) or not isinstance(value, int) or isinstance(other, bool) or not isinstance(other, int) \
                or other <= 0:
            return None
        return value % other != 0
    if op in ("in", "not in"):
        inside = value in tuple(operand or ())
        return inside if op == "in" else not inside
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not isinstance(operand, (int, float)):
        return None  # a comparison needs two numbers
    return {"<": value < operand, "<=": value <= operand, ">": value > operand, ">=": value >= operand}[op]


def _shown(a: MegatronArgs, cond: Cond) -> str:
    dest, op = cond[0], cond[1]
    if dest in _DERIVED:
        source = _DERIVED[dest][0]
        return f"{a.flag(source)} {a.get(source)}"
    flag, value = a.flag(dest), _value(a, dest)
    if op in ("off", "unset", "empty") or value is None:
        return f"without {flag}"
    if op == "not a multiple of":
        return f"{flag} {value} (not a multiple of {a.flag(cond[2])} {a.get(cond[2])})"
    if op == "on" and isinstance(value, bool):
        # a store_false flag (--no-check-for-nan-in-loss-and-grad) on by default: it is its absence that counts
        return f"without {flag}" if not a.given(dest) and flag.startswith(("--no-", "--disable-")) else flag
    if isinstance(value, (list, tuple)):
        return f"{flag} {' '.join(map(str, value))}"
    return f"{flag} {value}"


class CheckTable(MegatronRule):
    """A family of :class:`Check` rows (subclasses set :attr:`checks`)."""

    checks: ClassVar[tuple[Check, ...]] = ()

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        target = a.spec.target
        # --use-checkpoint-args: the checkpoint's arguments replace the defaults (and most flags), so a
        # row is judged only on options the script writes
        loaded = from_checkpoint(a.spec)
        said: set[tuple[str, int]] = set()
        for check in self.checks:
            if (check.path, check.line) in said:
                continue  # one finding per source check (several rows spell one `or`)
            head = check.when[0][0]
            dests = [_DERIVED[c[0]][0] if c[0] in _DERIVED else c[0] for c in check.when]
            dests += [c[2] for c in check.when if c[1] == "not a multiple of"]
            if not a.given(dests[0]) or not a.known(*dests) or (loaded and not all(a.given(d) for d in dests)):
                continue
            if not Releases("megatron", first=check.first, last=check.last).includes(target):
                continue
            if check.last is not None and not release_stated(target):
                continue  # a check later releases dropped: only when the run states or locates such a release
            if not all(_holds(a, c) for c in check.when):
                continue
            said.add((check.path, check.line))
            others = tuple((a.at(d), "with this option") for d in dict.fromkeys(dests[1:]) if a.given(d))
            shown = dict.fromkeys(_shown(a, c) for c in check.when)
            yield Finding(f"{', '.join(shown)}: Megatron-LM stops with \"{check.says}\"",
                          at=a.at(dests[0] if head not in _DERIVED else _DERIVED[head][0]), also=others)


def _references(checks: tuple[Check, ...]) -> str:
    lines = ["", "    ## References"]
    for check in checks:
        first = "upstream only" if check.first == "main" else \
            (f"{check.first} to {check.last}" if check.last else f"since {check.first}")
        lines.append(f"    * `{check.path}:{check.line}@{COMMIT}` ({first}): \"{check.says}\"")
    return "\n".join(lines) + "\n"


def _C(path: str, line: int, first: str, *when: Cond, says: str, last: str | None = None) -> Check:
    return Check(path, line, first, tuple(when), says, last)


_NONE_OR_FULL = ("none", "full_iteration")


class CudaGraphArguments(CheckTable):
    """## What it does
    Checks CUDA-graph options against what Megatron-Core captures: graphs with activation CPU
    offloading, full recomputation outside full-iteration graphs, modules listed for a full-iteration
    graph, the NaN check of full-iteration graphs, fine-grained offloading without warm-up steps.

    ## Why is this bad?
    `validate_args` or `TransformerConfig.__post_init__` stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --cuda-graph-impl transformer_engine --cpu-offloading-num-layers 2
    ```

    ## Fix
    Drop one of the two options, or use the combination the message names.
    """

    code = "TL167"
    name = "megatron-cuda-graph-arguments"
    summary = "CUDA-graph options with CPU offloading, full recomputation or other options Megatron-Core refuses"
    checks = (
        _C(TCFG, 2801, "core_v0.18.0", ("cuda_graph_impl", "not in", _NONE_OR_FULL), ("cpu_offloading", "on"),
           says="CUDA graphs not supported with CPU offloading."),
        _C(TCFG, 2856, "core_v0.18.0", ("cuda_graph_impl", "not in", _NONE_OR_FULL), ("recompute_granularity", "==", "full"),
           says="full recompute is only supported with full iteration CUDA graph."),
        _C(ARGS, 1969, "core_v0.18.0", ("cuda_graph_impl", "==", "full_iteration"), ("cuda_graph_modules", "nonempty"),
           says="--cuda-graph-modules must be empty when --cuda-graph-impl=full_iteration"),
        _C(ARGS, 1236, "core_v0.18.0", ("cuda_graph_impl", "==", "full_iteration"), ("check_for_nan_in_loss_and_grad", "on"),
           says="--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration for training."),
        _C(TCFG, 2963, "core_v0.18.0", ("cuda_graph_impl", "!=", "none"), ("fine_grained_activation_offloading", "on"),
           ("cuda_graph_warmup_steps", "<=", 0),
           says="cuda_graph_warmup_steps must be greater than 0 when enabling fine-grained activation offloading"),
        _C(ARGS, 1856, "core_v0.10.0", ("inference_batch_times_seqlen_threshold", ">", -1),
           ("pipeline_model_parallel_size", "<=", 1),
           says="--inference-batch-times-seqlen-threshold requires setting --pipeline-model-parallel-size > 1."),
        _C(ARGS, 1858, "core_v0.15.0", ("inference_batch_times_seqlen_threshold", ">", -1), ("cuda_graph_impl", "!=", "none"),
           says="Pipeline-parallel microbatched inference is incompatible with CUDA graphs"),
    )


class ActivationOffloadingArguments(CheckTable):
    """## What it does
    Checks fine-grained activation offloading and the MoE paged stash: not with CPU offloading, with
    modules to offload, `attn_proj` only with `core_attn`, fractions and sizes in range, the paged
    stash with an expert capacity factor.

    ## Why is this bad?
    `TransformerConfig.__post_init__` (or `validate_args`) stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --fine-grained-activation-offloading --cpu-offloading-num-layers 2
    ```

    ## Fix
    Use one offloading mechanism, name the modules to offload, keep the values in range.
    """

    code = "TL168"
    name = "megatron-activation-offloading-arguments"
    summary = "fine-grained activation offloading or the MoE paged stash with options Megatron-Core refuses"
    checks = (
        _C(TCFG, 2128, "core_v0.16.0", ("fine_grained_activation_offloading", "on"), ("cpu_offloading", "on"),
           says="fine_grained_activation_offloading cannot be enabled with cpu_offloading."),
        _C(TCFG, 2131, "core_v0.16.0", ("fine_grained_activation_offloading", "on"), ("offload_modules", "empty"),
           says="assert self.offload_modules is not None and len(self.offload_modules) > 0"),
        _C(TCFG, 2149, "core_v0.16.0", ("fine_grained_activation_offloading", "on"), ("offload_modules", "has", "attn_proj"),
           ("offload_modules", "lacks", "core_attn"),
           says="attn_proj cannot be set to offload_modules alone without core_attn"),
        _C(TCFG, 2176, "core_v0.19.0", ("fine_grained_activation_offloading", "on"), ("min_offloaded_tensor_size", "<", 0),
           says="min_offloaded_tensor_size must be non-negative."),
        _C(TCFG, 2179, "core_v0.19.0", ("fine_grained_activation_offloading", "on"), ("activation_offload_fraction", "<", 0),
           says="activation_offload_fraction must be in range [0, 1]."),
        _C(TCFG, 2179, "core_v0.19.0", ("fine_grained_activation_offloading", "on"), ("activation_offload_fraction", ">", 1),
           says="activation_offload_fraction must be in range [0, 1]."),
        _C(TCFG, 2182, "core_v0.19.0", ("fine_grained_activation_offloading", "on"),
           ("delta_offload_bytes_across_pp_ranks", "<", 0),
           says="delta_offload_bytes_across_pp_ranks must be non-negative."),
        _C(ARGS, 1936, "core_v0.16.0", ("fine_grained_activation_offloading", "on"),
           ("transformer_impl", "!=", "transformer_engine"),
           says="Fine-grained activation offloading is only supported with transformer_engine implementation"),
        _C(TCFG, 2188, "core_v0.19.0", ("fine_grained_activation_offloading", "on"), ("offload_modules", "has", "fused_group_mlp"),
           ("use_transformer_engine_op_fuser", "off"), says="fused_group_mlp requires use_transformer_engine_op_fuser."),
        _C(TCFG, 2212, "core_v0.18.0", ("moe_paged_stash", "on"), ("cpu_offloading", "on"),
           says="moe_paged_stash cannot be enabled with cpu_offloading."),
        _C(TCFG, 2214, "core_v0.18.0", ("moe_paged_stash", "on"), ("moe_expert_rank_capacity_factor", "unset"),
           says="moe_paged_stash requires moe_expert_rank_capacity_factor to be set"),
    )


_EP_OVERLAP = "overlap_moe_expert_parallel_comm"


class MoeCombinationArguments(CheckTable):
    """## What it does
    Checks MoE options that Megatron-Core accepts only together: grouped tensors and single grouped
    weights with grouped GEMM, the flex dispatcher's backends, MXFP8 dispatch / combine dtypes (the
    `ncclep` flex backend with the Transformer Engine op fuser and grouped GEMM), the expert-rank
    capacity factor, router padding for quantization, MoE recomputation, and the expert-parallel
    communication overlap (EP > 1, the alltoall/flex dispatcher, no full recomputation, bf16/fp16).

    ## Why is this bad?
    `TransformerConfig.__post_init__` raises at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --num-experts 8 --moe-dispatch-fwd-dtype mxfp8 --moe-token-dispatcher-type alltoall
    ```

    ## Fix
    Add the option the message asks for, or drop the one that needs it.
    """

    code = "TL169"
    name = "megatron-moe-combination-arguments"
    summary = "MoE dispatch, grouped-GEMM, capacity and expert-parallel overlap options Megatron-Core refuses together"
    checks = (
        _C(TCFG, 1414, "main", ("moe_use_grouped_tensor", "on"), ("moe_grouped_gemm", "off"),
           says="moe_use_grouped_tensor=True requires moe_grouped_gemm=True."),
        _C(TCFG, 1683, "core_v0.5.0", ("num_experts", "<=", 0), says="num_moe_experts must be non-negative."),
        _C(TCFG, 1709, "core_v0.18.0", ("moe_single_grouped_weight", "on"), ("moe_grouped_gemm", "off"),
           says="moe_single_grouped_weight and moe_single_grouped_bias require moe_grouped_gemm=True."),
        _C(TCFG, 1709, "core_v0.18.0", ("moe_single_grouped_bias", "on"), ("moe_grouped_gemm", "off"),
           says="moe_single_grouped_weight and moe_single_grouped_bias require moe_grouped_gemm=True."),
        _C(TCFG, 1737, "main", ("moe_single_grouped_weight", "on"), ("moe_use_grouped_tensor", "off"),
           says="moe_single_grouped_weight requires moe_use_grouped_tensor=True."),
        _C(TCFG, 1739, "core_v0.18.0", ("moe_single_grouped_bias", "on"), ("add_bias_linear", "off"),
           says="moe_single_grouped_bias requires add_bias_linear=True."),
        _C(TCFG, 1741, "main", ("moe_single_grouped_bias", "on"), ("moe_use_grouped_tensor", "off"),
           says="moe_single_grouped_bias requires moe_use_grouped_tensor=True."),
        _C(TCFG, 1747, "core_v0.16.0", ("moe_enable_deepep", "on"), ("moe_flex_dispatcher_backend", "==", "hybridep"),
           says="Only one backend is supported for flex token dispatcher."),
        _C(TCFG, 1765, "core_v0.19.0", ("moe_flex_dispatcher_backend", "==", "ncclep"),
           ("moe_token_dispatcher_type", "!=", "flex"),
           says="moe_flex_dispatcher_backend='ncclep' requires moe_token_dispatcher_type='flex'."),
        *(_C(TCFG, 1781, "main", (dtype, "!=", "bf16"), (other, "!=", value),
             says="moe_dispatch_fwd_dtype / moe_combine_bwd_dtype require the 'ncclep' flex dispatcher backend.")
          for dtype in ("moe_dispatch_fwd_dtype", "moe_combine_bwd_dtype")
          for other, value in (("moe_token_dispatcher_type", "flex"), ("moe_flex_dispatcher_backend", "ncclep"))),
        *(_C(TCFG, 1786, "main", (dtype, "!=", "bf16"), ("moe_token_dispatcher_type", "==", "flex"),
             ("moe_flex_dispatcher_backend", "==", "ncclep"), (needed, "off"),
             says="moe_dispatch_fwd_dtype / moe_combine_bwd_dtype = 'mxfp8' require BOTH use_transformer_engine_op_fuser "
                  "and moe_grouped_gemm")
          for dtype in ("moe_dispatch_fwd_dtype", "moe_combine_bwd_dtype")
          for needed in ("use_transformer_engine_op_fuser", "moe_grouped_gemm")),
        _C(TCFG, 1815, "core_v0.10.0", ("moe_shared_expert_intermediate_size", "<=", 0),
           says="moe_shared_expert_intermediate_size must be num_shared_experts * ffn_size_of_each_shared_expert"),
        _C(TCFG, 1870, "core_v0.19.0", ("moe_expert_rank_capacity_factor", "set"),
           ("moe_flex_dispatcher_backend", "not in", ("hybridep", "ncclep")),
           says="moe_expert_rank_capacity_factor requires moe_flex_dispatcher_backend 'hybridep' or 'ncclep'"),
        _C(TCFG, 1996, "core_v0.14.0", ("moe_shared_expert_overlap", "on"), ("recompute_granularity", "==", "selective"),
           ("recompute_modules", "has", "shared_experts"), ("moe_shared_expert_intermediate_size", "set"),
           says="shared_experts recompute cannot work with --moe-shared-expert-overlap."),
        _C(TCFG, 1758, "core_v0.16.0", ("moe_pad_expert_input_to_capacity", "on"), ("moe_token_dispatcher_type", "==", "flex"),
           ("moe_flex_dispatcher_backend", "==", "deepep"),
           says="Flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity"),
        _C(TCFG, 1965, "core_v0.12.0", ("recompute_modules", "has", "moe_act"), ("recompute_granularity", "==", "selective"),
           ("moe_grouped_gemm", "off"), says="moe_act in recompute_modules is only supported with moe_grouped_gemm."),
        _C(ARGS, 1904, "core_v0.14.0", ("delay_wgrad_compute", "on"), ("transformer_impl", "!=", "transformer_engine"),
           says="Delaying wgrad compute is only supported with transformer_engine implementation"),
        _C(TCFG, 2020, "core_v0.12.0", ("moe_layer_recompute", "on"), ("recompute_granularity", "==", "full"),
           says="Do not set --moe-layer-recompute with full recompute granularity."),
        _C(TCFG, 2651, "core_v0.16.0", ("moe_router_padding_for_quantization", "on"), ("fp8", "unset"), ("fp4", "unset"),
           says="fp8/fp4 must be specified when moe_router_padding_for_quantization is True."),
        _C(TCFG, 2656, "core_v0.16.0", ("moe_router_padding_for_quantization", "on"),
           ("moe_token_dispatcher_type", "in", ("allgather", "alltoall_seq")),
           says="allgather and alltoall_seq dispatcher does not support moe_router_padding_for_quantization."),
        _C(TCFG, 3013, "core_v0.14.0", (_EP_OVERLAP, "on"), ("expert_model_parallel_size", "<=", 1),
           says="overlap_moe_expert_parallel_comm is only supported with expert model parallelism"),
        _C(TCFG, 3016, "core_v0.14.0", (_EP_OVERLAP, "on"), ("moe_token_dispatcher_type", "not in", ("alltoall", "flex")),
           says="overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher"),
        _C(TCFG, 3021, "core_v0.14.0", (_EP_OVERLAP, "on"), ("recompute_granularity", "==", "full"),
           says="disable full recomputation when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3024, "core_v0.14.0", (_EP_OVERLAP, "on"), ("recompute_method", "set"),
           says="disable recomputation method when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3027, "core_v0.14.0", (_EP_OVERLAP, "on"), ("recompute_num_layers", "set"),
           says="recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3030, "core_v0.17.0", (_EP_OVERLAP, "on"), ("recompute_modules", "has", "moe"),
           says="disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3035, "core_v0.14.0", (_EP_OVERLAP, "on"), ("bf16", "off"), ("fp16", "off"),
           says="overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model"),
        _C(TCFG, 3039, "core_v0.14.0", (_EP_OVERLAP, "on"), ("moe_shared_expert_overlap", "on"),
           says="disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm"),
        _C(TCFG, 3042, "core_v0.19.0", (_EP_OVERLAP, "on"), ("mtp_num_layers", "not in", (None, 0, 1)),
           says="MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm."),
        _C(TCFG, 3075, "core_v0.14.0", ("delay_wgrad_compute", "on"), (_EP_OVERLAP, "off"),
           says="overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute"),
        _C(TCFG, 3085, "core_v0.18.0", ("overlap_dispatch_backward_with_experts_wgrad", "on"), (_EP_OVERLAP, "on"),
           says="overlap_moe_expert_parallel_comm must be disabled when enabling "
                "overlap_dispatch_backward_with_experts_wgrad"),
        _C(TCFG, 3092, "core_v0.18.0", ("overlap_dispatch_backward_with_experts_wgrad", "on"), ("delay_wgrad_compute", "on"),
           says="delay_wgrad_compute and overlap_dispatch_backward_with_experts_wgrad are mutually exclusive"),
        _C(TCFG, 3098, "core_v0.16.0", ("ep_overlap_early_attn_memory_release", "on"), (_EP_OVERLAP, "off"),
           says="overlap_moe_expert_parallel_comm must be enabled when enabling ep_overlap_early_attn_memory_release"),
    )


class ModelVariantArguments(CheckTable):
    """## What it does
    Checks model-variant options against what they need: multi-token prediction (position embedding
    type, `mtp_hsm` with two or more MTP layers), the Householder count of GDP, FP8 output projection
    (FP8 with the MXFP8 recipe), fused residual RMSNorm, MLA with interleaved rotary embeddings or
    `--mla-down-proj-fusion` without MLA, muP, mHC connections, Transformer Engine cross-entropy fusion
    (disabled upstream), hybrid context parallelism, QK clipping ranges, no-RoPE layers with flash
    decoding, DSA with RoPE fusion.

    ## Why is this bad?
    `validate_args` or `TransformerConfig.__post_init__` stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --mtp-num-layers 1 --position-embedding-type yarn
    ```

    ## Fix
    Use the combination the message names.
    """

    code = "TL170"
    name = "megatron-model-variant-arguments"
    summary = "MTP, mHC, MLA, FP8 output projection, TE cross-entropy and other model options Megatron refuses"
    checks = (
        _C(ARGS, 1945, "core_v0.17.0", ("mtp_num_layers", "on"),
           ("position_embedding_type", "not in", ("learned_absolute", "rope", "mrope", "none")),
           says="Multi-Token Prediction (MTP) is not supported with this position embedding type"),
        _C(TCFG, 1417, "main", ("mtp_hsm", "on"), ("mtp_num_layers", "unset"), says="mtp_hsm=True requires mtp_num_layers >= 2."),
        _C(TCFG, 1417, "main", ("mtp_hsm", "on"), ("mtp_num_layers", "<", 2), says="mtp_hsm=True requires mtp_num_layers >= 2."),
        _C(TCFG, 1438, "main", ("gdp_num_householder", "<", 1), says="gdp_num_householder must be positive"),
        _C(TCFG, 1571, "core_v0.18.0", ("fp8_output_proj", "on"), ("fp8", "unset"),
           says="fp8_output_proj must be used together with fp8 mode."),
        _C(TCFG, 1573, "core_v0.18.0", ("fp8_output_proj", "on"), ("fp8", "set"), ("fp8_recipe", "!=", "mxfp8"),
           says="fp8_output_proj requires fp8_recipe='mxfp8'"),
        _C(TCFG, 2455, "core_v0.17.0", ("fused_residual_rmsnorm", "on"), ("normalization", "!=", "RMSNorm"),
           says="fused_residual_rmsnorm is only supported when normalization is RMSNorm."),
        _C(TCFG, 2527, "core_v0.10.0", ("rotary_interleaved", "on"), ("multi_latent_attention", "on"),
           says="rotary_interleaved does not work with multi_latent_attention."),
        _C(ARGS, 1977, "core_v0.17.0", ("mla_down_proj_fusion", "on"), ("multi_latent_attention", "off"),
           says="--mla-down-proj-fusion requires --multi-latent-attention"),
        _C(TCFG, 2534, "core_v0.17.0", ("use_mup", "on"), ("mup_base_hidden_size", "<=", 0),
           says="--mup-base-hidden-size must be positive."),
        _C(TCFG, 2064, "main", ("enable_mhc_connections", "on"), ("mtp_num_layers", "set"),
           says="enable_mhc_connections is not compatible with Multi-Token Prediction (MTP)."),
        _C(TCFG, 2070, "main", ("enable_mhc_connections", "on"), ("recompute_granularity", "==", "full"),
           says="enable_mhc_connections is not yet compatible with full activation recompute."),
        _C(TCFG, 2093, "main", ("enable_mhc_connections", "on"), ("pipeline_model_parallel_size", ">", 1),
           says="enable_mhc_connections does not support pipeline_model_parallel_size > 1 yet."),
        _C(TCFG, 2104, "main", ("enable_mhc_connections", "on"), ("fp32_residual_connection", "on"),
           says="enable_mhc_connections is not compatible with fp32_residual_connection."),
        _C(TCFG, 2115, "main", ("enable_mhc_connections", "on"), ("mhc_sinkhorn_iterations", "<", 1),
           says="mhc_sinkhorn_iterations must be >= 1"),
        _C(TCFG, 2122, "main", ("enable_mhc_connections", "on"), ("mhc_init_gating_factor", "<", 0),
           says="mhc_init_gating_factor must be non-negative"),
        _C(ARGS, 1697, "core_v0.19.0", ("cross_entropy_fusion_impl", "==", "te"), ("cross_entropy_loss_fusion", "on"),
           says="Transformer Engine cross entropy loss fusion is disabled due to stability issues."),
        _C(ARGS, 1445, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("pipeline_model_parallel_size", ">", 1),
           says="Hybrid context parallelism not supported with pipeline parallelism"),
        _C(ARGS, 1446, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("enable_cuda_graph", "on"),
           says="Hybrid context parallelism not supported with CUDA Graph"),
        _C(ARGS, 1447, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("use_megatron_fsdp", "on"),
           says="Hybrid context parallelism not supported with Megatron FSDP"),
        _C(ARGS, 1448, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("dataloader_type", "!=", "single"),
           says="Hybrid context parallelism only supported with single dataloader type"),
        _C(ARGS, 1449, "core_v0.16.0", ("hybrid_context_parallel", "on"), ("calculate_per_token_loss", "off"),
           says="Hybrid context parallelism must be used with --calculate-per-token-loss"),
        _C(ARGS, 1615, "core_v0.16.0", ("qk_clip", "on"), ("qk_clip_alpha", "<=", 0),
           says="--qk-clip-alpha must be between 0.0 and 1.0 when using --qk-clip."),
        _C(ARGS, 1615, "core_v0.16.0", ("qk_clip", "on"), ("qk_clip_alpha", ">=", 1),
           says="--qk-clip-alpha must be between 0.0 and 1.0 when using --qk-clip."),
        _C(ARGS, 1617, "core_v0.16.0", ("qk_clip", "on"), ("qk_clip_threshold", "<=", 0),
           says="--qk-clip-threshold must be greater than 0 when using --qk-clip."),
        _C(TCFG, 3139, "core_v0.13.0", ("no_rope_freq", "on"), ("flash_decode", "on"),
           says="flash_decode cannot be used with no_rope."),
        _C(TCFG, 3163, "core_v0.16.0", ("experimental_attention_variant", "==", "dsa"), ("apply_rope_fusion", "on"),
           says="RoPE fusion is not supported for DSAttention"),
        _C(TCFG, 1582, "core_v0.15.0", ("fp4", "set"), ("fp8", "set"),
           says="fp4 and fp8 cannot be used simultaneously. Please choose one."),
        _C(TCFG, 1970, "core_v0.12.0", ("recompute_modules", "has", "mla_up_proj"), ("recompute_granularity", "==", "selective"),
           ("multi_latent_attention", "off"),
           says="mla_up_proj in recompute_modules is only supported with multi_latent_attention."),
        _C(TCFG, 3349, "core_v0.16.0", ("attention_output_gate", "on"), ("multi_latent_attention", "on"),
           says="Output gate is not supported for MLA yet."),
        _C(TCFG, 3352, "core_v0.14.0", ("cache_mla_latents", "on"), ("multi_latent_attention", "on"), ("apply_rope_fusion", "on"),
           says="Rope Fusion is not compatible with caching latents"),
        *(_C(TCFG, line, "core_v0.16.0", ("transformer_impl", "==", "inference_optimized"), cond,
             says=f"assert {says} (--transformer-impl inference_optimized)")
          for line, cond, says in ((3156, ("normalization", "!=", "RMSNorm"), "self.normalization == 'RMSNorm'"),
                                   (3157, ("layernorm_zero_centered_gamma", "on"), "not self.layernorm_zero_centered_gamma"),
                                   (3158, ("add_bias_linear", "on"), "not self.add_bias_linear"),
                                   (3159, ("add_qkv_bias", "on"), "not self.add_qkv_bias"))),
        *(_C(TCFG, line, "core_v0.17.0", ("transformer_impl", "==", "inference_optimized"), ("num_experts", "set"), cond,
             says=says)
          for line, cond, says in ((1600, ("expert_tensor_parallel_size", ">", 1),
                                    "Inference-optimized MoE layers does not support expert tensor parallelism."),
                                   (1604, ("moe_expert_capacity_factor", "set"),
                                    "Inference-optimized MoE layers only support dropless MoE"),
                                   (1606, ("moe_router_padding_for_quantization", "on"),
                                    "Inference-optimized MoE layers do not support padded routing map for quantization."),
                                   (1611, ("moe_router_dtype", "!=", "fp32"),
                                    "--transformer-impl='inference_optimized' requires --moe-router-dtype=fp32"))),
        _C(TCFG, 2030, "main", ("recompute_modules", "has", "mhc"), ("recompute_granularity", "==", "selective"),
           ("enable_mhc_connections", "off"), says="'mhc' in recompute_modules requires enable_mhc_connections=True."),
        _C(TCFG, 2032, "main", ("recompute_modules", "has", "mhc"), ("recompute_granularity", "==", "selective"),
           ("recompute_modules", "has", "mlp"), says="'mhc' and 'mlp' in recompute_modules cannot be used together."),
        _C(TCFG, 2046, "main", ("recompute_modules", "has", "mhc"), ("recompute_granularity", "==", "selective"),
           ("fine_grained_activation_offloading", "on"),
           says="'mhc' in recompute_modules + fine_grained_activation_offloading is not yet supported."),
        _C(TCFG, 2077, "main", ("enable_mhc_connections", "on"), ("inference_fuse_tp_communication", "on"),
           says="enable_mhc_connections is not compatible with inference_fuse_tp_communication."),
        _C(TCFG, 3180, "core_v0.16.0", ("inference_fuse_tp_communication", "on"),
           ("transformer_impl", "!=", "inference_optimized"),
           says="inference_fuse_tp_communication is only supported for inference_optimized transformer impl"),
        _C(TCFG, 3184, "core_v0.17.0", ("inference_fuse_tp_communication", "on"), ("num_experts", "set"),
           says="--inference-fuse-tp-communication is not supported for MoE models."),
        _C(TCFG, 3223, "core_v0.19.0", ("batch_invariant_mode", "on"), ("flash_attention_version", "not in", (3, 4)),
           says="Batch invariant mode requires --flash-attention-version 3 or 4"),
        _C(TCFG, 3230, "core_v0.19.0", ("batch_invariant_mode", "on"), ("context_parallel_size", "!=", 1),
           says="Batch invariant mode does not support context parallelism"),
        _C(TCFG, 3233, "core_v0.19.0", ("batch_invariant_mode", "on"), ("attention_dropout", "!=", 0),
           says="Batch invariant mode does not support attention dropout"),
        _C(ARGS, 1638, "core_v0.11.0", ("position_embedding_type", "==", "relative"),
           ("transformer_impl", "!=", "transformer_engine"),
           says="Local transformer implementation currently does not support attention bias-based position embeddings."),
        _C(ARGS, 746, "core_v0.17.0", ("hybrid_override_pattern", "set"), ("hybrid_layer_pattern", "set"),
           says="--hybrid-override-pattern and --hybrid-layer-pattern cannot both be specified."),
        *(_C(ARGS, line, "core_v0.17.0", ("hybrid_layer_pattern", "set"), cond,
             says=f"{flag} should not be used with --hybrid-layer-pattern.")
          for line, cond, flag in ((814, ("num_layers_per_virtual_pipeline_stage", "set"), "--num-layers-per-virtual-pipeline-stage"),
                                   (820, ("num_virtual_stages_per_pipeline_rank", "set"), "--num-virtual-stages-per-pipeline-rank"),
                                   (825, ("pipeline_model_parallel_layout", "set"), "--pipeline-model-parallel-layout"),
                                   (829, ("account_for_embedding_in_pipeline_split", "on"),
                                    "--account-for-embedding-in-pipeline-split"),
                                   (834, ("account_for_loss_in_pipeline_split", "on"), "--account-for-loss-in-pipeline-split"))),
    )


class RlArguments(CheckTable):
    """## What it does
    Checks the reinforcement-learning options of `--perform-rl-step`: CUDA-graph persistence needs
    CUDA graphs, KV-cache offloading needs persisted graphs and no unified memory, in-flight requests
    and the generation lag exclude each other and need partial rollouts when above one batch,
    submission / consumption granularities, sequence packing with micro batch 1.

    ## Why is this bad?
    `validate_args` stops at start-up.

    ## Example
    ```bash
    train_rl.py ... --perform-rl-step --rl-kv-cache-management-mode offload
    ```

    ## Fix
    Use the combination the message names.
    """

    code = "TL171"
    name = "megatron-rl-arguments"
    summary = "reinforcement-learning options (--perform-rl-step) Megatron-LM refuses together"
    checks = (
        _C(ARGS, 481, "core_v0.17.0", ("rl_persist_cuda_graphs", "on"), ("perform_rl_step", "on"),
           ("cuda_graph_impl", "==", "none"), says="--rl-persist-cuda-graphs is set but no CUDA graphs are being built."),
        _C(ARGS, 485, "core_v0.17.0", ("rl_training_cuda_graphs", "on"), ("perform_rl_step", "on"),
           ("cuda_graph_impl", "==", "none"), says="--rl-training-cuda-graphs is set but no CUDA graphs are being built."),
        _C(ARGS, 501, "core_v0.17.0", ("rl_kv_cache_management_mode", "==", "offload"), ("perform_rl_step", "on"),
           ("rl_persist_cuda_graphs", "off"),
           says="--rl-kv-cache-management-mode=offload requires --rl-persist-cuda-graphs"),
        _C(ARGS, 506, "core_v0.17.0", ("rl_kv_cache_management_mode", "==", "offload"), ("perform_rl_step", "on"),
           ("inference_dynamic_batching_unified_memory_level", ">", 0),
           says="--rl-kv-cache-management-mode=offload is incompatible with UVM"),
        _C(ARGS, 522, "core_v0.17.0", ("rl_offload_inference_model_weights_when_idle", "on"), ("perform_rl_step", "on"),
           ("rl_inference_model_unified_memory_level", "!=", 1),
           says="To use --rl-offload-inference-model-weights-when-idle without UVM (--rl-inference-model-unified-memory-"
                "level=1), ..."),
        _C(ARGS, 494, "core_v0.17.0", ("rl_persist_cuda_graphs", "on"), ("perform_rl_step", "on"),
           ("rl_kv_cache_management_mode", "!=", "persist"), ("inference_dynamic_batching_unified_memory_level", "<=", 0),
           says="Persisting CUDA graphs requires static KV cache memory."),
        _C(ARGS, 530, "main", ("rl_max_inflight_requests", "set"), ("perform_rl_step", "on"), ("rl_generation_lag", "set"),
           says="--rl-generation-lag and --rl-max-inflight-requests are mutually exclusive."),
        _C(ARGS, 532, "main", ("rl_max_inflight_requests", "<", 1), ("perform_rl_step", "on"),
           says="--rl-max-inflight-requests must be >= 1."),
        _C(ARGS, 546, "main", ("rl_generation_lag", "<", -1), ("perform_rl_step", "on"),
           says="--rl-generation-lag must be >= -1."),
        _C(ARGS, 549, "main", ("rl_generation_lag", ">", 0), ("perform_rl_step", "on"), ("rl_partial_rollouts", "off"),
           says="--rl-generation-lag requires --rl-partial-rollouts."),
        _C(ARGS, 551, "main", ("rl_submission_granularity", "!=", "B"), ("perform_rl_step", "on"),
           ("rl_partial_rollouts", "off"), says="--rl-submission-granularity requires --rl-partial-rollouts."),
        _C(ARGS, 554, "core_v0.19.0", ("rl_consumption_granularity", "==", "R"), ("perform_rl_step", "on"),
           says="--rl-consumption-granularity R is not currently supported."),
        _C(ARGS, 556, "core_v0.19.0", ("rl_consumption_granularity", "==", "G"), ("perform_rl_step", "on"),
           ("rl_submission_granularity", "==", "B"),
           says="--rl-submission-granularity B with --rl-consumption-granularity G is not supported."),
        _C(ARGS, 564, "core_v0.16.0", ("rl_use_sequence_packing", "on"), ("perform_rl_step", "on"),
           ("micro_batch_size", "!=", 1), says="micro_batch_size must be 1 when using sequence packing."),
    )


class CheckpointDataArguments(CheckTable):
    """## What it does
    Checks checkpoint, data and schedule options that need each other: `--use-checkpoint-args` needs a
    checkpoint to load (and no local non-persistent checkpoints), checkpoint conversion needs `--load`
    and a save path, local checkpoints need their directory, replication needs a jump and local
    checkpoints, logits saving needs its top-k and async save, upcycling needs `--save`, overriding the
    checkpoint iteration excludes `--finetune`, FIM data its rates and no mock data, the weight-decay
    schedule its start/end values, FSDP manual registration Megatron-FSDP with `--nccl-ub`, a positive
    number of dataset builder threads.

    ## Why is this bad?
    `validate_args` (or `load_args_from_checkpoint`) stops at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --replication --non-persistent-ckpt-type global
    ```

    ## Fix
    Give the option the message asks for, or drop the one that needs it.
    """

    code = "TL172"
    name = "megatron-checkpoint-data-arguments"
    summary = "checkpoint, data and weight-decay options Megatron-LM accepts only together"
    checks = (
        _C(ARGS, 94, "core_v0.18.0", ("use_checkpoint_args", "on"), ("load", "unset"), ("pretrained_checkpoint", "unset"),
           says="--use-checkpoint-args requires --load or --pretrained-checkpoint argument"),
        _C(ARGS, 95, "core_v0.18.0", ("use_checkpoint_args", "on"), ("non_persistent_ckpt_type", "==", "local"),
           says="--use-checkpoint-args is not supported with --non_persistent_ckpt_type=local."),
        _C(ARGS, 393, "core_v0.18.0", ("ckpt_convert_format", "set"), ("ckpt_convert_save", "unset"),
           says="assert args.ckpt_convert_save is not None"),
        _C(ARGS, 394, "core_v0.18.0", ("ckpt_convert_format", "set"), ("load", "unset"), says="assert args.load is not None"),
        _C(ARGS, 1895, "core_v0.11.0", ("non_persistent_ckpt_type", "==", "local"), ("non_persistent_local_ckpt_dir", "unset"),
           says="Tried to use local checkpointing without specifying --local-ckpt-dir!"),
        _C(ARGS, 1897, "core_v0.11.0", ("replication", "on"), ("replication_jump", "unset"),
           says="--replication requires the value of --replication-jump!"),
        _C(ARGS, 1898, "core_v0.11.0", ("replication", "on"), ("non_persistent_ckpt_type", "!=", "local"),
           says="--replication requires args.non_persistent_ckpt_type == 'local'"),
        _C(ARGS, 1826, "core_v0.19.0", ("logits_save_dir", "set"), ("logits_save_top_k", "unset"),
           says="--logits-save-top-k is required when --logits-save-dir is set."),
        _C(ARGS, 1827, "core_v0.19.0", ("logits_save_dir", "set"), ("async_save", "off"),
           says="--logits-save-dir requires --async-save"),
        _C(ARGS, 1852, "core_v0.19.0", ("override_ckpt_iteration", "set"), ("finetune", "on"),
           says="Cannot override checkpoint iteration together with finetune"),
        _C(ARGS, 1864, "core_v0.9.0", ("moe_use_upcycling", "on"), ("save", "unset"),
           says="When using upcycling, the --save option must be specified."),
        _C(ARGS, 1692, "core_v0.16.0", ("fim_data", "on"), ("mock_data", "on"),
           says="Mock dataset is not supported with FIM dataset."),
        _C(ARGS, 1693, "core_v0.16.0", ("fim_data", "on"), ("fim_rate", "off"), says="--fim-rate should be specified."),
        _C(ARGS, 1694, "core_v0.16.0", ("fim_data", "on"), ("fim_spm_rate", "off"), says="--fim-spm-rate should be specified."),
        _C(ARGS, 1394, "core_v0.4.0", ("start_weight_decay", "set"), ("weight_decay_incr_style", "==", "constant"),
           says="assert args.start_weight_decay is None (constant weight decay)"),
        _C(ARGS, 1395, "core_v0.4.0", ("end_weight_decay", "set"), ("weight_decay_incr_style", "==", "constant"),
           says="assert args.end_weight_decay is None (constant weight decay)"),
        _C(ARGS, 1399, "core_v0.4.0", ("weight_decay_incr_style", "!=", "constant"), ("start_weight_decay", "unset"),
           says="assert args.start_weight_decay is not None (weight decay increment style other than constant)"),
        _C(ARGS, 1400, "core_v0.4.0", ("weight_decay_incr_style", "!=", "constant"), ("end_weight_decay", "unset"),
           says="assert args.end_weight_decay is not None (weight decay increment style other than constant)"),
        _C(ARGS, 1258, "core_v0.7.0", ("num_dataset_builder_threads", "<=", 0),
           says="assert args.num_dataset_builder_threads > 0"),
        _C(ARGS, 1184, "core_v0.18.0", ("init_model_with_meta_device", "on"), ("use_megatron_fsdp", "on"),
           ("data_parallel_sharding_strategy", "==", "no_shard"),
           says="Meta device initialization (init_model_with_meta_device=True) is not supported with no_shard"),
        _C(ARGS, 1368, "core_v0.18.0", ("save_params_interval", "set"), ("save", "set"), ("overlap_param_gather", "on"),
           says="assert not args.overlap_param_gather (with --save-params-interval)"),
        _C(MPC, 546, "core_v0.6.0", ("defer_embedding_wgrad_compute", "on"), ("pipeline_model_parallel_size", "==", 1),
           says="Cannot defer embedding wgrad compute when pipeline model parallel is not used"),
        _C(MPC, 551, "core_v0.6.0", ("defer_embedding_wgrad_compute", "on"), ("gradient_accumulation_fusion", "off"),
           says="Cannot defer embedding wgrad compute when gradient accumulation fusion is not used"),
        _C(MPC, 556, "core_v0.10.0", ("defer_embedding_wgrad_compute", "on"), ("wgrad_deferral_limit", "<", 0),
           says="Wgrad deferral limit should be greater than or equal to 0 when it is enabled!"),
        _C(ARGS, 1370, "core_v0.16.0", ("log_memory_interval", "not a multiple of", "log_interval"),
           says="assert args.log_memory_interval % args.log_interval == 0"),
        _C(ARGS, 1190, "core_v0.18.0", ("fsdp_manual_registration", "on"), ("use_megatron_fsdp", "off"),
           says="FSDP manual registration is only supported with Megatron FSDP"),
        _C(ARGS, 1191, "core_v0.18.0", ("fsdp_manual_registration", "on"), ("nccl_ub", "off"),
           says="FSDP manual registration is only supported with --nccl-ub argument"),
    )


class WeightShardArguments(MegatronRule):
    """## What it does
    Checks `--tensor-parallel-num-weight-shards` (generalised tensor parallelism, GTP): at least the
    tensor-parallel size and a multiple of it; the weight-shard factor (shards / TP) counts toward the
    model-parallel size, so it must divide what TP x PP x CP leave of the world, and the evaluation
    global batch (default: the training one) must be a multiple of eval micro batch x DP x the factor
    (upstream after core_v0.19.0). The world size against TP x PP x CP x factor is `validate_args`'
    total_model_size check (`megatron/training/arguments.py:432`).

    ## Why is this bad?
    `resolve_tensor_parallel_num_weight_shards` raises a ValueError, and `validate_args` asserts the
    evaluation batch divides, at start-up.

    ## Example
    ```bash
    pretrain_gpt.py ... --tensor-model-parallel-size 2 --tensor-parallel-num-weight-shards 4 \\
        --micro-batch-size 1 --eval-global-batch-size 6   # 8 GPUs: DP 2 x factor 2 = 4 does not divide 6
    ```

    ## Fix
    Use a multiple of the TP size for the shards and a global (or evaluation) batch that divides.
    """

    code = "TL173"
    name = "megatron-weight-shard-arguments"
    summary = "--tensor-parallel-num-weight-shards below or not a multiple of TP, or an eval batch it does not divide"
    checks = (
        Check(MPC, 32, "core_v0.19.0", (), "tensor_parallel_num_weight_shards must be >= tensor_model_parallel_size"),
        Check(MPC, 37, "core_v0.19.0", (), "tensor_parallel_num_weight_shards must be divisible by "
                                           "tensor_model_parallel_size"),
        Check(ARGS, 715, "main", (), "eval_global_batch_size must be divisible by eval_micro_batch_size * "
                                     "data_parallel_size * gtp_weight_remat_size"),
    )
    releases = Releases("megatron", first="core_v0.19.0")

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dest = "tensor_parallel_num_weight_shards"
        if not a.given(dest) or not self.releases.includes(a.spec.target):
            return
        shards, tp = a.get(dest), a.int_field("parallel.tensor")
        if not isinstance(shards, int) or isinstance(shards, bool) or tp is None or tp <= 0:
            return
        if shards < tp or shards % tp:
            says = "must be >=" if shards < tp else "must be divisible by"
            yield Finding(f"{a.flag(dest)} {shards} with tensor-model-parallel size {tp}: Megatron-Core stops with "
                          f"\"tensor_parallel_num_weight_shards ({shards}) {says} tensor_model_parallel_size ({tp}).\"",
                          at=a.at(dest), also=(("parallel.tensor", "tensor-parallel size"),))
            return
        factor = shards // tp
        if factor == 1 or not a.known("eval_global_batch_size", "eval_micro_batch_size"):
            return
        if not Releases("megatron", first="main").includes(a.spec.target):
            return  # the factor counts in the eval batch check only upstream after core_v0.19.0
        # trainlint's DP is world / (TP x PP x CP); Megatron's data_parallel_size also divides by the
        # weight-shard factor (gtp_weight_remat_size counts toward total_model_size), so their product
        # with the factor is trainlint's DP again
        replicas = a.int_field("parallel.data")
        if replicas is None or replicas <= 0:
            return
        if replicas % factor:
            yield Finding(f"{a.flag(dest)} {shards} with tensor-model-parallel size {tp} makes a weight-shard factor of "
                          f"{factor}, which does not divide the {replicas} GPUs left after TP x PP x CP: Megatron-LM stops "
                          "with \"world size is not divisible by total_model_size\"", at=a.at(dest),
                          also=(("parallel.data", "data-parallel size without the weight-shard factor"),))
            return
        dp = replicas // factor
        g = a.get("eval_global_batch_size") or a.spec.value("batch.global_batch")
        m = a.get("eval_micro_batch_size") or a.spec.value("batch.micro_batch")
        if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (g, m)):
            return
        if g % (m * dp * factor):
            at = a.at_written("eval_global_batch_size", "global_batch_size", "eval_micro_batch_size")
            yield Finding(f"eval global batch {g} is not divisible by eval micro batch {m} x DP {dp} x weight-shard factor "
                          f"{factor} ({shards} shards / TP {tp}) = {m * dp * factor}: Megatron-LM stops with "
                          f"\"eval_global_batch_size ({g}) must be divisible by eval_micro_batch_size ({m}) * "
                          f"data_parallel_size ({dp}) * gtp_weight_remat_size ({factor})\"", at=at,
                          also=((a.at(dest), "weight shards"), ("parallel.data", "data-parallel size")))


SCHED = "megatron/core/pipeline_parallel/schedules.py"


class InterleavedMicrobatches(MegatronRule):
    """## What it does
    Checks the number of micro-batches per step (M = global batch / (micro batch x DP)) of an
    interleaved (virtual) pipeline against the pipeline size PP and the micro-batch group size N
    (`--microbatch-group-size-per-virtual-pipeline-stage`, default PP): from core_v0.10.0, N must lie in
    [PP, M] and the remainder of M / N must be 0 or at least PP; up to core_v0.9.0, M must be a
    multiple of PP.

    ## Why is this bad?
    The interleaved schedule raises a ValueError / RuntimeError in the first training step, after the
    model is built and the job has waited in the queue.

    ## Example
    ```bash
    pretrain_gpt.py ... --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2 \\
        --micro-batch-size 1 --global-batch-size 4     # 8 GPUs, DP 2: M = 2 < PP = 4
    ```

    ## Fix
    Raise the global batch (or lower the micro batch) so that M >= PP and M is a multiple of PP.

    Up to core_v0.9.0 the schedule raised "number of microbatches (M) is not divisible by
    pipeline-model-parallel-size (PP) when using interleaved schedule" (`schedules.py:631@1afee59`).
    """

    code = "TL174"
    name = "megatron-interleaved-microbatches"
    summary = "an interleaved pipeline with fewer micro-batches than its size, or a remainder it refuses"
    checks = (
        Check(SCHED, 1168, "core_v0.10.0", (), "The number of contiguous micro-batches in a virtual pipeline stage "
                                               "should range in [PP, M]"),
        Check(SCHED, 1180, "core_v0.10.0", (), "The remainder of M (the total micro-batches) divided by N ... should be 0, "
                                               "or larger than or equal to the pipeline-parallel size"),
    )

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        known, vpp = a.vpp()
        pp = a.int_field("parallel.pipeline")
        if not known or vpp is None or pp is None or pp <= 1 or a.written("tensor_parallel_num_weight_shards") \
                or a.given("step_batch_size_schedule") or a.given("rampup_batch_size") or a.not_training():
            return
        if not a.known("microbatch_group_size_per_vp_stage"):
            return
        g, m, dp = (a.int_field(f) for f in ("batch.global_batch", "batch.micro_batch", "parallel.data"))
        if g is None or m is None or dp is None or min(g, m, dp) <= 0 or g % (m * dp):
            return  # TL100's
        count = g // (m * dp)
        at = a.at_written("global_batch_size", "micro_batch_size", "pipeline_model_parallel_size")
        also = (("parallel.pipeline", "pipeline size"), ("batch.global_batch", "global batch"))
        if not Releases("megatron", first="core_v0.10.0").includes(a.spec.target):
            if count % pp:
                yield Finding(f"{count} micro-batches per step (global {g} / (micro {m} x DP {dp})) with an interleaved "
                              f"pipeline of size {pp}: Megatron-LM stops with \"number of microbatches ({count}) is not "
                              f"divisible by pipeline-model-parallel-size ({pp}) when using interleaved schedule\"",
                              at=at, also=also)
            return
        group = a.get("microbatch_group_size_per_vp_stage") or pp
        if not isinstance(group, int):
            return
        if group > count or group < pp:
            yield Finding(f"{count} micro-batches per step (global {g} / (micro {m} x DP {dp})) with an interleaved "
                          f"pipeline of size {pp} and micro-batch groups of {group}: Megatron-LM stops in the first step "
                          f"with \"The number of contiguous micro-batches in a virtual pipeline stage should range in "
                          f"[PP={pp} , M={count}]\"", at=at, also=also,
                          fix=f"a global batch of at least {pp * m * dp} (M >= PP)")
            return
        rest = count % group
        if 0 < rest < pp:
            yield Finding(f"{count} micro-batches per step in groups of {group} leave {rest}, fewer than the pipeline size "
                          f"{pp}: Megatron-LM stops in the first step with \"The remainder of M (the total micro-batches) "
                          f"divided by N (number of contiguous micro-batches in a virtual pipeline stage) should be 0, or "
                          f"larger than or equal to the pipeline-parallel size, but it is {rest}\"", at=at, also=also)


CALC_ = "megatron/core/num_microbatches_calculator.py"
_SUFFIX = {"K": 1_000, "M": 1_000_000, "B": 1_000_000_000, "T": 1_000_000_000_000}


def _schedule_number(text: str) -> int | None:
    """StepBatchsizeNumMicroBatchesCalculator._parse_numeric_value: a number with an optional K/M/B/T."""
    text = text.strip().upper()
    scale = _SUFFIX.get(text[-1:], 1)
    if scale != 1:
        text = text[:-1]
    try:
        value = float(text) * scale
    except ValueError:
        return None
    return int(value) if value == value and abs(value) != float("inf") else None


class BatchSizeSchedule(MegatronRule):
    """## What it does
    Parses `--step-batch-size-schedule` as Megatron-Core does ("THRESHOLD:BATCH_SIZE" entries separated
    by spaces or commas, K/M/B/T suffixes, sorted by threshold) and checks that it is not empty, that the
    first threshold is 0, that thresholds are strictly increasing, that every batch size is positive, and
    that the first batch size is a multiple of micro batch x DP (checked when training starts).

    ## Why is this bad?
    The micro-batch calculator raises or asserts when it is built, or at the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --step-batch-size-schedule "1M:256 2B:512"     # no entry at threshold 0
    ```

    ## Fix
    Start the schedule at 0, give distinct thresholds and positive batch sizes that divide.
    """

    code = "TL175"
    name = "megatron-batch-size-schedule"
    summary = "--step-batch-size-schedule malformed, not starting at 0, not increasing, or with a batch that does not divide"
    checks = (
        Check(CALC_, 517, "core_v0.18.0", (), 'Invalid schedule entry. Expected format: "THRESHOLD:BATCH_SIZE"'),
        Check(CALC_, 538, "core_v0.18.0", (), "schedule must have at least one entry"),
        Check(CALC_, 539, "core_v0.18.0", (), "first schedule entry must have threshold 0"),
        Check(CALC_, 545, "core_v0.18.0", (), "schedule thresholds must be strictly increasing"),
        Check(CALC_, 556, "core_v0.18.0", (), "batch size must be positive"),
        Check(CALC_, 581, "core_v0.18.0", (), "current global batch size is not divisible by micro_batch_size * "
                                              "data_parallel_size"),
    )
    releases = Releases("megatron", first="core_v0.18.0")

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dest = "step_batch_size_schedule"
        text = a.get(dest) if a.given(dest) else None
        if not isinstance(text, str) or not self.releases.includes(a.spec.target):
            return
        at, flag = a.at(dest), a.flag(dest)
        entries = text.strip().replace(",", " ").split()
        schedule: list[tuple[int, int]] = []
        for entry in entries:
            if ":" not in entry:
                yield Finding(f"{flag} entry {entry!r}: Megatron-Core stops with \"Invalid schedule entry \\\"{entry}\\\". "
                              "Expected format: \\\"THRESHOLD:BATCH_SIZE\\\"\"", at=at)
                return
            threshold, size = (_schedule_number(part) for part in entry.split(":", 1))
            if threshold is None or size is None:
                return  # int(float(...)) raises a ValueError of its own; not quoted here
            schedule.append((threshold, size))
        schedule.sort(key=lambda pair: pair[0])
        if not schedule:
            yield Finding(f"{flag} is empty: Megatron-Core stops with \"schedule must have at least one entry\"", at=at)
            return
        if schedule[0][0] != 0:
            yield Finding(f"{flag} starts at threshold {schedule[0][0]:,}: Megatron-Core stops with \"first schedule entry "
                          f"must have threshold 0, got {schedule[0][0]}\"", at=at, fix="add an entry 0:<batch size>")
            return
        for before, after in itertools.pairwise(schedule):
            if after[0] <= before[0]:
                yield Finding(f"{flag} gives threshold {after[0]:,} twice: Megatron-Core stops with \"schedule thresholds "
                              f"must be strictly increasing, got {before[0]} before {after[0]}\"", at=at)
                return
        bad = [size for _threshold, size in schedule if size <= 0]
        if bad:
            yield Finding(f"{flag} has batch size {bad[0]}: Megatron-Core stops with \"batch size must be positive, got "
                          f"{bad[0]}\"", at=at)
            return
        micro, dp = a.int_field("batch.micro_batch"), a.int_field("parallel.data")
        first = schedule[0][1]
        if micro and dp and micro > 0 and dp > 0 and not a.written("tensor_parallel_num_weight_shards") \
                and first % (micro * dp):
            yield Finding(f"{flag} starts with a global batch of {first}, not a multiple of micro batch {micro} x DP {dp} = "
                          f"{micro * dp}: Megatron-Core stops when training starts with \"current global batch size "
                          f"({first}) is not divisible by micro_batch_size ({micro}) * data_parallel_size ({dp})\"", at=at,
                          also=(("parallel.data", "data-parallel size"), ("batch.micro_batch", "micro batch")))


_FAMILY = (InterleavedMicrobatches, BatchSizeSchedule, CudaGraphArguments, ActivationOffloadingArguments, MoeCombinationArguments,
           ModelVariantArguments, RlArguments, CheckpointDataArguments, WeightShardArguments)
for _rule in _FAMILY:
    _rule.__doc__ = (_rule.__doc__ or "").rstrip() + "\n" + _references(_rule.checks)


RULES: list[type] = list(_FAMILY)


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
