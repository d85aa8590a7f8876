"""Engine facts the memory estimate reads (issue 30): DeepSpeed's optimizer wrapper by release and
ZeRO stage, DeepSpeed's CPU activation checkpointing, fragmentation only where the allocator fragments, and
the allocator's releasable cache shown but not needed."""

from __future__ import annotations

import dataclasses

import pytest

from trainlint.adapters.deepspeed.adapter import deepspeed_optimizer
from trainlint.estimator import coefficients as C
from trainlint.estimator.memory import one_stage, stage_activation_bytes

from test_estimator import make_inputs


def test_bf16_zero1_with_fp32_accumulation_selects_bf16_optimizer() -> None:
    owner, stage, grads, why = deepspeed_optimizer("bf16", 1, "fp32", False)
    assert (owner, stage, grads) == ("deepspeed-bf16", 1, "fp32") and "BF16_Optimizer" in why
    # not with CPU offload, not at stage 2, not with bf16 accumulation
    assert deepspeed_optimizer("bf16", 1, "fp32", False, offload=True)[0] == "deepspeed-zero"
    assert deepspeed_optimizer("bf16", 2, "fp32", False)[0] == "deepspeed-zero"
    assert deepspeed_optimizer("bf16", 1, None, False)[:3] == ("deepspeed-zero", 1, "bf16")


def test_bf16_without_zero_follows_the_release() -> None:
    # up to 0.17.5 bf16 without ZeRO accumulates in fp32 (BF16_Optimizer); from 0.17.6 (PR #7515) in bf16
    assert deepspeed_optimizer("bf16", 0, None, False, version="0.17.5")[:3] == ("deepspeed-bf16", 1, "fp32")
    assert deepspeed_optimizer("bf16", 0, None, False, version="v0.17.6")[:3] == ("deepspeed", 0, "bf16")
    assert deepspeed_optimizer("bf16", 0, None, False, version="0.18.0")[:3] == ("deepspeed", 0, "bf16")
    # the pipeline engine takes BF16_Optimizer with bf16 accumulation too; an explicit dtype wins
    assert deepspeed_optimizer("bf16", 0, None, True, version="0.18.0")[:3] == ("deepspeed-bf16", 1, "bf16")
    assert deepspeed_optimizer("bf16", 0, "fp32", False, version="0.18.0")[:3] == ("deepspeed-bf16", 1, "fp32")
    # unknown release: the older default
    assert deepspeed_optimizer("bf16", 0, None, False)[:3] == ("deepspeed-bf16", 1, "fp32")


def test_cpu_checkpointing_moves_the_checkpoints_off_the_gpu() -> None:
    i = make_inputs(recompute="full", recompute_layers=1, pp=1, micro=2)
    on_gpu, _ = stage_activation_bytes(i, 0, i.layers)
    host = dataclasses.replace(i, cpu_checkpointing=True)
    off, detail = stage_activation_bytes(host, 0, host.layers)
    assert detail["stored_per_microbatch"] == 0.0
    assert off < on_gpu
    assert off >= detail["workspace"] > 0  # the layer recomputed is still on the GPU


def test_fragmentation_is_not_charged_on_static_memory() -> None:
    small = make_inputs(layers=8, micro=1, recompute="full")
    big_model = dataclasses.replace(small, hidden=8192, heads=64, kv_heads=64, ffn=22016)
    for i in (small, big_model):
        s = one_stage(i, 0, i.layers)
        assert s.detail["fragmentation"] == C.ALLOCATOR_FRAGMENTATION * (s.activations + s.buffers)


def test_the_releasable_allocator_cache_is_shown_but_not_needed(monkeypatch) -> None:
    """The cache the allocator frees before it raises out-of-memory (ALLOCATOR_CACHE) is in what the GPU
    shows (observed, reserved) and not in what the run needs (total, the verdicts)."""
    i = make_inputs(layers=8, micro=2, recompute="full")
    monkeypatch.setattr(C, "ALLOCATOR_CACHE", 0.0)
    bare = one_stage(i, 0, i.layers)
    monkeypatch.setattr(C, "ALLOCATOR_CACHE", 0.4)
    s = one_stage(i, 0, i.layers)
    assert s.total == bare.total  # the verdict does not move with the cache
    churn = s.activations - (s.in_flight - 1) * s.detail["stored_per_microbatch"]
    assert s.cache == pytest.approx(0.4 * (churn + s.buffers)) and s.cache > 0
    assert s.observed == s.total + s.cache
    assert s.reserved == s.observed - s.detail["cuda_context"] - s.detail["nccl"]
    assert bare.observed == bare.total


