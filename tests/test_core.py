"""Core pieces: positions, sources, schema check, discovery, checker containment, spec schema."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainlint.adapters.base import Adapter, BY_CONTENT, LoadResult, NOT_MINE
from trainlint.files.checker import check_paths, check_source
from trainlint.core.diagnostics import Severity
from trainlint.files.discovery import iter_files
from trainlint.core.document import Document, pointer, pointer_parts
from trainlint.core.positions import LineIndex, Span
from trainlint.core.provenance import Origin, default, derived, first_span, from_file
from trainlint.files.schema_check import check_document
from trainlint.schemas import load_schema
from trainlint.files.sources import SourceText, Unreadable, UnreadableSource, decode, read_source
from trainlint.core.spec import TrainingSpec


def test_line_index_positions_are_one_based_and_end_exclusive():
    text = "ab\ncdé\n\nxyz"
    index = LineIndex(text)
    assert index.position(0) == (1, 1)
    assert index.position(3) == (2, 1)
    assert index.span(4, 6) == Span(2, 2, 2, 4)
    assert index.position(len(text)) == (4, 4)
    assert index.line_count == 4


def test_pointers_escape_and_round_trip():
    ptr = pointer(["a", 0, "b/c", "d~e"])
    assert ptr == "/a/0/b~1c/d~0e"
    assert pointer_parts(ptr) == ["a", "0", "b/c", "d~e"]


def test_document_locate_falls_back_to_ancestor_then_file_start():
    doc = Document("f", "x", "", {"a": {"b": 1}}, key_spans={"/a": Span(2, 1, 2, 4)},
                   value_spans={"/a/b": Span(3, 5, 3, 6)})
    assert doc.locate("/a/b") == Span(3, 5, 3, 6)
    assert doc.locate("/a/c") == Span(2, 1, 2, 4)
    assert doc.locate("/z") == Span(1, 1, 1, 1)
    assert doc.get("/a/b") == 1 and doc.get("/a/x", "no") == "no"


@pytest.mark.parametrize("data, expected, reason", [
    (b"\x00\x01binary", "binary", Unreadable.BINARY),
    (b'{"a": "\xff"}', "not valid UTF-8", Unreadable.NOT_TEXT),
])
def test_decode_rejects_binary_and_bad_utf8(data, expected, reason):
    with pytest.raises(UnreadableSource) as info:
        decode(data, "f")
    assert expected in info.value.diagnostic.message
    assert info.value.diagnostic.code == "TL001"
    assert info.value.reason is reason  # callers decide on the reason, not on the message text


def test_read_source_says_why_a_file_is_unreadable(tmp_path):
    with pytest.raises(UnreadableSource) as info:
        read_source(tmp_path / "missing.json")
    assert info.value.reason is Unreadable.CANNOT_OPEN
    with pytest.raises(UnreadableSource) as info:
        read_source(tmp_path)
    assert info.value.reason is Unreadable.NOT_A_FILE


def test_decode_reads_utf16_with_bom_and_normalises_newlines():
    text = "a: 1\r\nb: 2\r\n".encode("utf-16")
    assert decode(text, "f") == "a: 1\nb: 2\n"


def test_read_source_size_limit(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with pytest.raises(UnreadableSource) as info:
        read_source(big, max_bytes=1024)
    assert "limit" in info.value.diagnostic.message
    assert info.value.reason is Unreadable.TOO_LARGE


def test_provenance_describes_where_values_came_from():
    written = from_file(4, "ds.json", Span(3, 10, 3, 11), "train_micro_batch_size_per_gpu")
    dp = derived(8, "world / (TP x PP)", default(1, "Megatron-LM default"), written)
    assert written.provenance.describe() == "train_micro_batch_size_per_gpu at ds.json:3:10"
    assert dp.provenance.origin is Origin.DERIVED
    assert first_span(dp) == ("ds.json", Span(3, 10, 3, 11))


SCHEMA = {
    "type": "object", "additionalProperties": False, "x-unknown-key-severity": "warning",
    "properties": {
        "train_batch_size": {"type": "integer"},
        "zero_optimization": {"type": "object", "additionalProperties": False, "properties": {
            "stage": {"type": "integer", "enum": [0, 1, 2, 3]}, "overlap_comm": {"type": "boolean"}}},
    },
}


def _doc(data, **spans):
    return Document("ds.json", "deepspeed", "", data, key_spans=spans.get("keys", {}), value_spans=spans.get("values", {}),
                    unresolved=spans.get("unresolved", {}))


def test_schema_check_unknown_keys_with_suggestions_and_severity():
    doc = _doc({"train_batch_sise": 8, "overlap_comm": True, "zero_optimization": {"overlp_comm": True}},
               keys={"/train_batch_sise": Span(2, 3, 2, 21), "/zero_optimization/overlp_comm": Span(4, 5, 4, 18)})
    found = {(d.code, d.span.line, d.severity): d.message for d in check_document(doc, SCHEMA)}
    assert "did you mean `train_batch_size`" in found[("TL004", 2, Severity.WARNING)]
    assert "did you mean `overlap_comm`" in found[("TL004", 4, Severity.ERROR)]
    assert "belongs in `zero_optimization`" in found[("TL004", 1, Severity.WARNING)]


def test_schema_check_type_beats_enum_and_integral_floats_pass():
    doc = _doc({"train_batch_size": 2e8, "zero_optimization": {"stage": "2"}},
               values={"/zero_optimization/stage": Span(3, 14, 3, 17)})
    diags = check_document(doc, SCHEMA)
    assert [(d.code, d.line, d.column) for d in diags] == [("TL005", 3, 14)]
    assert "must be integer, got string" in diags[0].message


def test_schema_check_skips_unresolved_values():
    doc = _doc({"train_batch_size": "auto"}, unresolved={"/train_batch_size": "auto"})
    assert check_document(doc, SCHEMA) == []


def test_shipped_schemas_are_valid_json_schema():
    from jsonschema import Draft202012Validator

    for name in ("deepspeed", "neox", "megatron", "spec"):
        Draft202012Validator.check_schema(load_schema(name))


def test_spec_to_dict_matches_spec_schema():
    from jsonschema import Draft202012Validator

    spec = TrainingSpec("megatron", "train.sh")
    spec.set("model.num_layers", from_file(32, "train.sh", Span(5, 18, 5, 20), "--num-layers"))
    spec.set("parallel.tensor", default(1, "Megatron-LM default"))
    spec.set("parallel.data", derived(8, "world / (TP x PP x CP)", spec.get("parallel.tensor")))
    spec.settings["num_layers"] = spec.get("model.num_layers")
    Draft202012Validator(load_schema("spec")).validate(spec.to_dict())
    assert spec.value("model.num_layers") == 32 and spec.value("batch.micro_batch", "?") == "?"
    with pytest.raises(AttributeError):
        spec.set("model.num_layer", None)


def test_discovery_walks_sorted_skips_vcs_and_survives_symlink_loops(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.json").write_text("{}")
    (tmp_path / "a.yml").write_text("a: 1")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "c.json").write_text("{}")
    os.symlink(tmp_path, tmp_path / "b" / "loop")
    found = [Path(p).relative_to(tmp_path).as_posix() for p, _ in iter_files([str(tmp_path)], {".json", ".yml"})]
    assert found == ["a.yml", "b/x.json"]


class _Exploding(Adapter):
    name = "exploding"
    extensions = (".json",)

    def sniff(self, path, text):
        return BY_CONTENT if "boom" in text else NOT_MINE

    def load(self, source, context):
        raise ValueError("kaboom\nsecond line")


class _Quiet(Adapter):
    name = "quiet"
    extensions = (".json",)

    def sniff(self, path, text):
        return BY_CONTENT

    def load(self, source, context):
        return LoadResult("quiet")


def test_internal_error_is_contained_per_file(tmp_path):
    (tmp_path / "a.json").write_text('{"boom": 1}')
    (tmp_path / "b.json").write_text('{"fine": 1}')
    results = check_paths([str(tmp_path)], [_Exploding(), _Quiet()])
    by_name = {Path(r.path).name: r for r in results}
    bad = by_name["a.json"].diagnostics
    assert [d.code for d in bad] == ["TL999"]
    assert "ValueError: kaboom" in bad[0].message and "second line" not in bad[0].message
    assert by_name["b.json"].format == "quiet" and by_name["b.json"].diagnostics == []


def test_unclaimed_source_is_skipped():
    class _Never(_Quiet):
        def sniff(self, path, text):
            return NOT_MINE

    result = check_source(SourceText("x.json", "{}"), [_Never()])
    assert result.format is None and result.diagnostics == []


def test_project_config_is_typed(tmp_path):
    """The settings trainlint reads from the project config are fields, not ``raw[...]`` lookups."""
    from trainlint.project.config import load_config

    path = tmp_path / ".trainlint.toml"
    path.write_text('gpu = "a100-80gb"\nnodes = 2\ngpus-per-node = 4\nmodel = "gpt3-1.3b"\nmax-days = 3\n'
                    'prices = { h100-sxm = 2.5 }\nbaseline = "b.json"\nreport-unused-per-file-ignores = true\n')
    project = load_config(path)
    assert (project.estimation.gpu, project.estimation.nodes, project.estimation.by_key("gpus-per-node"),
            project.estimation.model) == ("a100-80gb", 2, 4, "gpt3-1.3b")
    assert project.planning.max_days == 3 and project.planning.prices == {"h100-sxm": 2.5}
    assert project.planning.by_key("max-cost") is None
    assert project.baseline == "b.json" and project.report_unused_per_file_ignores is True


def test_prices_come_from_the_typed_planning_settings():
    """price_for reads ProjectConfig.planning (and the custom GPU table), not the raw TOML table:
    a price per GPU kind (aliases resolved), else the project's price per GPU-hour; the flag wins."""
    from trainlint.project.config import ProjectConfig
    from trainlint.core.project_settings import EstimationSettings, PlanningSettings
    from trainlint.planning.inputs import price_for

    project = ProjectConfig(planning=PlanningSettings(price_per_gpu_hour=3.0, prices={"h100": 2.0, "mine": 1.5}),
                            estimation=EstimationSettings(gpus={"mine": {"memory_gb": 48, "bf16_tflops": 200}}))
    assert price_for("h100-sxm", None, project) == (2.0, "prices.h100 in the project config")
    assert price_for("mine", None, project) == (1.5, "prices.mine in the project config")
    assert price_for("a100-80gb", None, project) == (3.0, "price-per-gpu-hour in the project config")
    assert price_for("a100-80gb", 4.0, project) == (4.0, "--price-per-gpu-hour")
    assert price_for("a100-80gb", None, ProjectConfig())[0] is None and price_for("a100-80gb", None, None)[0] is None
