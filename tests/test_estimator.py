"""Estimator: seeds' worked examples, Korthikanti's formulas, framework conventions, invariants,
missing inputs and the JSON shape."""

from __future__ import annotations

import dataclasses

import pytest

from trainlint.adapters.deepspeed.adapter import deepspeed_optimizer
from trainlint.presets.catalog import find_gpu
from trainlint.project.config import ProjectConfig
from trainlint.core.project_settings import EstimationSettings
from trainlint.estimator import MissingInputs, build_context, estimate, estimate_inputs
from trainlint.estimator import closed_forms as CF
from trainlint.estimator.inputs import Inputs
from trainlint.estimator.memory import (layer_activation_bytes, layer_params, one_stage, static_bytes,
                                        step_grad_copy_bytes, te_fp8_weight_cache_bytes)
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec

FILE = Provenance(Origin.FILE, path="x.json", key="k")


def v(x):
    return Value(x, FILE)


def make_inputs(**over) -> Inputs:
    base = {
        "framework": "megatron", "gpu": find_gpu("a100-80gb"), "gpus_per_node": 8,
        "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32, "head_dim": 128, "ffn": 11008, "gated": True, "vocab": 32000, "seq": 4096,
        "tied": False, "experts": 1, "top_k": 1, "moe_ffn": 11008, "tp": 1, "pp": 1, "vpp": 1, "cp": 1, "ep": 1, "etp": 1, "dp": 8, "world": 8,
        "sp": False, "zero": 0, "dist_opt": False, "offload_opt": "none", "offload_params": "none", "micro": 1, "grad_accum": 64,
        "global_batch": 512, "dtype": "bf16", "fp8": False, "optimizer": "adam", "recompute": "none", "recompute_method": "uniform",
        "recompute_layers": 1, "flash": True, "partition_activations": False, "reduce_bucket": 5e8, "allgather_bucket": 5e8,
        "max_live_params": 1e9, "prefetch_bucket": 5e7, "overlap_dp": True, "overlap_tp": False,
    }
    base.update(over)
    if "world" not in over:
        base["world"] = base["dp"] * base["tp"] * base["pp"] * base["cp"]
    if "global_batch" not in over:
        base["global_batch"] = base["micro"] * base["grad_accum"] * base["dp"]
    framework = base.pop("framework")
    # the engine fields as the adapters set them for that framework (see tests/test_engine_spec.py)
    if framework == "deepspeed":
        owner, stage, grads, _ = deepspeed_optimizer(base["dtype"], base["zero"], None, False)
        engine = {"owner": owner, "shard_stage": stage, "shard_cp": False, "grad_bytes": 4.0 if grads == "fp32" else 2.0}
    else:
        grads = 2.0 if base["dtype"] == "fp16" else 4.0
        engine = {"owner": "megatron", "shard_stage": 1 if base["dist_opt"] else 0, "shard_cp": True, "grad_bytes": grads}
    engine["moe_interval"] = 1
    engine.update({k: over[k] for k in engine if k in over})
    base.update(engine)
    return Inputs(**base)


def gpt3_layer(**over) -> Inputs:
    return make_inputs(layers=96, hidden=12288, heads=96, kv_heads=96, head_dim=128, ffn=4 * 12288, gated=False,
                       vocab=51200, seq=2048, **over)


# --------------------------------------------------------------------------- seeds' worked examples


