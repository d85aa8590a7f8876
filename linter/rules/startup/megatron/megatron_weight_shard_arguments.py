"""TL173: --tensor-parallel-num-weight-shards below or not a multiple of TP, or an eval batch it does not divide"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import ARGS, MegatronRule
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.releases import Releases
from trainlint.rules.startup.megatron.check_table import Check, MPC, with_references


@with_references
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
