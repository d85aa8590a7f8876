"""TL634: the parallel-communication options Megatron-Core's ``ModelParallelConfig`` refuses when
it is built (from the launch-check audit): p2p overlap in the pipeline's warm-up and flush without
the interleaved schedule's overlap, expert with tensor parallelism without sequence parallelism
(up to core_v0.14.0), a negative weight-gradient deferral limit (core_v0.8.0, core_v0.9.0)."""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.check_table import CheckTable, _C
from trainlint.rules.startup.megatron.core_releases import references
from trainlint.adapters.megatron.arguments import COMMIT, MegatronArgs
from trainlint.rules.startup.releases import Releases

MPC = "megatron/core/model_parallel_config.py"
_VIRTUAL = ("num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
            "pipeline_model_parallel_layout")
_EP_OVERLAP = "overlap_moe_expert_parallel_comm"
_EP_VPP = ("If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when "
           "pipeline_model_parallel_size > 1")
_WARMUP = ("Pipeline parallel communication overlapping in warmup and flush is only compatible with "
           "overlap_p2p_comm but not batch_p2p_comm.")


class PipelineCommunication(CheckTable):
    """## What it does
    Checks parallel-communication options as Megatron-Core's `ModelParallelConfig.__post_init__`
    does: `--overlap-p2p-communication-warmup-flush` needs the p2p overlap, which Megatron-LM turns
    off without an interleaved (virtual) pipeline or with `--no-overlap-p2p-communication` (and
    `batch_p2p_comm` is always its opposite); the all-to-all overlap of expert parallelism
    (`--overlap-moe-expert-parallel-comm`) with a pipeline needs an interleaved pipeline; several
    `--cp-comm-type` values must be one per layer; expert parallelism with tensor parallelism needs
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
        yield from self._warmup_flush(a)
        yield from self._expert_overlap(a)
        yield from self._cp_comm_types(a)

    def _expert_overlap(self, a: MegatronArgs) -> Iterator[Finding]:
        """EP all-to-all overlap with a pipeline needs the interleaved schedule."""
        if not a.given(_EP_OVERLAP) or not a.on(_EP_OVERLAP) \
                or not Releases("megatron", first="core_v0.14.0").includes(a.spec.target):
            return
        pp = a.int_field("parallel.pipeline")
        if pp is None or pp <= 1 or not a.known(*_VIRTUAL) or any(a.given(d) for d in _VIRTUAL):
            return
        yield Finding(f"{a.flag(_EP_OVERLAP)} with pipeline size {pp} and no interleaved pipeline: Megatron-Core stops "
                      f"with \"{_EP_VPP}\"", at=a.at(_EP_OVERLAP), also=(("parallel.pipeline", "pipeline size"),),
                      fix="add --num-virtual-stages-per-pipeline-rank (or --num-layers-per-virtual-pipeline-stage)")

    def _cp_comm_types(self, a: MegatronArgs) -> Iterator[Finding]:
        """Several --cp-comm-type values are one per layer (one value is every layer's)."""
        if not a.given("cp_comm_type") or not Releases("megatron", first="core_v0.10.0").includes(a.spec.target):
            return
        types, layers = a.get("cp_comm_type"), a.int_field("model.num_layers")
        cp = a.get("context_parallel_size") if a.known("context_parallel_size") else None
        if not isinstance(types, (list, tuple)) or len(types) <= 1 or layers is None or len(types) == layers:
            return
        if not isinstance(cp, int) or (cp <= 1 and Releases("megatron", first="core_v0.12.0").includes(a.spec.target)):
            return  # from core_v0.12.0 the list is read only with context parallelism
        yield Finding(f"{a.flag('cp_comm_type')} gives {len(types)} values for {layers} layers: Megatron-Core stops with "
                      f"\"Length of cp_comm_type ({len(types)}) should equal to the total number of transformer layers "
                      f"({layers})!\"", at=a.at("cp_comm_type"), fix="give one type for every layer, or a single type")

    def _warmup_flush(self, a: MegatronArgs) -> Iterator[Finding]:
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
    f"    * `megatron/core/transformer/transformer_config.py:3008-3011@d98e8a6` (since core_v0.14.0): \"{_EP_VPP}\"\n" + \
    "    * `megatron/core/transformer/transformer_config.py:3105-3108@d98e8a6` (since core_v0.12.0, with context\n" + \
    "      parallelism; core_v0.10.0, core_v0.11.0: `megatron/core/transformer/transformer_config.py:851@aa6207e`): \"Length of\n" + \
    "      cp_comm_type (...) should equal to the total number of transformer layers (...)!\"\n" + \
    "    * `megatron/training/arguments.py:1012@d98e8a6`: without interleaving `args.overlap_p2p_comm = False`;\n" + \
    "      `megatron/training/argument_utils.py:307@d98e8a6`: `kw_args['batch_p2p_comm'] = not args.overlap_p2p_comm`\n"