def test_seed000_13b_tp4_zero3_exercise():
    static = CF.static_memory_bytes(13e9, zero_stage=3, shards=32)
    assert static.params / 1e9 == pytest.approx(0.81, abs=0.01)
    assert static.grads / 1e9 == pytest.approx(0.81, abs=0.01)
    assert static.optimizer / 1e9 == pytest.approx(4.87, abs=0.01)
    assert static.total / 1e9 == pytest.approx(6.49, abs=0.02)
    per_layer_tp4 = CF.seed000_layer_activation_bytes(s=4096, b=8, h=5120, a=40) / 4
    assert per_layer_tp4 / 1e9 == pytest.approx(8.1, abs=0.1)
    # checkpoint every k=4 layers, the seed's conservative form: (L/k + k) layers' worth
    assert (40 / 4 + 4) * per_layer_tp4 / 1e9 == pytest.approx(113, abs=1.5)
    total = static.total / 1e9 + (40 / 4 + 4) * per_layer_tp4 / 1e9 + 5
    assert total == pytest.approx(125, abs=1.5) and total > 80          # does not fit
    assert 4 * per_layer_tp4 / 1e9 == pytest.approx(32, abs=1)         # "full recompute ~4 x 8.1 = 32 GB"


def test_seed000_70b_static_table():
    s = CF.static_memory_bytes(70e9)
    assert (s.params / 1e9, s.grads / 1e9, s.optimizer / 1e9) == pytest.approx((140, 140, 840))
    assert s.total / 1e12 == pytest.approx(1.12)
    assert s.total / 80e9 == pytest.approx(14)  # "70B requires >= 14 H100s just for static memory"


def test_seed003_7b_fp32_example():
    s = CF.static_memory_bytes(7e9, bytes_params=4, bytes_grads=4, bytes_optimizer=12)
    assert (s.params / 1e9, s.grads / 1e9, s.optimizer / 1e9) == pytest.approx((28, 28, 84))
    # The seed's activation line: sbhL(10 + 24/t + 5as/(ht)) with s=128, b=512, h=4096, L=24, a=16, t=1.
    act = 24 * CF.korthikanti_layer_bytes(s=128, b=512, h=4096, a=16, t=1)
    assert act == 128 * 512 * 4096 * 24 * (34 + 2.5)
    # The seed prints 67.51 GB and 207.51 GB in total, which its own inputs do not give
    # (the formula gives 235.1 GB); the static part (140 GB) is what it gets right.
    assert act / 1e9 == pytest.approx(235.1, abs=0.1)


# --------------------------------------------------------------------------- Korthikanti, GPT-3 layer


@pytest.mark.parametrize("t", [1, 2, 8])
def test_korthikanti_gpt3_layer_matches_generalised_accounting(t):
    s, b, h, a = 2048, 1, 12288, 96
    sbh = s * b * h
    none = CF.korthikanti_layer_bytes(s, b, h, a, t)
    assert none == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert CF.korthikanti_layer_bytes(s, b, h, a, t, recompute="selective") == pytest.approx(sbh * (10 + 24 / t))
    assert CF.korthikanti_layer_bytes(s, b, h, a, t, sequence_parallel=True, recompute="selective") == pytest.approx(sbh * 34 / t)
    assert CF.korthikanti_layer_bytes(s, b, h, a, t, recompute="full") == pytest.approx(2 * sbh)
    # trainlint's tensor-by-tensor accounting reduces to the same closed forms
    i = gpt3_layer(tp=t, flash=False)
    assert layer_activation_bytes(i, keep_scores=True) == pytest.approx(none)
    assert layer_activation_bytes(i, keep_scores=False) == pytest.approx(sbh * (10 + 24 / t))
    isp = gpt3_layer(tp=t, sp=t > 1, flash=False)
    assert layer_activation_bytes(isp, keep_scores=False) == pytest.approx(sbh * (34 / t if t > 1 else 34))


def test_gqa_and_gated_mlp_change_activations():
    mha = make_inputs()
    gqa = make_inputs(kv_heads=8)
    assert layer_activation_bytes(gqa, keep_scores=False) < layer_activation_bytes(mha, keep_scores=False)
    gelu = make_inputs(gated=False, ffn=4 * 4096, moe_ffn=4 * 4096)
    sb = 4096
    # gated: 3f per token for the MLP inner tensors, GeLU: 2f
    assert layer_activation_bytes(make_inputs(), keep_scores=False) - layer_activation_bytes(gelu, keep_scores=False) \
        == pytest.approx(2 * sb * (3 * 11008 - 2 * 4 * 4096))


