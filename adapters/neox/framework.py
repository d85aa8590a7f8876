"""GPT-NeoX as a :class:`trainlint.core.framework.Framework`: a Megatron front end on DeepSpeed's engine
(NeoX's own model code, DeepSpeed's optimizer and pipeline engine), read from its YAML files."""

from __future__ import annotations

from typing import Any, Sequence

from trainlint.adapters.deepspeed.framework import bf16_accum_guard, deepspeed_batch_changes
from trainlint.core.framework import (
    KeyCatalog,
    CAP_STARTUP_CHECKS,
    CAP_DEEPSPEED_ENGINE,
    CAP_MEGATRON_MODEL,
    CAP_NEOX_ARGUMENTS,
    Framework,
    ModelParallel,
    PipelineEngine,
    SearchPolicy,
)
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec
from trainlint.core.values import as_bool, as_int

_CAPABILITIES = frozenset({CAP_MEGATRON_MODEL, CAP_DEEPSPEED_ENGINE, CAP_NEOX_ARGUMENTS, CAP_STARTUP_CHECKS})

_KEYS = {
    "parallel.tensor": "model_parallel_size",
    "parallel.sequence_parallel": "sequence_parallel",
    "parallel.zero_stage": "zero_optimization.stage",
    "batch.micro_batch": "train_micro_batch_size_per_gpu",
    "batch.grad_accum": "gradient_accumulation_steps",
    "batch.global_batch": "train_batch_size",
    "memory.recompute_num_layers": "checkpoint_num_layers",
}
NOTE = "trainlint suggest"


