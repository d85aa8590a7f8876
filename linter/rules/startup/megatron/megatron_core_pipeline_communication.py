"""TL634: the parallel-communication options Megatron-Core's ``ModelParallelConfig`` refuses when
it is built (from the launch-check audit): p2p overlap in the pipeline's warm-up and flush without
the interleaved schedule's overlap, expert with tensor parallelism without sequence parallelism
(up to core_v0.14.0), a negative weight-gradient deferral limit (core_v0.8.0, core_v0.9.0)."""

from __future__ import annotations

from typing import Iterator

from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.combinations import CheckTable, _C
from trainlint.rules.startup.megatron.core_releases import references
from trainlint.rules.startup.megatron_args import COMMIT, MegatronArgs
from trainlint.rules.startup.releases import Releases

MPC = "megatron/core/model_parallel_config.py"
_VIRTUAL = ("num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
            "pipeline_model_parallel_layout")
_WARMUP = ("Pipeline parallel communication overlapping in warmup and flush is only compatible with "
           "overlap_p2p_comm but not batch_p2p_comm.")


class PipelineCommunication(CheckTable):
    """## What it does
    Checks parallel-communication options as Megatron-Core's `ModelParallelConfig.__post_init__`
    does: `--overlap-p2p-communication-warmup-flush` needs the p2p overlap, which Megatron-LM turns
    off without an interleaved (virtual) pipeline or with `--no-overlap-p2p-communication` (and
    `batch_p2p_comm` is always its opposite); expert parallelism with tensor parallelism needs
    `--sequence-parallel` (core_v0.4.0 to core_v0.14.0); `--wgrad-deferral-limit` must not be
    negative with `--defer-embedding-wgrad-compute` (core_v0.8.0, core_v0.9.0).

    ## Why is this bad?
    Megatron-Core raises `ValueError` while it builds the model configuration.

    ## Example
    ```bash
    pretrain_gpt.py ... --pipeline-model-parallel-size 4 --overlap-p2p-communication-warmup-flush
    # no --num-layers-per-virtual-pipeline-stage: no interleaving, so no p2p overlap
    ```

    ## Fix
    Use an interleaved pipeline (or drop the warm-up overlap); add `--sequence-parallel`; give a
    deferral limit of 0 or more.
    """

    code = "TL634"
    name = "megatron-core-pipeline-communication"
    summary = "pipeline or expert communication options Megatron-Core's ModelParallelConfig refuses"
    checks = (
        _C(MPC, 390, "core_v0.4.0", ("expert_model_parallel_size", ">", 1), ("tensor_model_parallel_size", ">", 1),
           ("sequence_parallel", "off"), says="When using expert parallelism and tensor parallelism, sequence "
           "parallelism must be used", last="core_v0.14.0"),
        _C(MPC, 326, "core_v0.8.0", ("defer_embedding_wgrad_compute", "on"), ("wgrad_deferral_limit", "<", 0),
           says="Wgrad deferral limit should be greater than or equal to 0 when this optimization is enabled!",
           last="core_v0.9.0"),
    )

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        yield from super().findings(a, ctx)
        if not a.given("overlap_p2p_comm_warmup_flush") or not a.on("overlap_p2p_comm_warmup_flush") \
                or not Releases("megatron", first="core_v0.10.0").includes(a.spec.target):
            return
        if not a.known("overlap_p2p_comm", *_VIRTUAL):
            return
        if a.given("overlap_p2p_comm") and not a.on("overlap_p2p_comm"):
            why = f"with {a.flag('overlap_p2p_comm')}"
        elif not any(a.given(d) for d in _VIRTUAL):
            why = "without an interleaved pipeline (validate_args then turns the p2p overlap off)"
        else:
            return
        yield Finding(f"{a.flag('overlap_p2p_comm_warmup_flush')} {why}: Megatron-Core stops with \"{_WARMUP}\"",
                      at=a.at("overlap_p2p_comm_warmup_flush"),
                      fix="use an interleaved pipeline with p2p overlap, or drop the warm-up overlap")


PipelineCommunication.__doc__ = (PipelineCommunication.__doc__ or "").rstrip() + "\n" + \
    references(PipelineCommunication.checks) + \
    f"    * `{MPC}:572@{COMMIT}` (since core_v0.10.0): \"{_WARMUP}\"\n" + \
    "    * `megatron/training/arguments.py:1012@d98e8a6`: without interleaving `args.overlap_p2p_comm = False`;\n" + \
    "      `megatron/training/argument_utils.py:307@d98e8a6`: `kw_args['batch_p2p_comm'] = not args.overlap_p2p_comm`\n"

RULES: list[type] = [PipelineCommunication]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
