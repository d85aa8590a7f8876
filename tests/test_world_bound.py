"""TL201 on a config that does not state its world size: memory per GPU depends on the
data-parallel size only through what is sharded over DP (ZeRO, the distributed optimizer) and the
batch members derived from DP, so the least memory over every data-parallel size the config allows
is judged; nothing is said that some world size would make false."""

from __future__ import annotations

from trainlint.adapters.base import LoadContext
from trainlint.adapters.neox.detect import NeoXAdapter
from trainlint.estimator import build_context, estimate
from trainlint.rules import RuleContext
from trainlint.rules.estimation.estimate_unavailable import EstimateUnavailable
from trainlint.rules.estimation.oom_risk import OomRisk
from trainlint.rules.estimation.scope import usable_estimate
from trainlint.rules.estimation.world_bound import memory_verdict
from trainlint.files.sources import SourceText

# GPT-NeoX without a hostfile or num_gpus: one node of as many GPUs as the machine has
# (neox_arguments/arguments.py, calculate_derived), which nothing in the file says.
NEOX_13B = ("num_layers: 40\nhidden_size: 5120\nnum_attention_heads: 40\nseq_length: 2048\n"
            "max_position_embeddings: 2048\ntrain_micro_batch_size_per_gpu: 1\nfp16: {enabled: true}\n"
            "checkpoint_activations: true\n")


def _neox(text: str):
    (spec,) = NeoXAdapter().load(SourceText("/x/run.yml", text), LoadContext()).specs
    return spec


def _check(spec):
    def estimator(s):
        return estimate(s, build_context(s, gpu="h100-sxm"))

    est = estimator(spec)
    ctx = RuleContext(options={"headroom": 0.90}, estimate=est, estimator=estimator)
    return est, list(OomRisk().check(spec, ctx)), list(EstimateUnavailable().check(spec, RuleContext(estimate=est, estimator=estimator)))


def test_without_sharding_memory_is_the_same_at_every_dp_and_an_oom_is_reported():
    # ZeRO 0 (GPT-NeoX's default): every rank holds all fp16 params, grads and the fp32 optimizer.
    spec = _neox(NEOX_13B)
    est, (finding,), (tl900,) = _check(spec)
    assert usable_estimate(spec, est) is None  # TL301 and the DP rules still do not judge
    assert "exceeds" in finding.message and "world size not stated: the same within 1%" in finding.message
    assert "speed and communication not judged" in tl900.message and "memory per GPU is judged" in tl900.message


def test_zero1_that_fits_at_a_large_dp_is_not_called_an_oom():
    # ZeRO 1 shards the 12 bytes/param of fp32 master + Adam states over DP: 13B needs
    # ~290 GiB at DP 1 but under 80 GiB at a large DP, so no world-independent OOM exists.
    spec = _neox(NEOX_13B.replace("checkpoint_activations: true\n", "checkpoint_activations: true\n"
                                  "zero_optimization: {stage: 1}\nmodel_parallel_size: 2\n"))
    est, findings, _ = _check(spec)
    verdict = memory_verdict(spec, est, lambda s: estimate(s, build_context(s, gpu="h100-sxm")))
    totals = sorted(s.worst_stage.total for s in verdict.samples)
    assert totals[-1] > 80 * 2**30 > totals[0]  # the memory depends on DP here
    assert verdict.estimate.worst_stage.total == totals[0]
    assert findings == []


def test_zero1_that_cannot_fit_at_any_dp_is_reported_with_the_least_memory():
    # 13B without TP: fp16 params and grads alone are 4 bytes/param = 48 GiB, unsharded at ZeRO 1;
    # with the activations of micro batch 8 at 2048 tokens it is over 80 GiB at every DP.
    spec = _neox(NEOX_13B.replace("train_micro_batch_size_per_gpu: 1", "train_micro_batch_size_per_gpu: 8")
                 .replace("checkpoint_activations: true\n", "zero_optimization: {stage: 1}\n"))
    est, (finding,), _ = _check(spec)
    assert "exceeds" in finding.message and "the least over the data-parallel sizes tried, 1 to 131,072" in finding.message
    verdict = memory_verdict(spec, est, lambda s: estimate(s, build_context(s, gpu="h100-sxm")))
    assert all(s.worst_stage.total >= verdict.estimate.worst_stage.total for s in verdict.samples)
    assert verdict.estimate.worst_stage.total > 80e9


def test_a_megatron_argument_list_without_a_launch_is_not_judged(tmp_path):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths

    path = tmp_path / "model.sh"  # sourced by another script that chooses TP/PP and the optimizer
    path.write_text("#!/bin/bash\nMODEL_ARGS=(\n  --num-layers 80 --hidden-size 8192 --num-attention-heads 64\n"
                    "  --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --bf16\n)\n")
    (result,) = check_paths([str(path)], builtin_adapters())
    (spec,) = result.specs
    est, findings, (tl900,) = _check(spec)
    assert est.ok and findings == [] and "memory and speed not judged" in tl900.message


def test_a_stated_world_size_is_judged_as_before():
    spec = _neox(NEOX_13B + "num_gpus: 8\n")
    est, (finding,), tl900 = _check(spec)
    assert usable_estimate(spec, est) is est and "world size not stated" not in finding.message and tl900 == []
