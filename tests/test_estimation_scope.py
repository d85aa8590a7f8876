"""Which runs the estimation rules judge: a run the estimator does not model gets one TL900
saying why, and no TL2xx-TL4xx finding built on a misleading estimate."""

from __future__ import annotations

from trainlint.provenance import Origin, Provenance, Value
from trainlint.rules import RuleContext
from trainlint.rules.estimation.availability import EstimateUnavailable
from trainlint.rules.estimation.scope import unmodelled, usable_estimate
from trainlint.spec import TrainingSpec

FILE = Provenance(Origin.FILE, path="train.sh", key="flag")


class _Made:
    ok = True


def _spec(entry: str = "pretrain_gpt.py", **settings: object) -> TrainingSpec:
    spec = TrainingSpec(framework="megatron", path="train.sh", entry_point=entry)
    spec.settings = {k: Value(v, FILE) for k, v in settings.items()}
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


def test_generation_and_export_entry_points_are_not_estimated_as_training():
    from trainlint.rules.estimation.scope import unmodelled
    from trainlint.spec import TrainingSpec

    for entry in ("tools/run_text_generation_server.py", "examples/export/ptq_and_trtllm_export/text_generation_ptq.py",
                  "examples/detxoify_lm/generate_samples_gpt.py", "examples/inference/gpt/gpt_dynamic_inference.py",
                  "examples/mimo/train.py"):
        assert unmodelled(TrainingSpec("megatron", "x.sh", entry_point=entry)), entry
    for entry in ("pretrain_gpt.py", "examples/multimodal/../../pretrain_gpt.py", "finetune.py", None):
        assert not unmodelled(TrainingSpec("megatron", "x.sh", entry_point=entry)), entry
