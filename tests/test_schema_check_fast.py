"""The one schema validator's result is jsonschema's on every input: its fast path
(``schema_check.nothing_to_report``, which lets ``check_document`` skip jsonschema when a document is
certainly valid) never hides a finding.

These tests record every (document, schema) pair the adapters check on the examples, the fixtures
and the corpus, then compare ``check_document`` (fast path on) with ``check_document(..., fast=False)``
(jsonschema alone): on the real files, and on documents mutated by hypothesis (wrong types,
out-of-range numbers, unknown keys, "auto" markers, values inside unresolved keys).
"""

from __future__ import annotations

import copy
import math
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainlint.files import schema_check
from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths
from trainlint.core.document import Document, pointer

from conftest import CORPUS, FIXTURES, REPO


def jsonschema_result(doc: Document, schema: dict) -> list:
    """check_document with the fast path off: jsonschema decides."""
    return schema_check.check_document(doc, schema, fast=False)


def _record_pairs(paths: list[str]) -> list[tuple[Document, dict]]:
    pairs: list[tuple[Document, dict]] = []
    real = schema_check.check_document

    def spy(doc: Document, schema: dict, **options) -> list:
        # Adapters pass options (the NeoX adapter its `refusal` wording); a spy that refused them
        # would raise inside the adapter and quietly record nothing for that format.
        pairs.append((doc, schema))
        return real(doc, schema, **options)

    with mock.patch.object(schema_check, "check_document", spy), \
            mock.patch("trainlint.adapters.deepspeed.adapter.check_document", spy):
        check_paths(paths, builtin_adapters())
    return pairs


@pytest.fixture(scope="module")
def pairs() -> list[tuple[Document, dict]]:
    # the examples and the test fixtures always; the corpus when ../shared is present
    paths = [str(REPO / "examples"), str(FIXTURES)]
    if CORPUS.is_dir():
        paths.append(str(CORPUS))
    found = _record_pairs(paths)
    assert len(found) >= 10, "the adapters checked too few documents against a schema"
    return found


def test_the_one_entry_point_equals_jsonschema_on_real_configs(pairs):
    for doc, schema in pairs:
        assert schema_check.check_document(doc, schema) == jsonschema_result(doc, schema), doc.path


def test_fast_answer_equals_jsonschema_on_real_configs(pairs):
    disagree, fast_yes = [], 0
    for doc, schema in pairs:
        fast = schema_check.nothing_to_report(doc.data, schema, doc.unresolved)
        slow = jsonschema_result(doc, schema)
        fast_yes += fast
        if fast and slow:
            disagree.append((doc.path, [d.code for d in slow]))
    assert disagree == [], f"the pre-check hid findings: {disagree[:5]}"
    # it must also be useful: most real configs are valid and must skip jsonschema
    clean = sum(1 for doc, schema in pairs if not jsonschema_result(doc, schema))
    assert fast_yes >= 0.9 * clean


def test_fast_says_no_when_jsonschema_reports(pairs):
    """The other direction on the real files: when jsonschema has nothing to say, the
    pre-check also answers True unless the document uses something it does not model."""
    missed = [doc.path for doc, schema in pairs
              if not jsonschema_result(doc, schema) and not schema_check.nothing_to_report(doc.data, schema, doc.unresolved)]
    assert len(missed) <= 0.1 * len(pairs), missed[:5]


def _paths(data, prefix=()) -> list[tuple]:
    out = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            out.extend(_paths(value, prefix + (key,)))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            out.extend(_paths(value, prefix + (index,)))
    return out


_EDGE = [-1, 0, 1.5, "x", None, True, 10**20, math.nan, math.inf, [], {}, "auto"]
_VALUES = st.one_of(
    st.sampled_from(_EDGE), st.none(), st.booleans(), st.integers(min_value=-10**12, max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, -1, 1.0, 1.5, 2**63, "auto", "", "none", "fp16"]),
    st.text(max_size=8), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_documents_never_hide_a_finding(pairs, data):
    doc, schema = pairs[data.draw(st.integers(0, len(pairs) - 1), label="document")]
    tree = copy.deepcopy(doc.data)
    unresolved = dict(doc.unresolved)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        where = data.draw(st.sampled_from(_paths(tree)[1:] or [()]), label="path")
        action = data.draw(st.sampled_from(["set", "add-key", "unresolve"]), label="action")
        parent, key = (None, None) if not where else (_get(tree, where[:-1]), where[-1])
        if action == "set" and parent is not None:
            parent[key] = data.draw(_VALUES, label="value")
        elif action == "add-key":
            target = _get(tree, where)
            if isinstance(target, dict):
                target[data.draw(st.sampled_from(["stage", "zero_optimization", "tyop", "train_batch_size", "x"]))] = \
                    data.draw(_VALUES, label="new value")
        elif action == "unresolve" and where:
            unresolved[pointer(where)] = "placeholder"
    mutated = Document(path=doc.path, format=doc.format, text=doc.text, data=tree,
                       key_spans=doc.key_spans, value_spans=doc.value_spans, unresolved=unresolved)
    fast = schema_check.nothing_to_report(tree, schema, unresolved)
    found = jsonschema_result(mutated, schema)
    if fast:
        assert found == [], f"{doc.path}: the pre-check said valid, jsonschema reports {[d.message for d in found]}"
    assert schema_check.check_document(mutated, schema) == found


def test_every_value_of_the_examples_replaced_by_edge_values(pairs):
    """A sweep: each value of each example document in turn set to each edge value."""
    swept = 0
    for doc, schema in pairs:
        if "/examples/" not in doc.path.replace("\\", "/"):
            continue
        for where in _paths(doc.data)[1:]:
            for value in _EDGE:
                tree = copy.deepcopy(doc.data)
                _get(tree, where[:-1])[where[-1]] = value
                if not schema_check.nothing_to_report(tree, schema, doc.unresolved):
                    continue
                swept += 1
                mutated = Document(path=doc.path, format=doc.format, text=doc.text, data=tree,
                                   key_spans=doc.key_spans, value_spans=doc.value_spans, unresolved=doc.unresolved)
                assert jsonschema_result(mutated, schema) == [], f"{doc.path}{pointer(where)} = {value!r}"
    assert swept > 100


def _get(tree, parts):
    node = tree
    for part in parts:
        node = node[part]
    return node


@pytest.mark.parametrize("value, valid", [
    (1, True), (1.0, True), (True, False), (-1, False), (math.nan, False), ("4", False), (None, False),
])
def test_integer_minimum_semantics_match_jsonschema(value, valid):
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "additionalProperties": False}
    doc = Document(path="x.json", format="deepspeed", text="", data={"n": value})
    assert schema_check.nothing_to_report({"n": value}, schema) is valid
    assert (jsonschema_result(doc, schema) == []) is valid


def test_schema_with_an_unmodelled_keyword_is_left_to_jsonschema():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}
    with pytest.raises(schema_check.Unsupported):
        schema_check.compile_schema(schema)
    assert schema_check.nothing_to_report({"n": 2}, schema) is False

