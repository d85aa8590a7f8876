"""Unit tests for the shared launch-rule helpers (linter/rules/startup/derive.py) and for TL112,
whose failing cases need a declared target GPU (spec.cluster.gpu or `gpu` in the project config)
that an --isolated golden run cannot give yet."""

from __future__ import annotations

from trainlint.project.config import ProjectConfig
from trainlint.core.project_settings import EstimationSettings
from trainlint.core.provenance import Origin, Provenance, Value, default, from_file
from trainlint.rules import RuleContext
from trainlint.rules.startup.precision_unsupported_gpu import PrecisionUnsupportedGPU
from trainlint.rules.startup.derive import data_parallel, pipeline_engine
from trainlint.core.spec import TrainingSpec


def _v(value, line=1):
    from trainlint.core.positions import Span

    return from_file(value, "x", Span(line, 1, line, 2), "k")


def test_data_parallel_per_framework() -> None:
    mg = TrainingSpec("megatron", "x")
    mg.cluster.world_size = _v(32)
    mg.parallel.tensor, mg.parallel.pipeline, mg.parallel.context = _v(2), _v(2), _v(2)
    assert data_parallel(mg).size == 4
    nx = TrainingSpec("neox", "x")
    nx.cluster.world_size = _v(16)
    nx.parallel.tensor, nx.parallel.pipeline = _v(2), _v(0)  # NeoX clamps pp 0 to 1
    assert data_parallel(nx).size == 8
    ds = TrainingSpec("deepspeed", "x")
    assert data_parallel(ds) is None  # a bare JSON has no world size: never guessed


def test_neox_pipeline_engine_at_one_stage() -> None:
    nx = TrainingSpec("neox", "x")
    nx.parallel.pipeline = _v(1)
    nx.parallel.pipeline_engine = _v(True)
    nx.settings["pipe_parallel_size"] = _v(1)
    engine = pipeline_engine(nx)
    assert engine is not None and engine.only_wrapper
    nx.parallel.pipeline_engine = _v(False)
    assert pipeline_engine(nx) is None


def _bf16_spec(framework: str) -> TrainingSpec:
    spec = TrainingSpec(framework, "x")
    spec.precision.dtype = _v("bf16", 3)
    spec.precision.bf16_enabled = _v(True, 3)
    return spec


def test_tl112_bf16_on_v100_from_spec() -> None:
    spec = _bf16_spec("deepspeed")
    spec.cluster.gpu = Value("v100-32gb", Provenance(Origin.CLI, note="--gpu v100-32gb"))
    findings = list(PrecisionUnsupportedGPU().check(spec, RuleContext()))
    assert len(findings) == 1 and "not supported on your device" in findings[0].message


def test_tl112_fp8_on_a100_from_project_config() -> None:
    spec = TrainingSpec("megatron", "x")
    spec.precision.dtype = _v("bf16")
    spec.precision.fp8 = _v("hybrid", 2)
    ctx = RuleContext(project=ProjectConfig(estimation=EstimationSettings(gpu="a100-80gb")))
    findings = list(PrecisionUnsupportedGPU().check(spec, ctx))
    assert [f.message.split(" ")[0] for f in findings] == ["FP8"]


def test_tl112_silent_without_declared_gpu() -> None:
    spec = _bf16_spec("neox")
    spec.cluster.gpu = Value("v100-32gb", Provenance(Origin.ASSUMED, note="assumed"))
    assert list(PrecisionUnsupportedGPU().check(spec, RuleContext())) == []
    spec.cluster.gpu = default("h100-sxm", "x")
    assert list(PrecisionUnsupportedGPU().check(spec, RuleContext())) == []
