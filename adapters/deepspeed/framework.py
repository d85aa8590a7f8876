"""DeepSpeed as a :class:`trainlint.core.framework.Framework`: a DeepSpeed JSON on its own, and the
formats that hand one to DeepSpeed's engine (the HF Trainer's YAML and launch lines, accelerate's
config). The HF Trainer and accelerate are not frameworks of their own: the step they run is
DeepSpeed's engine with DeepSpeed's config keys, so their runs are DeepSpeed runs
(``TrainingSpec.framework == "deepspeed"``) read by more adapters."""

from __future__ import annotations

from typing import Any, Sequence

from trainlint.core.framework import (
    KeyCatalog,
    CAP_STARTUP_CHECKS,
    CAP_DEEPSPEED_CONFIG,
    CAP_DEEPSPEED_ENGINE,
    Framework,
    PipelineEngine,
    SearchPolicy,
    written,
)
from trainlint.core.spec import TrainingSpec
from trainlint.core.values import as_bool, as_int

_CAPABILITIES = frozenset({CAP_DEEPSPEED_ENGINE, CAP_DEEPSPEED_CONFIG, CAP_STARTUP_CHECKS})

_KEYS = {
    "parallel.zero_stage": "zero_optimization.stage",
    "parallel.tensor": "tensor_parallel.autotp_size",
    "parallel.pipeline": "pipeline.stages",
    "batch.micro_batch": "train_micro_batch_size_per_gpu",
    "batch.grad_accum": "gradient_accumulation_steps",
    "batch.global_batch": "train_batch_size",
}


def deepspeed_batch_changes(spec: TrainingSpec, cur: tuple[Any, Any, Any], new: tuple[Any, Any, Any],
                            accumulation_always: bool) -> dict[str, Any]:
    """DeepSpeed's batch keys: it derives a missing accumulation from ``train_batch_size``
    (``accumulation_always``: a front end whose default is 1 whatever the global batch, GPT-NeoX,
    always needs it written)."""
    (cur_micro, cur_accum, cur_global), (micro, accum, global_batch) = cur, new
    out: dict[str, Any] = {}
    if micro != cur_micro:
        out["batch.micro_batch"] = micro
    gas_written = written(spec, "batch.grad_accum")
    tbs_written = written(spec, "batch.global_batch")
    if accum != cur_accum and (accumulation_always or gas_written or not tbs_written):
        out["batch.grad_accum"] = accum
    if global_batch != cur_global and (tbs_written or "batch.grad_accum" not in out):
        out["batch.global_batch"] = global_batch
    return out


def bf16_accum_guard(spec: TrainingSpec, inputs: Any) -> bool:
    """bf16 on DeepSpeed's pipeline engine without fp32 gradient accumulation (TL134, TL180)."""
    return inputs.dtype == "bf16" and str(spec.value("precision.grad_accum_dtype") or "").lower() \
        not in ("fp32", "float32", "float")


class DeepSpeedFramework(Framework):
    name = "deepspeed"
    title = "DeepSpeed"
    repository = "deepspeedai/DeepSpeed"
    catalog_family = "deepspeed"
    source_markers = ("deepspeed/runtime/config.py",)
    source_rank = 2
    import_name = "deepspeed"
    pin_names = ("deepspeed",)
    setting_example = 'framework = {{deepspeed = "<path to the checkout, or a release such as 0.14.0>"}}'
    launch_kinds = ("deepspeed",)
    shows_zero = True
    change_settings = _KEYS

    def adapters(self) -> list:
        from trainlint.adapters.deepspeed.adapter import DeepSpeedAdapter
        from trainlint.adapters.hf.launch_script import HFLaunchScriptAdapter
        from trainlint.adapters.hf.trainer_yaml import HFTrainerYamlAdapter

        return [DeepSpeedAdapter(), HFTrainerYamlAdapter(), HFLaunchScriptAdapter()]

    def key_catalog(self, target: Any = None) -> KeyCatalog:
        from trainlint.frameworks.keys import key_catalog_for

        return key_catalog_for(self.catalog_family, self.schema_name(), target)

    def rules(self) -> Sequence[str | type]:
        # DeepSpeed's own start-up checks, by name: the rules layer sits above the frameworks
        return ("trainlint.rules.startup.deepspeed",)

    def capabilities(self, spec: TrainingSpec) -> frozenset[str]:
        return _CAPABILITIES

    def set_engine(self, spec: TrainingSpec) -> None:
        from trainlint.adapters.deepspeed.adapter import set_engine

        set_engine(spec)

    def pipeline_engine(self, spec: TrainingSpec) -> PipelineEngine | None:
        # A DeepSpeed JSON: the engine is chosen by the model class in code (PipelineModule); the
        # config says so when it gives pipeline stages > 1, or when the spec says it explicitly.
        p = spec.parallel
        stages = as_int(p.pipeline)
        explicit = as_bool(p.pipeline_engine)
        if explicit:
            return PipelineEngine("the run uses DeepSpeed's PipelineEngine", p.pipeline_engine, stages, False)
        if explicit is None and stages is not None and stages > 1:
            return PipelineEngine(f"pipeline.stages {stages}: the model is a PipelineModule run by DeepSpeed's "
                                  "PipelineEngine", p.pipeline, stages, False)
        return None

    def zero_is_layout(self, spec: TrainingSpec) -> bool:
        return True

    def gradient_overlap_setting(self) -> str | None:
        return "zero_optimization.overlap_comm"

    def search_policy(self, spec: TrainingSpec, inputs: Any, searchable: set[str],
                      expressible: frozenset[str] = frozenset()) -> SearchPolicy:
        return SearchPolicy(zero=[0, 1, 2, 3], pipeline_engine="stages", bf16_accum_guard=bf16_accum_guard(spec, inputs))

    def batch_changes(self, spec: TrainingSpec, cur: tuple[Any, Any, Any], new: tuple[Any, Any, Any],
                      dp: Any) -> dict[str, Any]:
        return deepspeed_batch_changes(spec, cur, new, accumulation_always=False)

    def recompute_changes(self, spec: TrainingSpec, base: Any, cur: Any, new: Any, full_layers: Any) -> dict[str, Any]:
        return {}  # activation checkpointing is the training script's, not the JSON's

    def read_launch(self, launch: Any, adapters: Sequence[Any], environment: dict[str, str], frameworks: Any) -> list[Any]:
        # the DeepSpeed JSON (or accelerate's inline settings) with the launcher's world size
        from trainlint.adapters.launch.command_line import read_deepspeed_launch

        return [read_deepspeed_launch(launch, frameworks)]

    def argument_files(self, read: Any, listing: Any, marker: str) -> tuple[dict[str, str], dict[str, str]] | None:
        from trainlint.frameworks.catalog import MAX_DEPENDENCIES

        main: dict[str, str] = {}
        for p in listing("deepspeed"):
            name = p.rsplit("/", 1)[-1]
            if name not in ("config.py", "constants.py", "config_utils.py") and not name.endswith("_config.py"):
                continue
            text = read(p)
            if text is not None:
                main[p] = text
            if len(main) >= MAX_DEPENDENCIES * 4:
                break
        return main, {}

    def scan_arguments(self, main: dict[str, str], classes: dict[str, str]) -> Any:
        from trainlint.frameworks.argscan import scan_deepspeed

        return scan_deepspeed(main)

    def checkout_version(self, read: Any) -> str | None:
        text = read("version.txt")
        return text.strip() if text and len(text) < 64 else None

    def schema_name(self) -> str | None:
        return "deepspeed"

    def values_as_json(self) -> bool:
        return True
