"""TL303: The tensor-parallel group spans nodes, so its per-layer all-reduces cross the network."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.framework import CAP_MEGATRON_MODEL
from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Option, Rule, RuleContext
from trainlint.rules.estimation.scope import usable
from trainlint.core.spec import TrainingSpec


class TensorParallelAcrossNodes(Rule):
    """## What it does
    Warns when the tensor-parallel group is larger than a node, so its all-reduces (two per
    layer in the forward pass, two in the backward) cross the network instead of NVLink.

    ## Why is this bad?
    Per-GPU network bandwidth is an order of magnitude below NVLink; TP across nodes usually
    costs more than it saves.

    ## Example
    TP 16 on nodes of 8 GPUs.

    ## Fix
    Keep TP within a node (TP <= GPUs per node) and use pipeline or data parallelism across
    nodes; the finding quotes the re-estimated throughput.
    """

    requires = frozenset({CAP_MEGATRON_MODEL})
    code = "TL303"
    release_dependent = False
    name = "tp-across-nodes"
    summary = "The tensor-parallel group spans nodes, so its per-layer all-reduces cross the network."
    default_severity = Severity.WARNING
    needs_estimate = True
    options = {"headroom": Option(0.90, "a fix must keep memory below this fraction of the GPU")}

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = usable(spec, ctx)
        if est is None or est.inputs.tp <= est.inputs.gpus_per_node:
            return
        from trainlint.rules.estimation.fixes import final_changes, fits, search_closest, throughput_candidates

        i = est.inputs
        message = (f"tensor parallel {i.tp} spans {i.tp // i.gpus_per_node} nodes of {i.gpus_per_node} GPUs: "
                   f"TP communication takes {est.time.tp_comm / est.step_time:.0%} of the step")
        fix = None
        if ctx.estimator is not None:
            headroom = float(ctx.options["headroom"])


            # Halve TP until the group fits in a node (DP grows to keep the world size).
            found = search_closest(spec, lambda s: (c for c in throughput_candidates(s, ctx.adapters) if c.target == "parallel.tensor"),
                                   ctx.estimator, accept=lambda r: fits(r, headroom) and r.inputs.tp <= r.inputs.gpus_per_node,
                                   score=lambda r: r.inputs.tp)
            if found is not None and found[2]:
                chain, result, _ = found
                _, spelled = final_changes(chain, spec, ctx.adapters)
                fix = (f"with {spelled}: TP communication {est.time.tp_comm / est.step_time:.0%} -> "
                       f"{result.time.tp_comm / result.step_time:.0%} of the step, "
                       f"{est.tokens_per_s:,.0f} -> {result.tokens_per_s:,.0f} tokens/s, "
                       f"{result.worst_stage.total / 2**30:.1f} GiB per GPU")
            elif found is not None:  # a narrower TP does not fit: say so with its numbers
                chain, result, _ = found
                _, spelled = final_changes(chain, spec, ctx.adapters)
                fix = (f"with {spelled} the run would need {result.worst_stage.total / 2**30:.1f} of "
                       f"{result.capacity_bytes / 2**30:.1f} GiB per GPU; add pipeline stages to keep TP in a node")
        yield Finding(message, at="parallel.tensor", fix=fix)
