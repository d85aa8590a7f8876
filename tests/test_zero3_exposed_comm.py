"""ZeRO-3 communication is never fully hidden, and the same run in two formats costs the same.

DeepSpeed ZeRO-3 gathers each module's parameters in its pre-forward (and pre-backward) hook and
prefetches only the modules after it (deepspeed/runtime/zero/partitioned_param_coordinator.py), and
reduce-scatters the last gradient bucket after the backward ends (stage3.py
independent_gradient_partition_epilogue): at least one layer's all-gather and one layer's
reduce-scatter per micro-batch are exposed, however much compute there is to hide the rest behind.
Before this, an HF Trainer ZeRO-3 run on 8 GPUs showed dp_comm 0.0 ms."""

from __future__ import annotations

import json

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths
from trainlint.estimator import build_context, estimate
from trainlint.estimator import coefficients as C

HF_JSON = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
           "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3, "overlap_comm": True}}
PLAIN_JSON = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
              "bf16": {"enabled": True}, "zero_optimization": {"stage": 3, "overlap_comm": True}}
HF_RUN = ("deepspeed --num_gpus 8 train.py --deepspeed ds_z3.json --per_device_train_batch_size 4 "
          "--gradient_accumulation_steps 2 --bf16 True\n")


def _estimate(path, **kw):
    (result,) = check_paths([str(path)], builtin_adapters())
    (spec,) = result.specs
    return estimate(spec, build_context(spec, model="llama2-7b", gpu="h100-sxm", **kw))


def test_hf_trainer_zero3_on_8_gpus_has_exposed_dp_comm_and_matches_plain_json(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "ds_z3.json").write_text(json.dumps(HF_JSON))
    (tmp_path / "run.sh").write_text(HF_RUN)
    (tmp_path / "plain.json").write_text(json.dumps(PLAIN_JSON))
    hf = _estimate(tmp_path / "run.sh")
    plain = _estimate(tmp_path / "plain.json", nodes=1, gpus_per_node=8)
    assert hf.ok and plain.ok
    i = hf.inputs
    assert (i.dp, i.shard_stage, i.micro, i.grad_accum) == (8, 3, 4, 2)
    # the floor is two collectives per micro-batch, each at least NCCL's fixed latency
    assert hf.time.dp_comm >= i.grad_accum * 2 * C.COLLECTIVE_LATENCY_S
    assert abs(hf.time.dp_comm - plain.time.dp_comm) <= 1e-9 * max(1.0, plain.time.dp_comm)
    assert abs(hf.step_time - plain.step_time) <= 1e-9 * plain.step_time
