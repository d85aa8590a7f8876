"""The batch a Megatron-LM v1.1.5 + DeepSpeed run trains with (DeepSpeedExamples' vendored copy).

Megatron v1.1.5 has no --global-batch-size and no global-batch assertion: its data loader feeds
--batch-size per GPU x data-parallel size each iteration. DeepSpeed's engine derives its own micro
batch from the JSON's train_batch_size (deepspeed/runtime/config.py _set_batch_related_parameters:
micro = train_batch // world // accumulation, world = dist world / mpu model-parallel size) and only
asserts its own triple (_batch_assertion). So 2048 in the JSON next to --batch-size 9 on 8 GPUs with
model parallel 4 is not refused by either framework: the estimate runs at 9 x 1 x DP 2 = 18. A JSON
whose own triple fails (2047 / DP 2) is refused by DeepSpeed, and the estimator says so."""

from __future__ import annotations

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths
from trainlint.estimator import build_context, estimate

SCRIPT = ("deepspeed --num_gpus 8 pretrain_gpt2.py --model-parallel-size 4 \\\n"
          "  --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --batch-size 9 \\\n"
          "  --seq-length 1024 --max-position-embeddings 1024 --fp16 \\\n"
          "  --deepspeed --deepspeed_config ds.json\n")


def _estimate(tmp_path, train_batch: int):
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.sh").write_text(SCRIPT)
    (tmp_path / "ds.json").write_text(f'{{"train_batch_size": {train_batch}, "gradient_accumulation_steps": 1}}')
    (result,) = check_paths([str(tmp_path / "train.sh")], builtin_adapters())
    (spec,) = result.specs
    assert spec.dialect == "legacy"
    return estimate(spec, build_context(spec, gpu="h100-sxm"))


def test_json_train_batch_does_not_refuse_the_megatron_v1_batch(tmp_path):
    est = _estimate(tmp_path, 2048)
    assert est.ok, est.missing
    assert (est.inputs.micro, est.inputs.grad_accum, est.inputs.dp, est.inputs.global_batch) == (9, 1, 2, 18)
    (gb,) = [a for a in est.assumptions if a.field == "batch.global_batch"]
    assert "2048" in gb.source and "--batch-size 9" in gb.source


def test_a_json_triple_deepspeed_refuses_is_refused(tmp_path):
    est = _estimate(tmp_path, 2047)
    assert not est.ok
    (miss,) = [m for m in est.missing if m.field == "batch"]
    assert "2047" in miss.what and "DeepSpeed refuses" in miss.what
