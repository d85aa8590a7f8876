"""The shared YAML reader: values as yaml.safe_load types them, exact positions, bounded input."""

from __future__ import annotations

import time

import pytest
import yaml

from trainlint.adapters.text.yaml_tree import MAX_DEPTH, MAX_NODES, SciString, parse_yaml
from trainlint.core.diagnostics import Severity
from trainlint.core.positions import Span


def codes(tree):
    return [(d.code, d.line, d.column) for d in tree.diagnostics]


def test_nested_block_mapping_positions():
    text = "model:\n  num_layers: 24\n  heads: [16, 32]\nlr: 0.5\n"
    tree = parse_yaml(text)
    assert tree.ok and tree.diagnostics == []
    assert tree.data == yaml.safe_load(text)
    assert tree.key_spans["/model"] == Span(1, 1, 1, 6)
    assert tree.key_spans["/model/num_layers"] == Span(2, 3, 2, 13)
    assert tree.value_spans["/model/num_layers"] == Span(2, 15, 2, 17)
    assert tree.value_spans["/model/heads"] == Span(3, 10, 3, 18)
    assert tree.value_spans["/model/heads/1"] == Span(3, 15, 3, 17)
    assert tree.value_spans["/lr"] == Span(4, 5, 4, 8)
    # a block mapping ends at its last value, not at the next key
    assert tree.value_spans["/model"] == Span(2, 3, 3, 18)


def test_flow_mapping_with_comments_and_trailing_commas():
    text = ('{\n  # a comment\n  "optimizer": {"type": "Adam",\n    "params": {"eps": 1.0e-8,},  # trailing\n  },\n'
            '  "min-lr":2.0e-05,\n  "flag": True,\n  "attention_config": [[["flash"], 36]],\n}\n')
    tree = parse_yaml(text)
    assert tree.ok, tree.diagnostics
    assert tree.data == yaml.safe_load(text)
    assert tree.data["flag"] is True
    assert tree.key_spans["/optimizer/params/eps"] == Span(4, 16, 4, 21)
    assert tree.value_spans["/optimizer/params/eps"] == Span(4, 23, 4, 29)
    assert tree.key_spans["/min-lr"] == Span(6, 3, 6, 11)
    assert tree.value_spans["/min-lr"] == Span(6, 12, 6, 19)
    assert tree.value_spans["/attention_config/0/0/0"] == Span(8, 26, 8, 33)
    assert tree.value_spans["/optimizer"].line == 3 and tree.value_spans["/optimizer"].end_line == 5


def test_unicode_columns_are_code_points():
    tree = parse_yaml('{"é😀x": 1, b: "ü"}\n')
    assert tree.key_spans["/é😀x"] == Span(1, 2, 1, 7)
    assert tree.value_spans["/é😀x"] == Span(1, 9, 1, 10)
    assert tree.key_spans["/b"] == Span(1, 12, 1, 13)


def test_list_of_mappings_and_pointer_escaping():
    tree = parse_yaml("items:\n  - name: a/b\n    x~y: 1\n")
    assert tree.key_spans["/items/0/name"] == Span(2, 5, 2, 9)
    assert tree.key_spans["/items/0/x~0y"] == Span(3, 5, 3, 8)
    assert tree.key_text["/items/0/x~0y"] == "x~y"


def test_duplicate_key_second_occurrence_last_wins():
    tree = parse_yaml("a: {x: 1}\nb: 2\na: 3\n", "f.yml")
    assert tree.data == {"a": 3, "b": 2}
    assert codes(tree) == [("TL003", 3, 1)]
    diag = tree.diagnostics[0]
    assert diag.severity is Severity.WARNING and diag.path == "f.yml"
    assert diag.related[0].span.line == 1
    assert "/a/x" not in tree.key_spans  # positions of the overwritten value are gone


def test_duplicate_severity_is_the_callers():
    tree = parse_yaml("a: 1\na: 2\n", duplicate_severity=Severity.ERROR)
    assert tree.diagnostics[0].severity is Severity.ERROR


