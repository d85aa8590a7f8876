"""Rules and the estimator read a framework setting through a typed spec field that each adapter fills
from its own format (issue 19, Deliver 3), not from ``spec.settings`` by the framework's key. The only
reads left are about the file's text (which key was written where, for a finding's location; a
framework's own start-up check of the keys as written): each is named here with why.

A new read of ``spec.settings`` in ``linter/rules`` or ``linter/estimator`` fails this test: give the
fact a field in ``linter/core/spec.py`` and set it in the adapters (as ``EngineSpec`` is), or, when it
really is about the text, add it below with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.adapters.base import LoadContext
from trainlint.files.sources import SourceText

LINTER = Path(__file__).resolve().parent.parent / "linter"

FILE_TEXT_USES: dict[tuple[str, str], str] = {
    ("rules/estimation/fixes.py", "chain_changes"):
        "a chain that wrote a framework setting (--overlap-grad-reduce) is no layout change an adapter can write",
    ("rules/estimation/fixes.py", "_with_setting"):
        "a candidate writes the key as the fixed file would have it; set_engine re-derives the engine from it",
    ("rules/estimation/buffers_dominate_memory.py", "BuffersDominateMemory.check"):
        "location: the finding points at the first bucket key written in the JSON",
    ("rules/startup/batch_size_mismatch.py", "BatchSizeMismatch.check"):
        "DeepSpeed's triple as written: an \"auto\" left for the HF Trainer to fill at launch",
    ("rules/startup/precision_conflict.py", "PrecisionConflict._megatron"):
        "Megatron's own check of --fp16 / --bf16 as written, apart from the merged JSON's blocks",
    ("rules/startup/precision_conflict.py", "PrecisionConflict._neox"):
        "NeoX's own check of the written precision key against the written fp16 / bf16 blocks",
    ("rules/startup/zero_pipeline_conflict.py", "ZeroPipelineConflict.check"):
        "location: --zero-stage as written, when the stage used comes from the JSON",
    ("rules/startup/deepspeed/ds_allreduce_sum_unsupported.py", "AllreduceSumUnsupported.check"):
        "DeepSpeed's config check: zero_optimization.zenflow written, whatever its value",
    ("rules/startup/deepspeed/ds_nvme_path_missing.py", "NvmePathMissing.check"):
        "DeepSpeed's config check: nvme_path written as null",
    ("rules/startup/derive.py", "ds"): "the DeepSpeed JSON's keys as written, for DeepSpeed's own start-up checks",
    ("rules/startup/derive.py", "ds_present"): "a DeepSpeed JSON section written at all",
    ("rules/startup/derive.py", "ds_has_auto"): "an \"auto\" written anywhere in the DeepSpeed JSON",
    ("rules/startup/neox/helpers.py", "NeoXArgs.__init__"): "GPT-NeoX's own argument checks over the keys as written",
    ("rules/startup/bridge/base.py", "Fields.entry"):
        "Megatron-Bridge's own ConfigContainer checks over its fields as written (bridge:<path>)",
    ("rules/startup/bridge/bridge_checkpoint_settings.py", "CheckpointSettings.findings"):
        "which checkpoint fields a Bridge config writes at all (its own ConfigContainer check)",
    ("rules/startup/bridge/bridge_packing_settings.py", "PackingSettings.findings"):
        "whether a Bridge config writes offline packing specs (its own ConfigContainer check)",
    ("rules/startup/bridge/bridge_env_vars.py", "EnvVars.findings"):
        "every env_vars entry a Bridge config writes, names and values as written (its own ConfigContainer check)",
    ("rules/startup/bridge/cuda_device_max_connections.py", "DeviceMaxConnections.check"):
        "whether overlap_moe_expert_parallel_comm is written on (file text beside the variable)",
}


def _settings_reads(root: Path = LINTER) -> set[tuple[str, str]]:
    """(module, enclosing qualname) of every ``.settings`` attribute, and of every
    ``getattr(..., "settings")``, in the rules and the estimator."""
    found: set[tuple[str, str]] = set()
    for base in ("rules", "estimator"):
        for path in sorted((root / base).rglob("*.py")):
            module = path.relative_to(root).as_posix()

            def visit(node: ast.AST, names: list[str]) -> None:
                for child in ast.iter_child_nodes(node):
                    inner = names + [child.name] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                       ast.ClassDef)) else names
                    by_name = (isinstance(child, ast.Call) and isinstance(child.func, ast.Name)
                               and child.func.id == "getattr" and len(child.args) >= 2
                               and isinstance(child.args[1], ast.Constant) and child.args[1].value == "settings")
                    if (isinstance(child, ast.Attribute) and child.attr == "settings") or by_name:
                        found.add((module, ".".join(names) or "<module>"))
                    visit(child, inner)

            visit(ast.parse(path.read_text(encoding="utf-8")), [])
    return found


def test_rules_and_estimator_read_framework_settings_only_through_typed_fields():
    reads = _settings_reads()
    unexpected = sorted(reads - set(FILE_TEXT_USES))
    assert not unexpected, ("spec.settings read by a framework key outside the file-text allow-list; give the fact a "
                            f"typed field in linter/core/spec.py set by the adapters: {unexpected}")
    stale = sorted(set(FILE_TEXT_USES) - reads)
    assert not stale, f"allow-list entries no longer used (remove them): {stale}"


def test_the_scan_sees_a_new_read(tmp_path):
    """The scan is not vacuous: a module reading a framework key is caught."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "estimator").mkdir()
    (tmp_path / "rules" / "new_rule.py").write_text(
        "class R:\n    def check(self, spec):\n        return spec.settings.get('overlap_grad_reduce')\n")
    (tmp_path / "estimator" / "inputs.py").write_text("def f(spec):\n    return getattr(spec, 'settings', {})\n")
    assert _settings_reads(tmp_path) == {("rules/new_rule.py", "R.check"), ("estimator/inputs.py", "f")}


