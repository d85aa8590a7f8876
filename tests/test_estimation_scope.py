"""Which runs the estimation rules judge: a run the estimator does not model gets one TL900
saying why, and no TL2xx-TL4xx finding built on a misleading estimate."""

from __future__ import annotations

from trainlint.adapters.megatron.spec_build import framework_facts
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.rules import RuleContext
from trainlint.rules.estimation.estimate_unavailable import EstimateUnavailable
from trainlint.rules.estimation.scope import unmodelled, usable_estimate
from trainlint.core.spec import TrainingSpec

FILE = Provenance(Origin.FILE, path="train.sh", key="flag")


class _Made:
    ok = True


def _spec(entry: str = "pretrain_gpt.py", **settings: object) -> TrainingSpec:
    spec = TrainingSpec(framework="megatron", path="train.sh", entry_point=entry)
    spec.settings = {k: Value(v, FILE) for k, v in settings.items()}
    framework_facts(spec)  # the adapter's typed fields from those settings, as a read file gets them
    return spec


def test_a_plain_gpt_run_is_modelled():
    assert unmodelled(_spec()) == []
    assert usable_estimate(_spec(), _Made()) is not None


def test_hybrid_frozen_and_multimodal_runs_are_not():
    assert [u.setting for u in unmodelled(_spec(hybrid_layer_pattern="M*M*"))] == ["--hybrid-layer-pattern"]
    assert [u.setting for u in unmodelled(_spec("examples/multimodal/train.py", freeze_LM=True))] == [
        "--freeze-LM", "examples/multimodal/train.py"]
    assert unmodelled(_spec(freeze_LM=False)) == []
    assert usable_estimate(_spec("pretrain_vlm.py"), _Made()) is None


def test_tl900_says_what_is_not_modelled():
    findings = list(EstimateUnavailable().check(_spec(hybrid_layer_pattern="M*"), RuleContext(estimate=_Made())))
    assert len(findings) == 1 and "--hybrid-layer-pattern" in findings[0].message
    assert list(EstimateUnavailable().check(_spec(), RuleContext(estimate=_Made()))) == []


# --------------------------------------------------------------- not training, unmodelled architectures

def test_generation_evaluation_and_conversion_entry_points_do_not_train():
    for entry in ("tools/run_text_generation_server.py", "tools/generate_samples_gpt.py", "./tasks/main.py",
                  "./tasks/msdp/main.py", "examples/inference/gpt/gpt_dynamic_inference.py",
                  "examples/export/ptq_and_trtllm_export/text_generation_ptq.py", "tools/checkpoint/convert.py",
                  "examples/post_training/modelopt/quantize.py", "examples_deepspeed/data_efficiency/analyze_data.py",
                  "tools/preprocess_data.py", "tools/preprocess_data_many_cores.py"):
        gaps = unmodelled(_spec(entry))
        assert gaps and not gaps[0].training, entry
    for entry in ("pretrain_gpt.py", "examples/post_training/modelopt/finetune.py", "train.py"):
        assert all(g.training for g in unmodelled(_spec(entry))), entry


def test_tl900_says_a_generation_server_is_not_training_even_when_an_estimate_is_made():
    (finding,) = EstimateUnavailable().check(_spec("tools/run_text_generation_server.py"), RuleContext(estimate=_Made()))
    assert "does not train" in finding.message


def test_encoder_and_encoder_decoder_models_are_not_modelled():
    for arch in ("bert", "t5", "mamba"):
        spec = _spec("pretrain_x.py")
        spec.model.architecture = Value(arch, FILE)
        assert unmodelled(spec) and usable_estimate(spec, _Made()) is None
    spec = _spec()
    spec.model.architecture = Value("gpt", FILE)
    assert unmodelled(spec) == []


