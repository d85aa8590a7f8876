"""TL638: ``--cuda-graph-modules`` against the model, as Megatron-Core's ``TransformerConfig``
checks the modules a per-layer CUDA graph captures (core_v0.18.0 and later; from the launch-check
audit). The implementation-level checks (CPU offloading, full recomputation, full-iteration graphs)
are TL167's."""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import TCFG
from trainlint.rules.startup.megatron.check_table import Check, CheckTable, Cond, _C
from trainlint.rules.startup.megatron.core_releases import references
from trainlint.rules.startup.megatron.release_table import R, ReleaseCheck, ReleaseCheckTable
from trainlint.rules.startup.megatron.release_table import references as release_references
from trainlint.adapters.megatron.arguments import MegatronArgs

_HAS = "cuda_graph_modules"
_DTOH = ("moe_preprocess cuda graph is not supported when there are DtoH copies and synchronizations in the "
         "preprocess step.")


def _rows(dest: str, first: str, last: str | None, line: dict[str, int]) -> tuple[Check, ...]:
    """The module checks of one release range; ``dest`` is the list they read."""
    per_layer: Cond = ("cuda_graph_impl", "in", ("local", "transformer_engine"))
    moe: Cond = ("num_experts", ">", 1)
    return (
        _C(TCFG, line["both"], first, (dest, "has", "moe"), per_layer, (dest, "has", "moe_router"),
           says=f"{dest} must not contain both moe and moe_router.", last=last),
        _C(TCFG, line["both"], first, (dest, "has", "moe"), ("cuda_graph_impl", "==", "local"),
           (dest, "has", "moe_preprocess"), says=f"{dest} must not contain both moe and moe_router.", last=last),
        _C(TCFG, line["preprocess"], first, (dest, "has", "moe_preprocess"), ("cuda_graph_impl", "==", "transformer_engine"),
           (dest, "lacks", "moe_router"), says="moe_preprocess cuda graph is only supported with moe_router cuda graph.",
           last=last),
        *(_C(TCFG, line["moe_only"], first, (dest, "has", module), per_layer, ("num_experts", "unset"),
             says="moe cuda graph is only supported for MoE.", last=last) for module in ("moe", "moe_router")),
        _C(TCFG, line["moe_only"], first, (dest, "has", "moe_preprocess"), ("cuda_graph_impl", "==", "local"),
           ("num_experts", "unset"), says="moe cuda graph is only supported for MoE.", last=last),
        _C(TCFG, line["mlp"], first, (dest, "has", "mlp"), per_layer, moe, ("moe_layer_freq", "==", 1),
           says="mlp cuda graph is only supported for dense layers, but not found in the model.", last=last),
        _C(TCFG, line["dropless"], first, (dest, "has", "moe"), per_layer, moe, ("moe_expert_capacity_factor", "unset"),
           says="moe cuda graph is only supported with drop-padding MoE.", last=last),
        _C(TCFG, line["dropless"], first, (dest, "has", "moe"), per_layer, moe, ("moe_pad_expert_input_to_capacity", "off"),
           says="moe cuda graph is only supported with drop-padding MoE.", last=last),
        *(_C(TCFG, line["dtoh"], first, (dest, "has", "moe_preprocess"), per_layer, moe,
             ("moe_token_dispatcher_type", "==", "alltoall"), *extra, says=_DTOH, last=last)
          for extra in ((("moe_expert_capacity_factor", "set"), ("moe_pad_expert_input_to_capacity", "off")),
                        (("moe_expert_capacity_factor", "unset"), ("moe_router_padding_for_fp8", "on")))),
        _C(TCFG, line["recompute"], first, (dest, "has", "moe_router"), ("cuda_graph_impl", "==", "transformer_engine"),
           ("recompute_granularity", "==", "selective"), ("recompute_modules", "has", "moe"),
           says="moe recompute is not supported with moe_router CUDA graph with: --cuda-graph-impl transformer_engine.",
           last=last),
        *(_C(TCFG, line["overlap"], first, (dest, "has", module), ("cuda_graph_impl", "==", "transformer_engine"),
             ("overlap_moe_expert_parallel_comm", "on"),
             says="CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm", last=last)
          for module in ("moe", "mlp")),
    )