def test_scientific_notation_strings():
    text = "lr: 6e-4\nmin: 1E-5\nbig: 2e8\nok: 1.0e-5\nunsigned: 1.0e5\nquoted: '1e-5'\nnested: {eps: 1e-8}\n"
    tree = parse_yaml(text)
    assert tree.data["lr"] == "6e-4" and tree.data["ok"] == 1.0e-5
    found = {s.pointer: (s.text, s.span.line, s.span.column) for s in tree.sci_strings}
    assert found == {"/lr": ("6e-4", 1, 5), "/min": ("1E-5", 2, 6), "/big": ("2e8", 3, 6),
                     "/unsigned": ("1.0e5", 5, 11), "/nested/eps": ("1e-8", 7, 15)}
    assert SciString("", "6e-4", Span.point(1, 1)).suggestion == "6.0e-4"
    assert SciString("", "2e8", Span.point(1, 1)).suggestion == "2.0e+8"
    assert yaml.safe_load("x: " + SciString("", "2e8", Span.point(1, 1)).suggestion)["x"] == 2e8


def test_sci_string_through_alias_is_reported_at_the_alias():
    tree = parse_yaml("base: &b {eps: 1e-8}\nother: *b\n")
    pointers = {s.pointer: s.span.line for s in tree.sci_strings}
    assert pointers == {"/base/eps": 1, "/other/eps": 2}


def test_alias_bomb_is_bounded_and_fast():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    start = time.process_time()
    tree = parse_yaml("\n".join(lines) + "\n")
    assert time.process_time() - start < 1.0
    assert not tree.ok
    [diag] = tree.diagnostics
    assert diag.code == "TL001" and f"exceeds {MAX_NODES} values" in diag.message


def test_deep_nesting_is_refused_not_a_crash():
    tree = parse_yaml("[" * 100_000)
    # trainlint's own limit, or, with the libyaml of PyYAML 6.0.4 (whose scanner runs ahead of the
    # events and refuses more than 1000 levels itself), libyaml's: either way one TL002, at the nesting
    assert [(d.code, d.line) for d in tree.diagnostics] == [("TL002", 1)]
    assert tree.diagnostics[0].column in (MAX_DEPTH + 1, 1001)
    assert "nesting" in tree.diagnostics[0].message


def test_recursive_alias_is_refused():
    tree = parse_yaml("a: &x [1, *x]\n")
    assert codes(tree) == [("TL002", 1, 11)]


def test_python_tags_are_refused_with_position():
    tree = parse_yaml("a: 1\nb: !!python/object/apply:os.system ['ls']\n")
    assert codes(tree) == [("TL002", 2, 4)]
    assert "Python object" in tree.diagnostics[0].message


def test_syntax_error_position_and_readable_text():
    # the malformed public NeoX config: a comma missing after a nested list
    text = '{\n  "attention-config": [[["flash"], 36]]\n  "num-layers": 2,\n}\n'
    tree = parse_yaml(text)
    assert codes(tree) == [("TL002", 3, 3)]
    assert "comma missing" in tree.diagnostics[0].message
    assert "<" not in tree.diagnostics[0].message


def test_tab_indentation():
    tree = parse_yaml("a:\n\tb: 1\n")
    assert codes(tree) == [("TL002", 2, 1)]
    assert "tab" in tree.diagnostics[0].message


def test_second_document_and_empty_file():
    assert codes(parse_yaml("a: 1\n---\nb: 2\n")) == [("TL002", 2, 1)]
    empty = parse_yaml("# nothing here\n")
    assert empty.ok and empty.empty and empty.data is None


def test_merge_keys_follow_pyyaml():
    text = "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n"
    assert parse_yaml(text).data == yaml.safe_load(text)


def test_non_string_keys_are_recorded():
    tree = parse_yaml("1: a\nnull: b\n")
    assert [(k.pointer, k.value) for k in tree.non_string_keys] == [("/1", 1), ("/null", None)]


@pytest.mark.parametrize("text", ["a: [", "{a: 1", "a: 'x", "a: *nope", "? [1]\n: 2", "a: \x07", "- a\nb: 1"])
def test_garbage_never_raises(text):
    tree = parse_yaml(text)
    assert not tree.ok


def test_the_same_text_quoted_or_plain_reads_as_pyyaml_reads_it_every_time():
    """The resolver's tag and the constructed scalar are remembered by text: how a scalar is written
    (plain or quoted) is part of what is remembered, so `true` and `"true"`, `1` and `'1'` stay apart."""
    text = ("a: true\nb: \"true\"\nc: 1\nd: '1'\ne: 0x10\nf: 1e3\ng: 1.0e3\nh: null\ni: ~\nj: 'null'\n"
            "k: [true, 'true', 1, '1', 1_000]\nl: .inf\nm: yes\n")
    expected = yaml.safe_load(text)
    for _ in range(3):  # remembered from the first read on
        tree = parse_yaml(text)
        assert tree.ok and tree.data == expected
        assert [type(v) for v in tree.data.values()] == [type(v) for v in expected.values()]
