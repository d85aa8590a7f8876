"""MoE and sequence-parallel engine facts (issue 30): the expert all-to-all overlap of Megatron-Core's
--overlap-moe-expert-parallel-comm, DeepSpeed-Ulysses' all-to-alls (Megatron-DeepSpeed
--ds-sequence-parallel-size) and the dispatched tokens a MoE layer keeps."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.estimator import coefficients as C
from trainlint.estimator.memory import layer_activation_bytes, moe_tokens_per_gpu
from trainlint.estimator.performance import (
    ep_1f1b_exposed,
    ep_1f1b_unpaired,
    ep_a2a_time,
    ep_comm_per_layer,
    ep_off_node_copies,
    ep_unpaired_s,
    tp_comm_per_layer,
    ulysses_per_layer,
)
from trainlint.files.sources import SourceText

from test_estimator import make_inputs


def _moe(**over):
    base = {"layers": 8, "experts": 64, "top_k": 8, "moe_ffn": 2048, "ep": 8, "tp": 1, "etp": 1, "dp": 8, "micro": 1,
            "seq": 4096}
    base.update(over)
    return make_inputs(**base)


def test_expert_overlap_hides_a_share_of_the_all_to_all() -> None:
    i = _moe()
    exposed = ep_comm_per_layer(i)
    assert exposed > 0
    assert exposed == 4 * i.moe_fraction * ep_a2a_time(i) * (1 - C.EP_A2A_OVERLAP_FRACTION)
    overlapped = ep_comm_per_layer(dataclasses.replace(i, overlap_ep=True))
    assert 0 <= overlapped < exposed


def test_expert_overlap_hides_at_most_the_compute_beside_it() -> None:
    """The combined 1F1B schedule hides each exchange behind the other micro-batch's compute: an exchange much longer
    than the layer's compute (a slow network) shows all but that compute; one much shorter is hidden."""
    i = dataclasses.replace(_moe(), overlap_ep=True)
    one = ep_a2a_time(i)
    assert ep_1f1b_exposed(i, 0.0) == 0.0
    assert ep_1f1b_exposed(i, 1e-9) == 0.0
    slow = 1000.0 * one
    shown = ep_1f1b_exposed(i, slow)
    assert 3 * slow < shown < 4 * slow  # the compute it hides behind is far shorter than the exchange
    assert ep_1f1b_exposed(i, 2 * slow) - shown == pytest.approx(4 * slow)


def test_unpaired_chunks_follow_the_schedule() -> None:
    i = dataclasses.replace(_moe(), overlap_ep=True, grad_accum=16)
    assert ep_1f1b_unpaired(i) == 1  # the first forward and the last backward, no pipeline
    piped = dataclasses.replace(i, pp=4, vpp=2)
    assert ep_1f1b_unpaired(piped) == (2 - 1) * 4 + 1  # the last stage's warm-up forwards, interleaved
    assert ep_unpaired_s(i, 8) > 0
    assert ep_unpaired_s(dataclasses.replace(i, overlap_ep=False), 8) == 0.0


def test_expert_all_to_all_leaves_the_node_through_one_nic() -> None:
    """Across nodes each GPU's off-node copies go through its own NIC (not every NIC of the node, as a ring's do);
    the flex dispatchers send a token once per remote node (DeepEP's NVLink forwarding), the alltoall one per copy."""
    inside = _moe(ep=8)
    across = _moe(ep=32, dp=32)
    assert ep_a2a_time(across) > 4 * ep_a2a_time(inside)
    flex = dataclasses.replace(across, moe_dispatcher="flex")
    a2a = dataclasses.replace(across, moe_dispatcher="alltoall")
    assert ep_off_node_copies(a2a, 8) == pytest.approx(8 * 3 / 4)
    assert ep_off_node_copies(flex, 8) == pytest.approx(3 * (1 - 0.75 ** 8))
    assert ep_a2a_time(flex) < ep_a2a_time(a2a)
    # sequence parallelism: each TP rank dispatches its own shard of the sequence
    sp = _moe(ep=8, tp=2, dp=8, sp=True)
    assert ep_a2a_time(sp) < ep_a2a_time(dataclasses.replace(sp, sp=False))


def test_megatron_flag_sets_the_engine_fact() -> None:
    def spec(extra: str):
        text = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 8 "
                "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 "
                f"--num-experts 8 --expert-model-parallel-size 8 --bf16 {extra}\n")
        (s,) = MegatronAdapter().load(SourceText(str(Path("inline.sh").resolve()), text), LoadContext()).specs
        return s
    assert spec("--overlap-moe-expert-parallel-comm").engine.ep_overlap.value is True
    assert spec("").engine.ep_overlap.value is False