def _graphed_recompute() -> tuple[Check, ...]:
    """Random numbers in a recomputed module that a CUDA graph captures (core_v0.18.0 on): the whole
    layer is captured with a full-iteration graph or an empty module list (and no deprecated
    --cuda-graph-scope, which validate_args copies into the list); Megatron-LM's dropouts default to
    0.1 and the recomputed modules to core_attn."""
    graphs: Cond = ("cuda_graph_impl", "!=", "none")
    selective: Cond = ("recompute_granularity", "==", "selective")
    whole = ((("cuda_graph_impl", "==", "full_iteration"),),
             (("cuda_graph_modules", "empty"), ("cuda_graph_scope_deprecated", "unset")))
    rows: list[Check] = []
    for captured in whole + (((_HAS, "has", "attn"),),):
        for recomputed in ((("recompute_modules", "has", "core_attn"),), (("recompute_modules", "unset"),)):
            rows.append(_C(TCFG, 2879, "core_v0.18.0", graphs, selective, ("attention_dropout", "!=", 0), *captured,
                           *recomputed, says="attention dropout is not supported with graphed attention recomputation."))
    for module in ("mlp", "moe"):
        for captured in whole + (((_HAS, "has", module),),):
            rows.append(_C(TCFG, 2887, "core_v0.18.0", graphs, selective, ("hidden_dropout", "!=", 0), *captured,
                           ("recompute_modules", "has", module),
                           says="hidden dropout is not supported with graphed MLP/MoE recomputation."))
    for captured in whole + (((_HAS, "has", "moe"),),):
        rows.append(_C(TCFG, 2901, "core_v0.18.0", graphs, selective, ("moe_input_jitter_eps", "set"), *captured,
                       ("recompute_modules", "has", "moe"),
                       says="moe_input_jitter_eps is not supported with graphed moe recomputation."))
    return tuple(rows)


def _graphed_recompute_scopes() -> tuple[ReleaseCheck, ...]:
    """The same random-number checks in core_v0.16.0 and core_v0.17.0, on ``--cuda-graph-scope``: the
    whole layer is captured when the scope list is empty (its default) or names ``full`` (validate_args
    empties it) or ``full_iteration``. Read with the release's own defaults (the scope option is not
    upstream's), hence release rows."""
    graphs: Cond = ("cuda_graph_impl", "!=", "none")
    selective: Cond = ("recompute_granularity", "==", "selective")
    scope = "cuda_graph_scope"
    whole: tuple[tuple[Cond, ...], ...] = (((scope, "empty"),), ((scope, "has", "full"),), ((scope, "has", "full_iteration"),))
    rows: list[ReleaseCheck] = []
    for captured in whole + (((scope, "has", "attn"),),):
        for recomputed in ((("recompute_modules", "has", "core_attn"),), (("recompute_modules", "unset"),)):
            rows.append(R(TCFG, 2035, "core_v0.16.0", "core_v0.17.0", graphs, selective, ("attention_dropout", "!=", 0),
                          *captured, *recomputed,
                          says="attention dropout is not supported with graphed attention recomputation."))
    for module in ("mlp", "moe"):
        for captured in whole + (((scope, "has", module),),):
            rows.append(R(TCFG, 2042, "core_v0.16.0", "core_v0.17.0", graphs, selective, ("hidden_dropout", "!=", 0),
                          *captured, ("recompute_modules", "has", module),
                          says="hidden dropout is not supported with graphed MLP/MoE recomputation."))
    for captured in whole + (((scope, "has", "moe"),),):
        rows.append(R(TCFG, 2050, "core_v0.16.0", "core_v0.17.0", graphs, selective, ("moe_input_jitter_eps", "set"),
                      *captured, ("recompute_modules", "has", "moe"),
                      says="moe_input_jitter_eps is not supported with graphed moe recomputation."))
    return tuple(rows)