def _load(name: str, path: str, text: str):
    adapter = next(a for a in builtin_adapters() if a.name == name)
    result = adapter.load(SourceText(path, text), LoadContext())
    assert result.specs, result.diagnostics
    return result.specs[0]


MEGATRON = """#!/bin/bash
torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --kv-channels 128 \\
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 6 \\
    --account-for-loss-in-pipeline-split --num-layers-per-virtual-pipeline-stage 2 --distribute-saved-activations \\
    --group-query-attention --num-query-groups 8 --finetune --load /ckpt --freeze-LM \\
    --micro-batch-size 1 --global-batch-size 64 --seq-length 2048 --bf16 --overlap-grad-reduce
"""


def test_megatron_adapter_fills_the_typed_fields():
    spec = _load("megatron", "train.sh", MEGATRON)
    p, r = spec.parallel, spec.run
    assert p.uneven_pipeline is not None and p.uneven_pipeline.value == 6
    assert p.uneven_pipeline.provenance.key == "--decoder-first-pipeline-num-layers"
    assert p.pipeline_split_extra is not None and p.pipeline_split_extra.value == ["--account-for-loss-in-pipeline-split"]
    assert p.virtual_stage_layers is not None and p.virtual_stage_layers.value == 2 and p.virtual_stages is None
    assert spec.memory.distribute_saved_activations is not None
    assert spec.model.grouped_query_attention is not None and spec.model.grouped_query_attention.value is True
    assert r.fine_tuning is not None and r.fine_tuning.value == "--finetune"
    assert r.unmodelled is not None and [flag for flag, _ in r.unmodelled.value] == ["--freeze-LM"]
    assert spec.engine.dp_overlap is not None and spec.engine.dp_overlap.value is True
    assert spec.engine.deepspeed_micro_batch is None


def test_megatron_resumed_run_is_not_fine_tuning_and_launch_only_layout_is_named():
    spec = _load("megatron", "train.sh", "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 "
                                         "--num-attention-heads 4 --tensor-model-parallel-size $TP --load /ckpt\n")
    assert spec.run.fine_tuning is None  # a bare --load resumes pre-training
    assert spec.run.launch_only is not None
    assert [flag for flag, _ in spec.run.launch_only.value] == ["--tensor-model-parallel-size"]
    spec = _load("megatron", "train.sh", "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 "
                                         "--num-attention-heads 4 --load /ckpt --no-load-optim\n")
    assert spec.run.fine_tuning is not None and spec.run.fine_tuning.value == "--load with --no-load-optim"


def test_neox_adapter_fills_fine_tuning():
    spec = _load("neox", "run.yml", "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nfinetune: true\n")
    assert spec.run.fine_tuning is not None and spec.run.fine_tuning.value == "finetune: true"
    assert spec.run.fine_tuning.provenance.span is not None and spec.run.fine_tuning.provenance.span.line == 4


@pytest.mark.parametrize("fmt,path,text", [
    ("deepspeed", "ds.json", '{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}'),
    ("neox", "run.yml", "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\n"),
])
def test_other_formats_leave_megatron_facts_unset(fmt, path, text):
    spec = _load(fmt, path, text)
    assert spec.parallel.uneven_pipeline is None and spec.run.unmodelled is None and spec.run.launch_only is None
    assert spec.engine.deepspeed_micro_batch is None