# --------------------------------------------------------------------------- framework conventions


def test_megatron_bytes_per_param():
    n = 1e9
    assert sum(static_bytes(make_inputs(dp=8), n)) / n == pytest.approx(18)
    assert sum(static_bytes(make_inputs(dp=8, dist_opt=True), n)) / n == pytest.approx(6 + 12 / 8)
    # fp16: Megatron's table counts the fp32 gradient copy (20, 4 + 16/d); the estimator holds it
    # apart, as the step's transient (step_grad_copy_bytes), not alive with the activations
    fp16, fp16_dist = make_inputs(dp=8, dtype="fp16"), make_inputs(dp=8, dtype="fp16", dist_opt=True)
    assert (sum(static_bytes(fp16, n)) + step_grad_copy_bytes(fp16, n)) / n == pytest.approx(20)
    assert (sum(static_bytes(fp16_dist, n)) + step_grad_copy_bytes(fp16_dist, n)) / n == pytest.approx(4 + 16 / 8)
    assert step_grad_copy_bytes(fp16_dist, n) / n == pytest.approx(4 / 8)
    assert step_grad_copy_bytes(make_inputs(dp=8), n) == 0.0  # fp32 main grads: nothing to copy


def test_megatron_fp32_grad_copy_is_not_alive_with_the_activations():
    """The copy is made at the step, after backward has freed the activations: the peak is the
    larger of the two, so it shows only when it outgrows the activations."""
    big = make_inputs(dp=1, dtype="fp16", micro=4)
    small = make_inputs(dp=1, dtype="fp16", seq=128, layers=2)
    for i in (big, small):
        st = one_stage(i, 0, i.layers)
        copy = step_grad_copy_bytes(i, st.local_params)
        assert st.detail.get("step_grad_copy", 0.0) == pytest.approx(max(0.0, copy - st.activations))
    assert "step_grad_copy" not in one_stage(big, 0, big.layers).detail
    assert "step_grad_copy" in one_stage(small, 0, small.layers).detail
    # DeepSpeed ZeRO 1/2 drop their flattened 16-bit partition and its fp32 copy after the step too (2 + 4
    # bytes alive together, stage_1_and_2.py step); bf16 ZeRO 0 selects BF16_Optimizer, whose fp32 gradients
    # are the persistent buffer (nothing to copy)
    assert step_grad_copy_bytes(make_inputs(framework="deepspeed", dp=8, zero=1), 1e9) == pytest.approx(6e9 / 8)
    assert step_grad_copy_bytes(make_inputs(framework="deepspeed", dp=8, zero=0), 1e9) == 0.0


def test_te_fp8_saves_linear_inputs_in_fp8():
    """TE keeps the FP8 cast of each linear input for wgrad: the QKV and FC1 inputs and the FC2
    input drop to 1 byte; the attention output is kept twice (16-bit by attention, FP8 by the
    projection). Per token and layer: -h -h -ffn +q_dim."""
    base, fp8 = make_inputs(), make_inputs(fp8=True)
    sb = 4096
    assert layer_activation_bytes(base, keep_scores=False) - layer_activation_bytes(fp8, keep_scores=False) \
        == pytest.approx(sb * (4096 + 4096 + 11008 - 32 * 128))


def test_te_fp8_weight_cache_only_without_fp8_primary_weights():
    split, _, _ = layer_params(make_inputs())
    assert te_fp8_weight_cache_bytes(make_inputs(), 32) == 0.0
    assert te_fp8_weight_cache_bytes(make_inputs(fp8=True, tp=2), 32) == pytest.approx(2 * 32 * split / 2)
    assert te_fp8_weight_cache_bytes(make_inputs(fp8=True, fp8_params=True), 32) == 0.0
    with_cache = one_stage(make_inputs(fp8=True), 0, 32).params
    assert with_cache - one_stage(make_inputs(fp8=True, fp8_params=True), 0, 32).params == pytest.approx(2 * 32 * split)