def test_ulysses_is_an_all_to_all_not_a_ring() -> None:
    ring = make_inputs(cp=4, dp=2, seq=16384)
    uly = dataclasses.replace(ring, cp_all_to_all=True)
    # each round moves (CP - 1)/CP of the local Q, K, V and output
    assert ulysses_per_layer(uly) > 0
    assert tp_comm_per_layer(uly) == ulysses_per_layer(uly)
    assert tp_comm_per_layer(ring) != tp_comm_per_layer(uly)
    # full recompute repeats the forward's round
    assert ulysses_per_layer(dataclasses.replace(uly, recompute="full")) > ulysses_per_layer(uly)


def test_megatron_deepspeed_ulysses_flag_sets_the_exchange(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}, '
                                      '"bf16": {"enabled": true}}')
    text = ("deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 8 "
            "--seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 16 "
            "--ds-sequence-parallel-size 4 --use-flash-attn-v2 --bf16 "
            "--deepspeed --deepspeed_config ds.json --zero-stage 1\n")
    path = tmp_path / "train.sh"
    path.write_text(text)
    (spec,) = MegatronAdapter().load(SourceText(str(path), text), LoadContext()).specs
    assert spec.parallel.context is not None and spec.parallel.context.value == 4
    assert spec.engine.sequence_exchange is not None and spec.engine.sequence_exchange.value == "all-to-all"


def test_moe_layer_keeps_the_dispatched_tokens() -> None:
    i = _moe()
    dense_router_input_only = layer_activation_bytes(dataclasses.replace(i, top_k=1), keep_scores=False)
    assert layer_activation_bytes(i, keep_scores=False) > dense_router_input_only
    # the dispatched copies: top-k x tokens x hidden, 16-bit (1 byte under TE FP8)
    sb = i.seq * i.micro
    more_k = dataclasses.replace(i, top_k=9)
    per_k = layer_activation_bytes(more_k, keep_scores=False) - layer_activation_bytes(i, keep_scores=False)
    per_width = sb * (2 * 2 + 2)  # gate and up outputs and their product, per expert FFN column
    assert per_k == sb * 2 * i.hidden + per_width * i.moe_ffn


def test_tokens_per_gpu_follow_sequence_and_expert_tensor_parallelism() -> None:
    sb = 4096.0
    assert moe_tokens_per_gpu(_moe()) == sb
    assert moe_tokens_per_gpu(_moe(tp=2, sp=True, etp=1)) == sb / 2  # each rank dispatches its sequence shard
    assert moe_tokens_per_gpu(_moe(tp=8, sp=True, etp=8, ep=1)) == sb  # gathered over ETP = TP (core_v0.6 allgather)
    assert moe_tokens_per_gpu(_moe(tp=2, sp=False, etp=2)) == sb  # without SP the TP ranks hold the same tokens


def test_recompute_modules_are_read_from_the_script() -> None:
    text = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 8 "
            "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 "
            "--num-experts 8 --expert-model-parallel-size 8 --bf16 "
            "--recompute-granularity selective --recompute-modules moe_act layernorm\n")
    (spec,) = MegatronAdapter().load(SourceText(str(Path("inline.sh").resolve()), text), LoadContext()).specs
    assert spec.memory.recompute_modules is not None
    assert list(spec.memory.recompute_modules.value) == ["moe_act", "layernorm"]


def test_recompute_modules_trade_memory_for_compute() -> None:
    from trainlint.estimator.memory import one_stage
    from trainlint.estimator.performance import step_time

    base = _moe(recompute="selective", ffn=8192, moe_interval=2)
    default = one_stage(base, 0, base.layers)
    assert base.recompute_modules == ("core_attn",)
    for modules in (("core_attn", "moe_act"), ("core_attn", "moe"), ("mlp",), ("layernorm",)):
        more = dataclasses.replace(base, recompute_modules=modules)
        assert one_stage(more, 0, more.layers).detail["stored_per_microbatch"] < \
            default.detail["stored_per_microbatch"], modules
    # recomputing whole MLPs runs their GEMMs again; an output-discarding module costs no GEMM
    assert step_time(dataclasses.replace(base, recompute_modules=("core_attn", "moe", "mlp"))).compute > \
        step_time(base).compute
    assert step_time(dataclasses.replace(base, recompute_modules=("core_attn", "moe_act"))).compute == \
        step_time(base).compute
    # without core_attn the unfused attention keeps its scores
    unfused = dataclasses.replace(base, flash=False)
    kept = dataclasses.replace(unfused, recompute_modules=("moe_act",))
    assert one_stage(kept, 0, kept.layers).activations > one_stage(unfused, 0, unfused.layers).activations