class _ScopeRecompute(ReleaseCheckTable):
    """The core_v0.16.0-0.17.0 rows, run by TL638 (not a rule of its own)."""

    checks = _graphed_recompute_scopes()


class CudaGraphModules(CheckTable):
    """## What it does
    Checks the modules a per-layer CUDA graph (`--cuda-graph-impl local` or `transformer_engine`)
    captures: not both `moe` and `moe_router` (the local implementation adds `moe_router` for
    `moe_preprocess`); `moe_preprocess` only with `moe_router` (Transformer Engine graphs); `moe`
    and `moe_router` only in MoE models; `mlp` only when some layers are dense; `moe` only for
    drop-and-pad MoE (`--moe-expert-capacity-factor` with `--moe-pad-expert-input-to-capacity`);
    `moe_preprocess` not with the `alltoall` dispatcher when token dropping or FP8 router padding
    copy to the host; `moe_router` not with a recomputed `moe` under Transformer Engine graphs;
    neither `moe` nor `mlp` with the expert-parallel all-to-all overlap. core_v0.16.0 and
    core_v0.17.0 make the same checks on `--cuda-graph-scope` (with `full` alone, and no
    `full_iteration` scope under Transformer Engine graphs). Under selective recomputation, a
    recomputed module a graph captures (the whole layer with a full-iteration graph or no module
    list) must not draw random numbers: no attention dropout with `core_attn` recomputed (the
    default module; Megatron-LM's dropouts default to 0.1), no hidden dropout with `mlp` / `moe`,
    no MoE input jitter with `moe`.

    The same random-number checks are made on `--cuda-graph-scope` in core_v0.16.0 and core_v0.17.0
    (its empty default, `full` or `full_iteration` capture the whole layer), when the run states or
    locates such a release.

    ## Why is this bad?
    `TransformerConfig.__post_init__` asserts while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --cuda-graph-impl transformer_engine --cuda-graph-modules attn moe_router
    # no --num-experts
    ```

    ## Fix
    Capture the modules the model has (`attn`, `mlp` for dense models).
    """

    code = "TL638"
    name = "megatron-core-cuda-graph-modules"
    summary = "CUDA-graph modules that the model or the other modules make Megatron-Core refuse"
    checks = (
        *_rows(_HAS, "core_v0.18.0", None, {"both": 2817, "preprocess": 2822, "moe_only": 2826, "mlp": 2834,
                                            "dropless": 2842, "dtoh": 2849, "recompute": 2866, "overlap": 3065}),
        # core_v0.16.0 and core_v0.17.0 name the modules in --cuda-graph-scope
        *_rows("cuda_graph_scope", "core_v0.16.0", "core_v0.17.0",
               {"both": 1972, "preprocess": 1977, "moe_only": 1981, "mlp": 1989, "dropless": 1997, "dtoh": 2004,
                "recompute": 2021, "overlap": 2131}),
        *_graphed_recompute(),
        *(_C(TCFG, 1931, "core_v0.16.0", ("cuda_graph_scope", "has", "full"), ("cuda_graph_scope", "has", other),
             says="full scope cannot be used with other scopes.", last="core_v0.17.0")
          for other in ("attn", "mlp", "moe", "moe_router", "moe_preprocess", "full_iteration")),
        _C(TCFG, 1968, "core_v0.16.0", ("cuda_graph_scope", "has", "full_iteration"),
           ("cuda_graph_impl", "==", "transformer_engine"),
           says="To use full iteration cuda graph, please use cuda_graph_impl=local instead of "
                "cuda_graph_impl=transformer_engine.", last="core_v0.17.0"),
    )


    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        yield from super().findings(a, ctx)
        yield from ReleaseCheckTable.findings(_SCOPE_ROWS, a, ctx)


_SCOPE_ROWS = _ScopeRecompute()
CudaGraphModules.__doc__ = (CudaGraphModules.__doc__ or "").rstrip() + "\n" + references(CudaGraphModules.checks) + \
    release_references(_ScopeRecompute.checks).split("## References\n", 1)[1]
