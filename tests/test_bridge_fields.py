"""Megatron-Bridge's Megatron-Core fields under Megatron-LM's argument names (issue 31, Deliver 5):
every TransformerConfig / ModelParallelConfig / OptimizerConfig / DDP field with a Megatron-LM argument
is read, so Megatron-Core's own checks (the CORE_CONFIGS rows) judge a Bridge run as a Megatron-LM script."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from trainlint.adapters.bridge.keys import CORE_KEYS, KEYS
from trainlint.files.checker import check_file
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.rules.startup.megatron.check_table import _DERIVED, CORE_CONFIGS, CheckTable
from trainlint.schemas import load_schema

REGISTRY = build_registry(create_host(entry_points=False))
FIELDS = json.loads(resources.files("trainlint.adapters.bridge").joinpath("core_fields.json").read_text(encoding="utf-8"))


def _rows():
    for code, rule in sorted(REGISTRY.rules.items()):
        if isinstance(rule, type) and issubclass(rule, CheckTable):
            for check in rule.checks:
                if check.path in CORE_CONFIGS:
                    dests = {_DERIVED[c[0]][0] if c[0] in _DERIVED else c[0] for c in check.when}
                    dests |= {c[2] for c in check.when if c[1] == "not a multiple of"}
                    yield code, check, dests


def test_every_mapped_field_lands_on_a_megatron_lm_argument() -> None:
    dests = set(load_schema("megatron")["properties"])
    assert {k.dest for k in CORE_KEYS} <= dests
    paths = [k.path for k in KEYS]
    assert len(paths) == len(set(paths))  # one reading per ConfigContainer field


def test_core_config_rows_reach_a_bridge_run_unless_bridge_has_no_such_field() -> None:
    """A row not reached names an argument no field of Bridge's pinned Megatron-Core is read as
    (a field added to Megatron-Core later, or renamed: cuda_graph_scope -> cuda_graph_modules)."""
    mapped = {k.dest for k in KEYS}
    from_fields = {n for names in FIELDS["same"].values() for n in names} | {d for d, _ in FIELDS["renamed"].values()}
    reached = missing = 0
    for code, check, dests in _rows():
        if dests <= mapped:
            reached += 1
            continue
        missing += 1
        assert dests - from_fields, (code, check.line, dests - mapped)
    assert reached > missing


def test_renamed_fields_are_read_under_their_argument(tmp_path: Path) -> None:
    path = tmp_path / "run_config.yaml"
    path.write_text("model:\n  num_layers: 30\n  hidden_size: 1024\n  num_attention_heads: 16\n  seq_length: 2048\n"
                    "  pipeline_model_parallel_size: 4\n  num_layers_in_first_pipeline_stage: 6\n"
                    "  persist_layer_norm: false\n  cp_comm_type: a2a\ntrain:\n  micro_batch_size: 1\n"
                    "  global_batch_size: 64\nddp:\n  num_buckets: 4\ndataset:\n  seq_length: 2048\n", encoding="utf-8")
    spec = check_file(str(path), REGISTRY.adapters).specs[0]
    s = spec.settings
    assert s["decoder_first_pipeline_num_layers"].value == 6
    assert s["no_persist_layer_norm"].value is True
    assert s["ddp_num_buckets"].value == 4
    assert s["cp_comm_type"].value == "a2a"  # hand-listed before the derived table: as written
    assert spec.parallel.uneven_pipeline is not None  # the first stage's layers make the split uneven
