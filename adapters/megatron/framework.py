"""Megatron-LM (and the Megatron-DeepSpeed fork, and old DeepSpeed-integrated copies) as a
:class:`trainlint.core.framework.Framework`: its engine semantics, its layout search space and how a
layout change is written in its flags, its ``trainlint run`` launch form and its own start-up rules."""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Sequence

from trainlint.core.framework import (
    KeyCatalog,
    CAP_STARTUP_CHECKS,
    CAP_MEGATRON_ARGUMENTS,
    CAP_MEGATRON_CORE,
    CAP_MEGATRON_MODEL,
    Framework,
    ModelParallel,
    PipelineEngine,
    SearchPolicy,
    written,
)
from trainlint.core.spec import MEGATRON_LM, TrainingSpec
from trainlint.core.values import as_bool, as_int, as_str

_CAPABILITIES = frozenset({CAP_MEGATRON_MODEL, CAP_MEGATRON_CORE, CAP_MEGATRON_ARGUMENTS, CAP_STARTUP_CHECKS})

# layout change key -> Megatron-LM argparse destination (what re-reading the rewritten script gives)
_DESTS = {
    "parallel.tensor": "tensor_model_parallel_size",
    "parallel.pipeline": "pipeline_model_parallel_size",
    "parallel.context": "context_parallel_size",
    "parallel.sequence_parallel": "sequence_parallel",
    "parallel.distributed_optimizer": "use_distributed_optimizer",
    "batch.micro_batch": "micro_batch_size",
    "batch.global_batch": "global_batch_size",
    "memory.recompute_method": "recompute_method",
    "memory.recompute_num_layers": "recompute_num_layers",
}
# Megatron-DeepSpeed: the --deepspeed_config JSON's batch keys, merged into the settings with a prefix
_DS_BATCH = {"batch.micro_batch": "train_micro_batch_size_per_gpu", "batch.grad_accum": "gradient_accumulation_steps",
             "batch.global_batch": "train_batch_size"}
DEEPSPEED_PREFIX = "deepspeed:"
# Entry points that train a vision encoder beside (or instead of) the language model.
@cache
def _multimodal_entry() -> re.Pattern[str]:
    # compiled for the first Megatron run's entry point, not when a check imports the framework
    return re.compile(r"(^|/)(pretrain_vlm|pretrain_mimo|multimodal/train|mimo/train|pretrain_vision_\w+)\.py$")
_PIPE_MODEL_ENTRIES = ("gpt", )
"""Megatron-DeepSpeed entry points that build a PipelineModule (GPTModelPipe) whenever
``--deepspeed`` is given without ``--no-pipeline-parallel`` (pretrain_gpt.py, pretrain_llama...)."""