def test_the_allocator_cache_never_shows_more_than_the_gpu_has(monkeypatch) -> None:
    """The allocator frees its cache and retries before a cudaMalloc fails: a stage that fits shows at most the
    device memory, however large the cache share (CUDACachingAllocator.cpp)."""
    i = make_inputs(layers=8, micro=2)
    monkeypatch.setattr(C, "ALLOCATOR_CACHE", 0.6)
    roomy = one_stage(i, 0, i.layers)
    assert roomy.cache > 0 and roomy.observed < i.gpu.memory_bytes  # room to spare: the whole cache shows
    tight_gpu = dataclasses.replace(i.gpu, memory_gib=(roomy.total + 0.5 * roomy.cache) / 2**30, memory_gb=None)
    tight = one_stage(dataclasses.replace(i, gpu=tight_gpu), 0, i.layers)
    assert tight.total == pytest.approx(roomy.total)  # what the run needs does not move
    assert tight.cache == pytest.approx(0.5 * roomy.cache)
    assert tight.observed == pytest.approx(tight_gpu.memory_bytes)
    full_gpu = dataclasses.replace(i.gpu, memory_gib=0.9 * roomy.total / 2**30, memory_gb=None)
    assert one_stage(dataclasses.replace(i, gpu=full_gpu), 0, i.layers).cache == 0.0  # past capacity: none


def test_the_allocator_cache_follows_one_micro_batch_not_the_micro_batches_in_flight() -> None:
    """Micro-batches held by a pipeline stage reuse blocks of one size: more in flight, the same cache."""
    i = make_inputs(layers=8, pp=4, dp=2, world=8, micro=1, grad_accum=16, global_batch=32, framework="deepspeed",
                    zero=1)  # ZeRO 1: fragmentation pinned (lifetimes_interleave), not added to the cache
    first, last = one_stage(i, 0, 2), one_stage(i, 3, 2)
    assert first.in_flight > last.in_flight
    assert first.activations > last.activations
    # the first stage holds more micro-batches, not a larger cache (the last adds its logits only)
    assert first.cache <= last.cache


def _megatron_ds_spec(tmp_path, *flags: str):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths

    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}, '
                                      '"bf16": {"enabled": true}}')
    script = tmp_path / "train.sh"
    script.write_text("deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 "
                      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
                      "--micro-batch-size 1 --global-batch-size 64 --tensor-model-parallel-size 2 --bf16 "
                      "--checkpoint-activations --deepspeed --deepspeed_config ds.json " + " ".join(flags) + "\n")
    results = check_paths([str(script)], builtin_adapters())
    return next(spec for r in results for spec in r.specs)


def test_partition_and_cpu_checkpointing_need_deepspeed_activation_checkpointing(tmp_path) -> None:
    on = _megatron_ds_spec(tmp_path, "--deepspeed-activation-checkpointing", "--partition-activations",
                           "--checkpoint-in-cpu")
    assert on.memory.partition_activations.value is True and on.memory.cpu_checkpointing.value is True
    off = _megatron_ds_spec(tmp_path, "--partition-activations", "--checkpoint-in-cpu")
    assert off.memory.partition_activations.value is False and off.memory.cpu_checkpointing.value is False
    assert "deepspeed-activation-checkpointing" in off.memory.cpu_checkpointing.provenance.note


def test_fp8_weight_copies_under_full_sharding_are_one_layer() -> None:
    from trainlint.estimator.memory import te_fp8_weight_cache_bytes

    dense = make_inputs(framework="deepspeed", zero=1, fp8=True)
    sharded = make_inputs(framework="deepspeed", zero=3, fp8=True)
    assert sharded.shard_stage == 3
    assert te_fp8_weight_cache_bytes(dense, 32) == 32 * te_fp8_weight_cache_bytes(dense, 1)
    assert te_fp8_weight_cache_bytes(sharded, 32) == te_fp8_weight_cache_bytes(sharded, 1) > 0