def test_estimate_prints_no_training_estimate_for_a_text_generation_server(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 tools/run_text_generation_server.py --num-layers 32 "
                      "--hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 "
                      "--micro-batch-size 1 --tensor-model-parallel-size 1 --bf16 --tokenizer-type GPT2BPETokenizer\n")
    out = subprocess.run([sys.executable, "-m", "trainlint", "estimate", "--isolated", str(script)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "Memory per GPU" not in out.stdout and "does not train" in out.stdout


# ------------------------------------------------------------------------ an assumed world size

ARGS_ONLY = ("#!/bin/bash\nMODEL_ARGS=(\n  --num-layers 32 --hidden-size 4096 --num-attention-heads 32\n"
             "  --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 64\n"
             "  --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --bf16\n)\n")


def test_a_world_size_nothing_states_is_assumed_and_stated_and_rules_stay_silent(tmp_path):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths
    from trainlint.estimator import build_context, estimate

    path = tmp_path / "args.sh"
    path.write_text(ARGS_ONLY)
    (result,) = check_paths([str(path)], builtin_adapters())
    (spec,) = result.specs
    est = estimate(spec, build_context(spec))
    assert est.ok and est.inputs.world == 8 and est.inputs.dp == 1  # one node of 8, TP 2 x PP 4 = 8
    (world,) = [a for a in est.assumptions if a.field == "cluster.world_size"]
    assert world.origin == "assumed" and "--nodes" in world.source
    assert usable_estimate(spec, est) is None
    (finding,) = EstimateUnavailable().check(spec, RuleContext(estimate=est))
    assert "not stated" in finding.message and "--nodes" in finding.message
    est = estimate(spec, build_context(spec, nodes=2))
    assert est.inputs.world == 16 and usable_estimate(spec, est) is est


def test_neox_without_a_hostfile_runs_on_one_node():
    # global_num_gpus = torch.cuda.device_count() without a hostfile (neox_arguments/arguments.py, calculate_derived)
    from trainlint.adapters.base import LoadContext
    from trainlint.adapters.neox.detect import NeoXAdapter
    from trainlint.files.sources import SourceText

    base = "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\n"
    (spec,) = NeoXAdapter().load(SourceText("/x/run.yml", base), LoadContext()).specs
    assert spec.cluster.nodes.value == 1 and spec.cluster.nodes.provenance.origin is Origin.DEFAULT
    (spec,) = NeoXAdapter().load(SourceText("/x/run.yml", base + "hostfile: /job/hosts\n"), LoadContext()).specs
    assert spec.cluster.nodes is None


def test_neox_one_node_of_unstated_gpus_is_an_assumed_world():
    from trainlint.adapters.base import LoadContext
    from trainlint.adapters.neox.detect import NeoXAdapter
    from trainlint.estimator import build_context, estimate
    from trainlint.estimator.inputs import world_assumed
    from trainlint.files.sources import SourceText

    base = ("num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\n"
            "train_micro_batch_size_per_gpu: 1\n")
    (spec,) = NeoXAdapter().load(SourceText("/x/run.yml", base), LoadContext()).specs
    est = estimate(spec, build_context(spec))
    assert est.ok and est.inputs.world == 8 and world_assumed(est)
    est = estimate(spec, build_context(spec, gpus_per_node=4))
    assert est.inputs.world == 4 and not world_assumed(est)
    (spec,) = NeoXAdapter().load(SourceText("/x/run.yml", base + "num_gpus: 2\n"), LoadContext()).specs
    est = estimate(spec, build_context(spec))
    assert est.inputs.world == 2 and not world_assumed(est)


def test_generation_and_export_entry_points_are_not_estimated_as_training():
    from trainlint.rules.estimation.scope import unmodelled
    from trainlint.core.spec import TrainingSpec

    for entry in ("tools/run_text_generation_server.py", "examples/export/ptq_and_trtllm_export/text_generation_ptq.py",
                  "examples/detxoify_lm/generate_samples_gpt.py", "examples/inference/gpt/gpt_dynamic_inference.py",
                  "examples/mimo/train.py"):
        assert unmodelled(TrainingSpec("megatron", "x.sh", entry_point=entry)), entry
    for entry in ("pretrain_gpt.py", "examples/multimodal/../../pretrain_gpt.py", "finetune.py", None):
        assert not unmodelled(TrainingSpec("megatron", "x.sh", entry_point=entry)), entry


def test_a_layout_value_known_only_at_launch_is_not_estimated_with_the_default():
    from trainlint.adapters.base import LoadContext
    from trainlint.adapters.megatron.detect import MegatronAdapter
    from trainlint.rules.estimation.scope import unmodelled
    from trainlint.files.sources import SourceText

    text = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 80 --hidden-size 8192 --num-attention-heads 64 "
            "--seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 1024 "
            "--tensor-model-parallel-size $SLURM_GPUS_PER_NODE\n")
    spec = MegatronAdapter().load(SourceText("t.sh", text), LoadContext()).specs[0]
    assert [u.setting for u in unmodelled(spec)] == ["--tensor-model-parallel-size"]
    known = MegatronAdapter().load(SourceText("t.sh", text.replace("$SLURM_GPUS_PER_NODE", "8")), LoadContext()).specs[0]
    assert unmodelled(known) == []


def test_a_model_config_that_states_another_models_arguments_is_not_estimated_as_gpt(tmp_path):
    # Megatron-LM's CI model_config.yaml names no entry point; --decoder-num-layers (T5's decoder),
    # --bert-no-binary-head (BERT) and --img-h (a vision encoder) say which model it trains.
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths

    base = ("MODEL_ARGS:\n  --num-layers: 12\n  --hidden-size: 768\n  --num-attention-heads: 12\n"
            "  --seq-length: 512\n  --max-position-embeddings: 512\n  --micro-batch-size: 4\n")
    for extra, flag in (("  --encoder-num-layers: 12\n  --decoder-num-layers: 12\n", "--decoder-num-layers"),
                        ("  --bert-no-binary-head: true\n", "--bert-no-binary-head"),
                        ("  --img-h: 336\n  --img-w: 336\n", "--img-h"), ("", None)):
        path = tmp_path / "model_config.yaml"
        path.write_text(base + extra)
        (result,) = check_paths([str(path)], builtin_adapters())
        (spec,) = result.specs
        assert [u.setting for u in unmodelled(spec)] == ([flag] if flag else []), extra


def test_a_functional_test_yaml_in_inference_mode_is_not_training(tmp_path):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths

    body = ("MODEL_ARGS:\n  --num-layers: 12\n  --hidden-size: 768\n  --num-attention-heads: 12\n"
            "  --seq-length: 512\n  --max-position-embeddings: 512\n  --micro-batch-size: 4\n")
    for mode, training in (("MODE: inference\n", False), ("MODE: pretraining\n", True), ("", True)):
        path = tmp_path / "model_config.yaml"
        path.write_text(mode + body)
        (result,) = check_paths([str(path)], builtin_adapters())
        (spec,) = result.specs
        gaps = unmodelled(spec)
        assert (not gaps or gaps[0].training) == training, mode
        if not training:
            assert "inference" in gaps[0].why and spec.run.mode.provenance.span.line == 1