class MegatronFramework(Framework):
    name = "megatron"
    title = "Megatron-LM"
    repository = "NVIDIA/Megatron-LM"
    catalog_family = "megatron"
    source_markers = ("megatron/training/arguments.py", "megatron/arguments.py", "arguments.py")
    source_rank = 0
    import_name = "megatron"
    pin_names = ("megatron",)
    setting_example = 'framework = {{megatron = "<path to the checkout, or a release such as core_v0.8.0>"}}'
    keeps_refused = True
    launch_kinds = ("megatron",)
    change_settings = _DESTS

    def adapters(self) -> list:
        from trainlint.adapters.bridge.adapter import BridgeAdapter
        from trainlint.adapters.megatron import MegatronAdapter

        # a Megatron-Bridge ConfigContainer (YAML, recipe launch line) is a format of this engine
        return [MegatronAdapter(), BridgeAdapter()]

    def key_catalog(self, target: Any = None) -> KeyCatalog:
        from trainlint.frameworks.keys import key_catalog_for

        return key_catalog_for(self.catalog_family, self.schema_name(), target)

    def rules(self) -> Sequence[str | type]:
        # Megatron-LM's and Megatron-Core's own checks; Megatron-Bridge's ConfigContainer checks (a format of this
        # engine, read by one of this framework's adapters). By name: the rules layer sits above the frameworks.
        return ("trainlint.rules.startup.megatron", "trainlint.rules.startup.bridge")

    def capabilities(self, spec: TrainingSpec) -> frozenset[str]:
        return _CAPABILITIES

    def set_engine(self, spec: TrainingSpec) -> None:
        from trainlint.adapters.megatron.spec_build import set_engine

        set_engine(spec)

    def deepspeed_prefix(self, spec: TrainingSpec) -> str:
        return DEEPSPEED_PREFIX

    def model_parallel_product(self, spec: TrainingSpec) -> ModelParallel | None:
        # TP x PP x CP (megatron/training/arguments.py)
        p = spec.parallel
        tp, pp, cp = as_int(p.tensor), as_int(p.pipeline), as_int(p.context)
        if tp is None or pp is None or cp is None or min(tp, pp, cp) < 1:
            return None
        return (tp * pp * cp, f"TP {tp} x PP {pp} x CP {cp}",
                ((p.tensor, f"tensor parallel {tp}"), (p.pipeline, f"pipeline parallel {pp}"),
                 (p.context, f"context parallel {cp}")))

    def pipeline_engine(self, spec: TrainingSpec) -> PipelineEngine | None:
        p = spec.parallel
        stages = as_int(p.pipeline)
        engaged = as_bool(p.pipeline_engine)
        deepspeed_flag = spec.engine.deepspeed_flag
        if not engaged or not as_bool(deepspeed_flag):
            return None
        if stages is not None and stages > 1:
            return PipelineEngine(
                f"--deepspeed with pipeline parallel size {stages} runs DeepSpeed's PipelineEngine "
                "(Megatron-DeepSpeed builds GPTModelPipe unless --no-pipeline-parallel)",
                p.pipeline, stages, False)
        arch = as_str(spec.model.architecture)
        if stages == 1 and arch in _PIPE_MODEL_ENTRIES:
            return PipelineEngine(
                "--deepspeed without --no-pipeline-parallel: Megatron-DeepSpeed's pretrain_gpt.py builds "
                "GPTModelPipe, a PipelineModule, even with pipeline parallel size 1, so DeepSpeed runs its "
                "PipelineEngine", deepspeed_flag, stages, True)
        return None

    def partial_arguments(self, spec: TrainingSpec) -> bool:
        # a spec read from flag variables or a MODEL_ARGS file is labelled without "at line N" / "in FILE"
        return " at line " not in spec.label and " in " not in spec.label

    def arguments_without_launch(self, spec: TrainingSpec) -> bool:
        return not spec.entry_point

    def unmodelled_entry(self, entry: str) -> str | None:
        if _multimodal_entry().search(entry):
            return "the vision encoder and multimodal inputs are not modelled"
        return None

    def zero_is_layout(self, spec: TrainingSpec) -> bool:
        from trainlint.adapters.megatron.spec_build import deepspeed_runs

        return deepspeed_runs(spec)  # Megatron-DeepSpeed with --deepspeed: ZeRO is DeepSpeed's

    def sequence_parallel_switch(self, spec: TrainingSpec) -> bool:
        return True

    def distributed_optimizer_switch(self, spec: TrainingSpec) -> bool:
        return True

    def global_batch_always_written(self, spec: TrainingSpec) -> bool:
        return True  # a script's --global-batch-size is what the batch follows

    def gradient_overlap_setting(self) -> str | None:
        return "overlap_grad_reduce"

    def optimizer_sharding_field(self, spec: TrainingSpec) -> str:
        return "parallel.distributed_optimizer"

    def writes_virtual_pipeline_per_layers(self, spec: TrainingSpec) -> bool:
        return "num_layers_per_virtual_pipeline_stage" in spec.settings

    def search_policy(self, spec: TrainingSpec, inputs: Any, searchable: set[str],
                      expressible: frozenset[str] = frozenset()) -> SearchPolicy:
        flag = spec.engine.deepspeed_flag
        megatron_ds = flag is not None and bool(flag.value)
        distributed = spec.memory.distribute_saved_activations
        current_megatron = spec.dialect in (MEGATRON_LM, "")
        return SearchPolicy(
            # --recompute-granularity exists only where the adapter says the version has it
            recompute=("none", "selective", "full") if "selective" in expressible else ("none", "full"),
            zero=[0, 1, 2, 3] if "zero" in searchable else [],
            sp_policy="keep" if ((distributed is not None and distributed.value) or not current_megatron) else "tp",
            kv_divides_or_multiple=True, expert_grid=True, interleave_needs_pp_multiple=True, pp_divides_layers=True,
            pipeline_engine="wrapped" if megatron_ds else "",
            ds_pipeline_engine=bool(megatron_ds and spec.value("parallel.pipeline_engine", False)))

    def batch_changes(self, spec: TrainingSpec, cur: tuple[Any, Any, Any], new: tuple[Any, Any, Any],
                      dp: Any) -> dict[str, Any]:
        (cur_micro, _, cur_global), (micro, _, global_batch) = cur, new
        out: dict[str, Any] = {}
        if micro != cur_micro:
            out["batch.micro_batch"] = micro
        is_written = written(spec, "batch.global_batch")
        derived = isinstance(micro, int) and isinstance(dp, int) and micro * dp != global_batch
        # None: no global batch in the run (Megatron v1.x feeds --batch-size x DP): nothing to write
        if global_batch is not None and (global_batch != cur_global or (not is_written and derived)):
            out["batch.global_batch"] = global_batch
        return out

    def recompute_changes(self, spec: TrainingSpec, base: Any, cur: Any, new: Any, full_layers: Any) -> dict[str, Any]:
        out = super().recompute_changes(spec, base, cur, new, full_layers)
        if new.recompute == "full":
            method, layers, keep = full_layers(new.pp)
            if not keep:
                out["memory.recompute_method"] = method
                out["memory.recompute_num_layers"] = layers
        elif cur.recompute == "full" and new.recompute != "full":
            out["memory.recompute_method"] = None
            out["memory.recompute_num_layers"] = None
        return out

    def mirror_settings(self, out: TrainingSpec, base: Any, changes: dict[str, Any], new: Any, set_setting: Any) -> None:
        super().mirror_settings(out, base, changes, new, set_setting)
        if "memory.recompute" in changes:
            rec = changes["memory.recompute"]
            out.settings.pop("recompute_activations", None)
            if out.dialect not in (MEGATRON_LM, ""):
                out.settings.pop("checkpoint_activations", None)
                if rec == "full":
                    set_setting(out, "checkpoint_activations", True)
            set_setting(out, "recompute_granularity", None if rec == "none" else rec)
        if "parallel.virtual_pipeline" in changes:
            k_dest, v_dest = "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank"
            if k_dest in out.settings:
                set_setting(out, k_dest, base.layers // (new.pp * new.vpp) if new.vpp > 1 else None)
            else:
                set_setting(out, v_dest, new.vpp if new.vpp > 1 else None)
        # Megatron-DeepSpeed: the DeepSpeed config's batch keys are checked against the flags (TL100)
        for dotted, key in _DS_BATCH.items():
            prefixed = DEEPSPEED_PREFIX + key
            if prefixed in out.settings:
                value = {"batch.micro_batch": new.micro, "batch.grad_accum": new.grad_accum,
                         "batch.global_batch": new.global_batch}[dotted]
                set_setting(out, prefixed, value)

    def read_launch(self, launch: Any, adapters: Sequence[Any], environment: dict[str, str], frameworks: Any) -> list[Any]:
        # the argument list itself, with the --deepspeed_config JSON of Megatron-DeepSpeed
        from trainlint.adapters.megatron.adapter import load_argv
        from trainlint.adapters.launch.command_line import read_argument_list

        return [read_argument_list(launch, load_argv, environment, frameworks)]

    def reads_like_parser(self, text: str) -> bool:
        from trainlint.frameworks.markers import megatron_like

        return megatron_like(text)  # a root-level arguments.py is a fork's (GLM) only when it reads like Megatron's

    def scan_arguments(self, main: dict[str, str], classes: dict[str, str]) -> Any:
        from trainlint.frameworks.argscan import scan_megatron

        return scan_megatron(main, classes)

    def checkout_version(self, read: Any) -> str | None:
        text = read("megatron/core/package_info.py")
        if text:
            parts = [re.search(rf"^{k}\s*=\s*['\"]?(\w+)", text, re.M) for k in ("MAJOR", "MINOR", "PATCH")]
            if all(parts):
                return "core " + ".".join(p.group(1) for p in parts)  # type: ignore[union-attr]
        return None

    def schema_name(self) -> str | None:
        return "megatron"

    def shell_syntax(self) -> bool:
        return True