def test_deepspeed_ulysses_splits_the_sequence_and_zero_shards_over_it(tmp_path) -> None:
    from trainlint.estimator import build_context, estimate

    def run(*flags: str):
        (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}, '
                                          '"bf16": {"enabled": true}}')
        script = tmp_path / "train.sh"
        script.write_text("deepspeed --num_gpus 8 --num_nodes 1 pretrain_gpt.py --num-layers 8 --hidden-size 2048 "
                          "--num-attention-heads 16 --seq-length 32768 --max-position-embeddings 32768 "
                          "--micro-batch-size 1 --global-batch-size 16 --bf16 --use-flash-attn-v2 --no-pipeline-parallel "
                          "--tokenizer-type GPT2BPETokenizer --deepspeed --deepspeed_config ds.json " + " ".join(flags) + "\n")
        from trainlint.adapters import builtin_adapters
        from trainlint.files.checker import check_paths

        spec = next(s for r in check_paths([str(script)], builtin_adapters()) for s in r.specs)
        est = estimate(spec, build_context(spec, gpu="h100-sxm"))
        assert est.ok
        return est

    plain, uly = run(), run("--ds-sequence-parallel-size", "4")
    assert (plain.inputs.cp, plain.inputs.dp) == (1, 8)
    assert (uly.inputs.cp, uly.inputs.dp) == (4, 2) and uly.inputs.shard_cp
    # ZeRO-3 over the same 8 ranks (DP x SP): the same static memory; activations 1/4 of the sequence
    assert uly.stages[0].optimizer == plain.stages[0].optimizer
    assert uly.stages[0].activations < 0.3 * plain.stages[0].activations


def _megatron_lm_spec(tmp_path, *flags: str):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths

    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 16 --hidden-size 2048 "
                      "--num-attention-heads 16 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 2 "
                      "--global-batch-size 64 --bf16 --use-distributed-optimizer " + " ".join(flags) + "\n")
    results = check_paths([str(script)], builtin_adapters())
    return next(spec for r in results for spec in r.specs)


def test_cpu_activation_offloading_keeps_the_other_layers_and_one_in_transit(tmp_path) -> None:
    """Megatron-Core --cpu-offloading-num-layers N (TE's CPU offload context): the first N layers' saved
    activations go to host memory; the L - N others and the layer being copied stay on the GPU."""
    from trainlint.estimator import build_context, estimate

    off = _megatron_lm_spec(tmp_path, "--cpu-offloading-num-layers 6")
    assert off.memory.cpu_offload_layers.value == 6
    i = make_inputs(layers=16, pp=1, micro=2, recompute="none")
    kept, detail = stage_activation_bytes(i, 0, 16)
    moved, moved_detail = stage_activation_bytes(dataclasses.replace(i, cpu_offload_layers=6), 0, 16)
    per_layer = detail["stored_per_microbatch"] / 16
    assert moved_detail["stored_per_microbatch"] == pytest.approx(per_layer * (16 - 6 + 1))
    assert kept - moved == pytest.approx(5 * per_layer)
    # through the adapter and the estimate: less activation memory than the same launch without offloading
    est_off = estimate(off, build_context(off, gpu="h100-sxm"))
    on = _megatron_lm_spec(tmp_path)
    est_on = estimate(on, build_context(on, gpu="h100-sxm"))
    assert est_off.ok and est_on.ok
    assert est_off.inputs.cpu_offload_layers == 6 and est_on.inputs.cpu_offload_layers == 0
    assert est_off.worst_stage.activations < est_on.worst_stage.activations
    # no offloading with full recompute (Megatron-Core refuses the pair; the checkpoints are what is stored)
    full = dataclasses.replace(i, recompute="full", cpu_offload_layers=6)
    assert stage_activation_bytes(full, 0, 16)[0] == stage_activation_bytes(dataclasses.replace(full, cpu_offload_layers=0), 0, 16)[0]