class NeoXFramework(Framework):
    name = "neox"
    title = "GPT-NeoX"
    repository = "EleutherAI/gpt-neox"
    catalog_family = "neox"
    source_markers = ("megatron/neox_arguments/neox_args.py",)
    source_rank = 1
    import_name = "megatron"  # NeoX installs its code as the `megatron` package
    pin_names = ("neox",)
    setting_example = 'framework = {{neox = "<path to the checkout, or v2.0 / main>"}}'
    launch_kinds = ("neox",)
    shows_zero = True
    change_settings = _KEYS

    def adapters(self) -> list:
        from trainlint.adapters.neox.detect import NeoXAdapter

        return [NeoXAdapter()]

    def key_catalog(self, target: Any = None) -> KeyCatalog:
        from trainlint.adapters.neox.release_keys import NeoXReleaseKeys
        from trainlint.frameworks.keys import key_catalog_for

        # a release's catalog answers with its own schema: exactly the keys the release defines
        return key_catalog_for(self.catalog_family, self.schema_name(), target, NeoXReleaseKeys)

    def rules(self) -> Sequence[str | type]:
        # GPT-NeoX's own start-up checks, by name: the rules layer sits above the frameworks
        return ("trainlint.rules.startup.neox",)

    def capabilities(self, spec: TrainingSpec) -> frozenset[str]:
        return _CAPABILITIES

    def set_engine(self, spec: TrainingSpec) -> None:
        from trainlint.adapters.neox.reader import set_engine

        set_engine(spec)

    def model_parallel_product(self, spec: TrainingSpec) -> ModelParallel | None:
        # pipe_parallel_size x model_parallel_size, each clamped to >= 1
        # (megatron/neox_arguments/arguments.py, calculate_derived)
        p = spec.parallel
        mp, pp = as_int(p.tensor), as_int(p.pipeline)
        if mp is None or pp is None:
            return None
        mp, pp = max(mp, 1), max(pp, 1)
        return (mp * pp, f"pipe_parallel_size {pp} x model_parallel_size {mp}",
                ((p.pipeline, f"pipeline stages {pp}"), (p.tensor, f"model_parallel_size {mp}")))

    def pipeline_engine(self, spec: TrainingSpec) -> PipelineEngine | None:
        p = spec.parallel
        if not as_bool(p.pipeline_engine):
            return None
        # engaged: pipe_parallel_size >= 1, which the adapter takes as parallel.pipeline as written
        pp_value = as_int(p.pipeline)
        return PipelineEngine(
            f"pipe_parallel_size {pp_value} >= 1 wraps the model in DeepSpeed's PipelineEngine "
            "(is_pipe_parallel = pipe_parallel_size >= 1, megatron/neox_arguments/arguments.py)",
            p.pipeline, pp_value, pp_value == 1)

    def zero_is_layout(self, spec: TrainingSpec) -> bool:
        return True

    def sequence_parallel_switch(self, spec: TrainingSpec) -> bool:
        return True

    def gradient_overlap_setting(self) -> str | None:
        return "zero_optimization.overlap_comm"

    def recompute_layers_written(self, spec: TrainingSpec) -> int | None:
        # as written, else NeoX's default checkpoint_num_layers of 1
        entry = spec.settings.get("checkpoint_num_layers")
        value = entry.value if entry is not None else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 1

    def search_policy(self, spec: TrainingSpec, inputs: Any, searchable: set[str],
                      expressible: frozenset[str] = frozenset()) -> SearchPolicy:
        engine = spec.parallel.pipeline_engine
        return SearchPolicy(
            recompute=("none", "full"),
            zero=[0, 1] if inputs.experts > 1 else [0, 1, 2, 3],  # NeoX refuses MoE with ZeRO 2/3 (TL111)
            sp_policy="keep", pipeline_engine="switch",
            current_pipeline_engine=bool(engine.value) if engine is not None else inputs.pp > 1,
            bf16_accum_guard=bf16_accum_guard(spec, inputs))

    def layout_changes(self, spec: TrainingSpec, cur: Any, new: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if new.pp == 1 and (new.pp != cur.pp or bool(new.pipeline_engine) != bool(cur.pipeline_engine)):
            out["parallel.pipeline_engine"] = bool(new.pipeline_engine)
        out.update(super().layout_changes(spec, cur, new))
        return out

    def batch_changes(self, spec: TrainingSpec, cur: tuple[Any, Any, Any], new: tuple[Any, Any, Any],
                      dp: Any) -> dict[str, Any]:
        # NeoX's accumulation defaults to 1 whatever train_batch_size says: always written
        return deepspeed_batch_changes(spec, cur, new, accumulation_always=True)

    def recompute_changes(self, spec: TrainingSpec, base: Any, cur: Any, new: Any, full_layers: Any) -> dict[str, Any]:
        out = super().recompute_changes(spec, base, cur, new, full_layers)
        if new.recompute == "full":
            _, layers, keep = full_layers(new.pp)
            if not keep:
                out["memory.recompute_num_layers"] = layers
        return out

    def candidate_fixups(self, out: TrainingSpec, new: Any) -> None:
        engine = new.pp > 1 or bool(new.pipeline_engine)
        out.parallel.pipeline_engine = Value(engine, Provenance(Origin.DERIVED, note=f"{NOTE}: pipe_parallel_size"))

    def mirror_settings(self, out: TrainingSpec, base: Any, changes: dict[str, Any], new: Any, set_setting: Any) -> None:
        super().mirror_settings(out, base, changes, new, set_setting)
        if "parallel.pipeline" in changes or "parallel.pipeline_engine" in changes:
            set_setting(out, "pipe_parallel_size", new.pp if new.pp > 1 else (1 if new.pipeline_engine else 0))
        if "memory.recompute" in changes:
            set_setting(out, "checkpoint_activations", changes["memory.recompute"] == "full")
        if "parallel.zero_stage" in changes:
            section = out.settings.get("zero_optimization")
            if section is not None and isinstance(section.value, dict):
                out.settings["zero_optimization"] = Value({**section.value, "stage": changes["parallel.zero_stage"]},
                                                          section.provenance)

    def read_launch(self, launch: Any, adapters: Sequence[Any], environment: dict[str, str], frameworks: Any) -> list[Any]:
        # deepy.py's YAML files, merged in order as one run
        from trainlint.adapters.launch.command_line import read_neox_launch

        return [read_neox_launch(launch, adapters, environment, frameworks)]

    def argument_files(self, read: Any, listing: Any, marker: str) -> tuple[dict[str, str], dict[str, str]] | None:
        from trainlint.frameworks.catalog import MAX_DEPENDENCIES

        main: dict[str, str] = {}
        for p in listing("megatron/neox_arguments")[:MAX_DEPENDENCIES]:
            text = read(p) if p.endswith(".py") else None
            if text is not None:
                main[p] = text
        return main, {}

    def scan_arguments(self, main: dict[str, str], classes: dict[str, str]) -> Any:
        from trainlint.frameworks.argscan import scan_neox

        return scan_neox(main)

    def schema_name(self) -> str | None:
        return "neox"

    def values_as_json(self) -> bool:
        return True