def test_deepspeed_bytes_per_param_and_zero_stages():
    n = 1e9
    def per_param(i):  # the steady bytes plus the step's fp32 gradient copy, as DeepSpeed's own estimates count
        return (sum(static_bytes(i, n)) + step_grad_copy_bytes(i, n)) / n
    ds = {z: per_param(make_inputs(framework="deepspeed", dp=8, zero=z)) for z in range(4)}
    fp16 = per_param(make_inputs(framework="deepspeed", dp=8, zero=0, dtype="fp16"))
    # FP16_Optimizer: 16 B/param + the step's per-parameter fp32 gradients and their flattened copy, alive
    # together (fp16/fused_optimizer.py step); 4 more than the single fp32 copy the ZeRO optimizers make
    assert fp16 == pytest.approx(2 + 2 + 12 + 8)
    # bf16 at ZeRO 0: BF16_Optimizer (fp32 grads, sharded master + Adam), and with gradient accumulation (64 here)
    # the 16-bit .grad it keeps beside them into the next micro-batch (BF16_OPTIMIZER_LP_GRAD_BYTES)
    assert ds[0] == pytest.approx(2 + 4 + 2 + 12 / 8)
    # ZeRO 1/2's step holds the flattened 16-bit partition and its fp32 copy (2 + 4): 2 more than DeepSpeed's
    # own estimate_zero2 (2 + 18/N), which counts the fp32 copy and the 16-bit gradients but not the flat copy
    assert ds[1] == pytest.approx(2 + 2 + 18 / 8)
    assert ds[2] == pytest.approx(2 + 20 / 8)
    assert ds[3] == pytest.approx(20 / 8)
    assert ds[0] > ds[1] > ds[2] > ds[3]
    off = static_bytes(make_inputs(framework="deepspeed", dp=8, zero=3, offload_opt="cpu", offload_params="cpu"), n)
    assert off[0] == 0 and off[1] == 0 and off[2] == 0  # ZeRO-Offload moves the gradient partition to the CPU too


# --------------------------------------------------------------------------- invariants


def total_mem(**over) -> float:
    return estimate_inputs(make_inputs(**over)).worst_stage.total