def test_te_fused_cross_entropy_keeps_only_the_16_bit_logits(tmp_path) -> None:
    """--cross-entropy-loss-fusion --cross-entropy-fusion-impl te: Transformer Engine's kernel writes the gradient
    into the 16-bit logits (2 bytes each); Megatron's own cross entropy, fused ('native') or not, keeps an fp32
    copy (LOGITS_BYTES_PER_ELEMENT)."""
    from trainlint.estimator import build_context, estimate

    def logits(*flags: str) -> tuple[float, object]:
        spec = _megatron_lm_spec(tmp_path, "--vocab-size 128000", *flags)
        est = estimate(spec, build_context(spec, gpu="h100-sxm"))
        assert est.ok
        return est.worst_stage.detail["logits"], est.inputs

    plain, i = logits()
    native, _ = logits("--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl native")
    te, te_inputs = logits("--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl te")
    assert not i.logits_in_place and te_inputs.logits_in_place
    assert native == plain
    per_logit = i.seq * i.micro * i.vocab / i.tp
    assert plain - te == pytest.approx((C.LOGITS_BYTES_PER_ELEMENT - C.LOGITS_IN_PLACE_BYTES_PER_ELEMENT) * per_logit)


@pytest.mark.parametrize("switch, expected", [("  cpu_offloading: true\n", 4), ("", 0)])
def test_bridge_reads_activation_offloading_and_the_fused_loss(tmp_path, switch: str, expected: int) -> None:
    """A ConfigContainer offloads only with model.cpu_offloading true (Megatron-LM derives it from the layer
    count; TransformerConfig does not), and names the TE loss as Megatron-LM's flags do."""
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths

    path = tmp_path / "run_config.yaml"
    path.write_text("model:\n  num_layers: 16\n  hidden_size: 1024\n  num_attention_heads: 16\n  seq_length: 2048\n"
                    + switch + "  cpu_offloading_num_layers: 4\n  cross_entropy_loss_fusion: true\n"
                    "  cross_entropy_fusion_impl: te\ntrain:\n  micro_batch_size: 1\n  global_batch_size: 64\n"
                    "dataset:\n  seq_length: 2048\n", encoding="utf-8")
    spec = next(s for r in check_paths([str(path)], builtin_adapters()) for s in r.specs)
    assert spec.memory.cpu_offload_layers.value == expected
    assert spec.memory.cross_entropy.value == "in-place"


def test_fragmentation_is_charged_where_lifetimes_interleave() -> None:
    """The allocator is left with split blocks it cannot give back where short- and long-lived allocations
    interleave (ZeRO, Rajbhandari et al. 2020, Sec. 6.3): checkpointed vs discarded activations, CPU-offloaded
    activations, gradients allocated per parameter in the backward (DeepSpeed ZeRO 0/1, BF16_Optimizer). Where
    they do not (no recompute, gradients in one buffer allocated up front), the same reserved blocks are the
    releasable cache: shown as before, not needed."""
    from trainlint.estimator.memory import lifetimes_interleave

    plain = make_inputs(layers=8, micro=2)  # Megatron, contiguous gradient buffer, no recompute
    assert not lifetimes_interleave(plain)
    assert not lifetimes_interleave(dataclasses.replace(plain, pp=2, grad_accum=1))  # one micro-batch in flight
    for other in (dataclasses.replace(plain, recompute="full"), dataclasses.replace(plain, cpu_offload_layers=2),
                  dataclasses.replace(plain, pp=2, grad_accum=8),
                  dataclasses.replace(plain, recompute="selective", flash=False),
                  make_inputs(layers=8, micro=2, framework="deepspeed", zero=1),
                  make_inputs(layers=8, micro=2, framework="deepspeed", zero=0)):
        assert lifetimes_interleave(other), other
    assert not lifetimes_interleave(make_inputs(layers=8, micro=2, framework="deepspeed", zero=2))
    assert not lifetimes_interleave(dataclasses.replace(plain, recompute="selective"))  # flash: nothing discarded
    pinned = one_stage(dataclasses.replace(plain, owner="deepspeed-zero", shard_stage=1), 0, plain.layers)
    free = one_stage(plain, 0, plain.layers)
    assert pinned.detail["fragmentation"] > 0
    assert pinned.detail["fragmentation"] == pytest.approx(C.ALLOCATOR_FRAGMENTATION * (pinned.activations + pinned.buffers))
    assert free.detail["fragmentation"] == 0.0
    # the blocks are still reserved: what the GPU shows keeps them, what the run needs does not
    split = C.ALLOCATOR_FRAGMENTATION * (free.activations + free.buffers)
    churn = free.activations - (free.in_flight - 1) * free.detail["stored_per_microbatch"]
    assert free.cache == pytest.approx(C.ALLOCATOR_CACHE * (churn + free.buffers) + split)
    assert free.total == pytest.approx(free.params + free.grads + free.optimizer + free.activations + free.buffers
                                       + free.detail["cuda_context"] + free.detail["nccl"])