def test_mla_up_proj_recompute_discards_query_key_and_value() -> None:
    """mla_up_proj (Megatron-Core multi_latent_attention.py, CheckpointWithoutOutput around the up projections)
    drops exactly the Q, K and V the layer would otherwise keep, per layer and micro-batch."""
    from trainlint.estimator.memory import one_stage

    base = _moe(recompute="selective", ffn=8192, moe_interval=2)
    up = dataclasses.replace(base, recompute_modules=("mla_up_proj",))
    saved = (one_stage(base, 0, base.layers).detail["stored_per_microbatch"]
             - one_stage(up, 0, up.layers).detail["stored_per_microbatch"])
    sb = base.seq / base.cp * base.micro
    qkv = base.act_bytes * sb * (base.q_dim + 2 * base.kv_dim) / base.tp
    assert abs(saved - base.layers * qkv) <= 1e-6 * saved


def test_cpu_offloading_keeps_offloaded_layers_off_the_gpu() -> None:
    from trainlint.estimator.memory import stage_activation_bytes

    text = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 8 "
            "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16 "
            "--cpu-offloading-num-layers 4\n")
    (spec,) = MegatronAdapter().load(SourceText(str(Path("inline.sh").resolve()), text), LoadContext()).specs
    assert spec.memory.cpu_offload_layers is not None and spec.memory.cpu_offload_layers.value == 4
    i = make_inputs(layers=8)
    on_gpu = stage_activation_bytes(i, 0, 8)[1]["stored_per_microbatch"]
    off = stage_activation_bytes(dataclasses.replace(i, cpu_offload_layers=4), 0, 8)[1]["stored_per_microbatch"]
    assert off == on_gpu * (8 - 3) / 8  # the layer being copied is still on the GPU


def test_bridge_fields_of_the_same_meaning(tmp_path: Path) -> None:
    from trainlint.adapters.bridge.adapter import BridgeAdapter
    from trainlint.files.sources import read_source

    path = tmp_path / "run.yaml"
    path.write_text("_target_: megatron.bridge.training.config.ConfigContainer\nmodel:\n"
                    "  _target_: megatron.bridge.models.gpt_provider.GPTModelProvider\n"
                    "  num_layers: 8\n  hidden_size: 1024\n  num_attention_heads: 8\n  seq_length: 2048\n"
                    "  pipeline_model_parallel_size: 2\n  pipeline_model_parallel_layout: 'Et*3|t*5L'\n"
                    "  recompute_granularity: selective\n  recompute_modules: [mlp, core_attn]\n"
                    "  num_moe_experts: 8\n  expert_model_parallel_size: 8\n"
                    "comm_overlap:\n  overlap_moe_expert_parallel_comm: true\n"
                    "train:\n  micro_batch_size: 1\n  global_batch_size: 64\n")
    (spec,) = BridgeAdapter().load(read_source(str(path)), LoadContext()).specs
    assert list(spec.memory.recompute_modules.value) == ["mlp", "core_attn"]
    assert spec.parallel.stage_layers is not None and spec.parallel.stage_layers.value == [[3], [5]]
    assert spec.engine.ep_overlap is not None and spec.engine.ep_overlap.value is True


def test_hardware_flops_count_the_recomputed_modules() -> None:
    from trainlint.estimator.performance import hardware_flops_per_step

    base = _moe(recompute="selective", ffn=8192, moe_interval=2)
    assert hardware_flops_per_step(dataclasses.replace(base, recompute_modules=("core_attn", "mlp", "moe"))) > \
        hardware_flops_per_step(base) > hardware_flops_per_step(dataclasses.replace(base, recompute_modules=("moe_act",)))


def test_expandable_segments_are_read_and_leave_no_fragmentation() -> None:
    """An exported PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is an engine fact of the launch; under it the
    allocator unmaps free blocks' pages before it raises out-of-memory, so no fragmentation is charged."""
    from trainlint.estimator.memory import one_stage

    launch = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 8 "
              "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --bf16\n")
    for text, expected in ((launch, None),
                           ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n" + launch,
                            "expandable_segments:True")):
        (spec,) = MegatronAdapter().load(SourceText(str(Path("inline.sh").resolve()), text), LoadContext()).specs
        got = spec.engine.cuda_alloc_conf
        assert (got.value if got is not None else None) == expected
    base = _moe(recompute="full")  # lifetimes interleave: fragmentation charged without expandable segments
    fixed = one_stage(base, 0, base.layers)
    expandable = one_stage(dataclasses.replace(base, expandable_segments=True), 0, base.layers)
    assert fixed.detail["fragmentation"] > 0 and expandable.detail["fragmentation"] == 0.0
    assert expandable.total == pytest.approx(fixed.total - fixed.detail["fragmentation"], rel=1e-12)