def test_memory_falls_with_tp_pp_zero_recompute():
    tps = [total_mem(tp=t, dp=8 // t, world=8) for t in (1, 2, 4, 8)]
    assert tps == sorted(tps, reverse=True) and len(set(tps)) == 4
    pps = [total_mem(pp=p, dp=1, world=p, grad_accum=64, global_batch=64) for p in (1, 2, 4, 8)]
    assert pps == sorted(pps, reverse=True) and len(set(pps)) == 4
    zs = [total_mem(framework="deepspeed", zero=z) for z in range(4)]
    assert zs == sorted(zs, reverse=True) and len(set(zs)) == 4
    rec = [total_mem(flash=False, recompute=r) for r in ("none", "selective", "full")]
    assert rec == sorted(rec, reverse=True) and len(set(rec)) == 3


def test_step_time_falls_with_gpus_until_communication_dominates():
    def run(dp: int) -> object:
        return estimate_inputs(make_inputs(dp=dp, world=dp, global_batch=1024, grad_accum=1024 // dp, micro=1,
                                           overlap_dp=False))
    times = [run(d).step_time for d in (8, 16, 32, 64, 128, 256)]
    assert times == sorted(times, reverse=True)
    # at a fixed global batch the exposed DP communication takes a growing share...
    shares = [run(d).time.dp_comm / run(d).step_time for d in (8, 64, 1024)]
    assert shares == sorted(shares)
    # ...until adding GPUs no longer helps much: 512 -> 1024 GPUs (2 samples each -> 1) gains clearly less
    # than the 2x of the compute alone (the all-reduce crosses nodes through all 8 NICs of each node:
    # ~8 x NIC per GPU, so it costs less than with one NIC, but it does not shrink with the batch)
    assert run(512).step_time / run(1024).step_time < 1.75


def test_pipeline_stages_differ_and_worst_is_reported():
    e = estimate_inputs(make_inputs(pp=4, dp=2, world=8, vocab=128000))
    assert len(e.stages) == 4
    assert e.worst_stage.total == max(s.total for s in e.stages)
    assert e.stages[0].in_flight == 4 and e.stages[3].in_flight == 1
    assert "logits" in e.stages[3].detail and "embedding" in e.stages[0].detail
    inter = estimate_inputs(make_inputs(pp=4, dp=2, world=8, vpp=2))
    assert inter.stages[0].in_flight == pytest.approx(4 + 3 / 2)  # Megatron: p (1 + (p-1)/(p v))
    assert inter.time.pp_bubble < e.time.pp_bubble


def test_mfu_uses_model_flops_and_recompute_adds_hardware_flops():
    e = estimate_inputs(make_inputs(recompute="full"))
    assert e.hardware_flops_per_step > e.model_flops_per_step
    assert 0 < e.mfu < e.hfu < 1
    assert e.bound in ("compute", "memory", "network")


# --------------------------------------------------------------------------- context, missing inputs, JSON


def bare_deepspeed() -> TrainingSpec:
    spec = TrainingSpec(framework="deepspeed", path="ds.json")
    spec.batch.micro_batch = v(4)
    spec.parallel.zero_stage = v(2)
    spec.precision.dtype = v("bf16")
    return spec


def test_missing_inputs_say_what_and_how():
    result = estimate(bare_deepspeed(), build_context(bare_deepspeed()))
    assert isinstance(result, MissingInputs) and not result.ok
    fields = {m.field for m in result.missing}
    assert {"model.num_layers", "model.hidden_size"} <= fields
    # harmless when missing, or judged by no rule: an estimate states an assumed value for these
    assert "model.vocab_size" not in fields and "cluster.world_size" not in fields
    hows = " ".join(m.how for m in result.missing)
    assert "--model" in hows
    (world,) = [a for a in result.assumptions if a.field == "cluster.world_size"]
    assert world.origin == "assumed" and "--nodes" in world.source
    assert result.to_dict()["estimate"] is None


def test_context_priority_and_model_fill():
    spec = bare_deepspeed()
    spec.cluster.gpu = v("a100-80gb")
    ctx = build_context(spec)
    assert ctx.gpu.value.id == "a100-80gb" and ctx.gpu.provenance.origin is Origin.FILE
    declares_h200 = ProjectConfig(estimation=EstimationSettings(gpu="h200"))
    assert build_context(spec, project=declares_h200).gpu.value.id == "h200"
    assert build_context(spec, gpu="l4", project=declares_h200).gpu.value.id == "l4"
    default = build_context(bare_deepspeed())
    assert default.gpu.value.id == "h100-sxm" and default.gpu.provenance.origin is Origin.ASSUMED
    assert default.gpus_per_node.value == 8 and default.gpus_per_node.provenance.origin is Origin.ASSUMED
    custom = build_context(spec, project=ProjectConfig(estimation=EstimationSettings(
        gpu="mygpu", gpus={"mygpu": {"memory_gb": 48, "bf16_tflops": 200}})))
    assert custom.gpu.value.memory_gb == 48
    ctx = build_context(spec, nodes=2, model="llama2-7b")
    result = estimate(spec, ctx)
    assert result.ok and result.inputs.world == 16 and result.inputs.layers == 32
    origins = {a.field: a.origin for a in result.assumptions}
    assert origins["model.num_layers"] == "cli" and origins["cluster.world_size"] == "derived"


def test_config_values_win_over_the_preset():
    spec = bare_deepspeed()
    spec.model.seq_length = v(1024)
    result = estimate(spec, build_context(spec, nodes=1, model="llama2-7b"))
    assert result.inputs.seq == 1024


def test_json_shape():
    spec = bare_deepspeed()
    data = estimate(spec, build_context(spec, nodes=1, model="llama2-7b")).to_dict()
    assert set(data["memory_gib"]) == {"params", "grads", "optimizer", "activations", "buffers", "overhead", "total"}
    for key in ("capacity_gib", "step_time_s", "tokens_per_s", "mfu", "model_flops_per_step", "bound", "stages", "assumptions"):
        assert key in data
    assert {"compute", "tp_comm", "pp_bubble", "dp_comm"} <= set(data["time_s"])
    assert data["memory_gib"]["total"] == pytest.approx(sum(v for k, v in data["memory_gib"].items() if k != "total"))
    assert data["step_time_s"] == pytest.approx(sum(data["time_s"].values()))
    assert isinstance(data["stages"], list) and data["stages"][0]["stage"] == 0
    assert all({"field", "value", "origin", "source"} <= set(a) for a in data["assumptions"])


def test_estimate_is_pure_and_repeatable():
    i = make_inputs()
    snapshot = dataclasses.asdict(i)
    a, b = estimate_inputs(i), estimate_inputs(i)
    assert a.to_dict() == b.to_dict() and dataclasses.asdict(i) == snapshot


def test_residual_dropout_at_zero_keeps_no_mask():
    """torch's dropout at p = 0 returns its input: no 1-byte mask after attention and after the MLP
    (2 s b h / rep per layer) and nothing for the embedding's dropout (mask + output) on stage 0."""
    on, off = make_inputs(), make_inputs(residual_dropout=False)
    sb, h = 4096, 4096
    assert layer_activation_bytes(on, keep_scores=False) - layer_activation_bytes(off, keep_scores=False) \
        == pytest.approx(2 * sb * h)
    sp = make_inputs(tp=4, sp=True)
    assert layer_activation_bytes(sp, keep_scores=False) \
        - layer_activation_bytes(dataclasses.replace(sp, residual_dropout=False), keep_scores=False) \
        == pytest.approx(2 * sb * h / 4)
    assert "embedding" in one_stage(on, 0, 32).detail and "embedding" not in one_stage(off, 0, 32).detail


@pytest.mark.parametrize("flags, dropout", [("--hidden-dropout 0.0", False), ("--hidden-dropout 0.1", True), ("", True)])
def test_megatron_hidden_dropout_reaches_the_estimate(tmp_path, flags, dropout):
    from trainlint.adapters.base import LoadContext
    from trainlint.adapters.megatron.detect import MegatronAdapter
    from trainlint.files.sources import SourceText

    text = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 8 "
            "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 "
            f"--vocab-size 32000 --tokenizer-type NullTokenizer --bf16 {flags}\n")
    path = tmp_path / "train.sh"
    path.write_text(text)
    spec = MegatronAdapter().load(SourceText(str(path), text), LoadContext()).specs[0]
    from trainlint.estimator.inputs import resolve

    inputs, missing, _ = resolve(spec, build_context(spec, gpu="h100-sxm", project=ProjectConfig()))
    assert inputs is not None, missing
    assert inputs.residual_dropout is dropout


def test_neox_hidden_dropout_is_read_as_written(tmp_path):
    from trainlint.adapters.base import LoadContext
    from trainlint.adapters.neox.detect import NeoXAdapter
    from trainlint.estimator.inputs import _dropout_on
    from trainlint.files.sources import SourceText

    for text, on in (('{"num_layers": 2, "hidden_size": 64, "hidden_dropout": 0}\n', False),
                     ('{"num_layers": 2, "hidden_size": 64, "hidden_dropout": 0.1}\n', True),
                     ('{"num_layers": 2, "hidden_size": 64}\n', True)):
        path = tmp_path / "neox.yml"
        path.write_text(text)
        spec = NeoXAdapter().load(SourceText(str(path), text), LoadContext()).specs[0]
        assert _dropout_on(spec) is on, text