def _megatron_launch(tmp_path, *flags: str, deepspeed: bool = False):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths

    extra = ""
    if deepspeed:
        (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}, '
                                          '"bf16": {"enabled": true}}')
        extra = " --deepspeed --deepspeed_config ds.json"
    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 "
                      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --swiglu "
                      "--micro-batch-size 1 --global-batch-size 64 --bf16 " + " ".join(flags) + extra + "\n")
    results = check_paths([str(script)], builtin_adapters())
    return next(spec for r in results for spec in r.specs)


def test_the_gated_activation_is_read_where_the_engine_states_it(tmp_path) -> None:
    """Megatron-Core fuses SwiGLU by default (bias_swiglu_impl keeps only its input); --no-bias-swiglu-fusion runs
    glu(), F.silu(x[0]) * x[1], whose multiply keeps the SiLU output too, as Megatron-DeepSpeed's only swiglu does;
    a Hugging Face config.json's modeling code (LlamaMLP) is unfused as well and fills a run that states nothing."""
    from trainlint.core.provenance import Origin, Provenance, Value
    from trainlint.presets.models import fill_model, read_hf_config

    assert _megatron_launch(tmp_path).memory.gated_activation.value == "fused"
    assert _megatron_launch(tmp_path, "--no-bias-swiglu-fusion").memory.gated_activation.value == "unfused"
    assert _megatron_launch(tmp_path, deepspeed=True).memory.gated_activation.value == "unfused"

    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "llama", "hidden_act": "silu", "num_hidden_layers": 4, "hidden_size": 512, '
                   '"num_attention_heads": 8, "intermediate_size": 1376, "vocab_size": 32000}')
    preset = read_hf_config(cfg)
    assert preset.gated_activation == "unfused"
    model = Value(preset, Provenance(Origin.CLI, key="--model", note="config.json"))
    fused = _megatron_launch(tmp_path)
    assert fill_model(fused, model).memory.gated_activation.value == "fused"  # the run's framework says
    bare = dataclasses.replace(fused, memory=dataclasses.replace(fused.memory, gated_activation=None))
    assert fill_model(bare, model).memory.gated_activation.value == "unfused"


def test_an_unfused_gated_activation_keeps_its_output() -> None:
    fused = make_inputs(layers=4, micro=2, tp=2)
    unfused = dataclasses.replace(fused, gated_unfused=True)
    grown = one_stage(unfused, 0, 4).detail["stored_per_microbatch"] - one_stage(fused, 0, 4).detail["stored_per_microbatch"]
    # the SiLU output: 16-bit, ffn / TP wide, per token of the micro-batch, per layer
    assert grown == pytest.approx(4 * 2 * fused.seq * fused.micro * fused.ffn / fused.tp)
    gelu, gelu_flagged = dataclasses.replace(fused, gated=False), dataclasses.replace(unfused, gated=False)
    assert one_stage(gelu_flagged, 0, 4).activations == one_stage(gelu, 0, 4).activations  # nothing to unfuse


def test_bf16_optimizer_keeps_the_16_bit_gradients_into_the_next_micro_batch() -> None:
    """BF16_Optimizer adds each parameter's 16-bit .grad into its fp32 buffer and keeps it until the next backward
    (bf16_optimizer.py backward_epilogue, clear_lp_grads): with gradient accumulation it is there at the next
    micro-batch's activation peak; with one micro-batch per step zero_grad frees it after the step."""
    from trainlint.estimator.memory import static_bytes

    accumulating = make_inputs(framework="deepspeed", zero=0, grad_accum=8)  # bf16, ZeRO 0: BF16_Optimizer
    assert accumulating.owner == "deepspeed-bf16" and accumulating.grad_bytes == 4.0
    n = 1e9
    _, grads, _ = static_bytes(accumulating, n)
    assert grads == pytest.approx((4.0 + C.BF16_OPTIMIZER_LP_GRAD_BYTES) * n)
    _, single, _ = static_bytes(dataclasses.replace(accumulating, grad_accum=1), n)
    assert single == pytest.approx(4.0 * n)
    zero = make_inputs(framework="deepspeed", zero=1, grad_accum=8)  # the ZeRO optimizer: its own 16-bit buffer
    assert static_bytes(zero, n)[1] == pytest.approx(zero.grad_bytes * n)
