"""The position-tracking JSON/hjson reader behind the DeepSpeed adapter."""

from __future__ import annotations

import json
import math
import time

import pytest

from trainlint.adapters.text.json_tree import MAX_DEPTH, parse
from trainlint.core.positions import Span


def codes(tree):
    return [(d.code, d.line, d.column) for d in tree.diagnostics()]


def test_key_and_value_spans_of_nested_objects_and_arrays():
    text = '{\n  "zero_optimization": {\n    "stage": 3\n  },\n  "betas": [0.9, {"x": true}]\n}'
    tree = parse(text)
    assert tree.ok and tree.value == json.loads(text)
    assert tree.key_spans["/zero_optimization"] == Span(2, 3, 2, 22)
    assert tree.value_spans["/zero_optimization"] == Span(2, 24, 4, 4)
    assert tree.key_spans["/zero_optimization/stage"] == Span(3, 5, 3, 12)
    assert tree.value_spans["/zero_optimization/stage"] == Span(3, 14, 3, 15)
    assert tree.value_spans["/betas"] == Span(5, 12, 5, 30)
    assert tree.value_spans["/betas/0"] == Span(5, 13, 5, 16)
    assert tree.key_spans["/betas/1/x"] == Span(5, 19, 5, 22)
    assert tree.value_spans["/betas/1/x"] == Span(5, 24, 5, 28)
    assert tree.value_spans[""] == Span(1, 1, 6, 2)
    assert tree.diagnostics() == []


def test_columns_count_code_points_and_tabs():
    text = '{"näme": "é😀", \t"b":\t1}'
    tree = parse(text)
    assert tree.value == {"näme": "é😀", "b": 1}
    assert tree.key_spans["/näme"] == Span(1, 2, 1, 8)
    assert tree.value_spans["/näme"] == Span(1, 10, 1, 14)
    assert tree.key_spans["/b"] == Span(1, 17, 1, 20)
    assert tree.value_spans["/b"] == Span(1, 22, 1, 23)


def test_pointer_escaping_of_keys_with_slash_and_tilde():
    tree = parse('{"a/b": {"c~d": 1}}')
    assert tree.value_spans["/a~1b/c~0d"] == Span(1, 17, 1, 18)


def test_numbers_follow_json_loads():
    tree = parse('{"a": 2e8, "b": 1.0, "c": -5, "d": 1E-5, "e": 10000000000000000000000}')
    assert tree.value == {"a": 2e8, "b": 1.0, "c": -5, "d": 1e-5, "e": 10**22}
    assert isinstance(tree.value["a"], float) and isinstance(tree.value["c"], int)


def test_escapes_and_surrogate_pairs():
    tree = parse(r'{"s": "a\"b\\c\u00e9\ud83d\ude00"}')
    assert tree.value == {"s": 'a"b\\cé😀'}


def test_hjson_comments_are_accepted_and_reported_once_per_kind():
    text = '{\n  // a comment\n  "a": 1, # another\n  /* block\n  */ "b": 2\n}'
    tree = parse(text)
    assert tree.ok and tree.value == {"a": 1, "b": 2}
    assert codes(tree) == [("TL010", 2, 3)]
    assert "3 in this file" in tree.diagnostics()[0].message


def test_trailing_commas_and_line_break_separators():
    tree = parse('{\n  "a": [1, 2,],\n  "b": 1\n  "c": 2,\n}')
    assert tree.value == {"a": [1, 2], "b": 1, "c": 2}
    found = {(d.line, d.column): d.message for d in tree.diagnostics()}
    assert set(found) == {(2, 13), (4, 3)}
    assert found[(2, 13)].startswith("trailing commas (2 in this file)")
    assert found[(4, 3)].startswith("members separated by a line break")


def test_unquoted_keys_and_single_quoted_strings():
    tree = parse("{stage: 3, 'device': 'cpu'}")
    assert tree.value == {"stage": 3, "device": "cpu"}
    assert codes(tree) == [("TL010", 1, 2), ("TL010", 1, 12)]


def test_bare_placeholders_are_unresolved_strings():
    text = '{\n  "train_batch_size" : GB_SIZE,\n  "x": [CL_1st_MIN, 2]\n}'
    tree = parse(text)
    assert tree.ok
    assert tree.value == {"train_batch_size": "GB_SIZE", "x": ["CL_1st_MIN", 2]}
    assert tree.unresolved == {"/train_batch_size": "template placeholder GB_SIZE",
                               "/x/0": "template placeholder CL_1st_MIN"}
    assert codes(tree) == [("TL007", 2, 24), ("TL007", 3, 9)]
    assert "template placeholder GB_SIZE, filled by a script before launch" in tree.diagnostics()[0].message


def test_lowercase_bare_word_is_an_hjson_string_and_its_comma_is_flagged():
    tree = parse('{\n  "device": cpu,\n  "other": yes\n}')
    assert tree.value == {"device": "cpu", "other": "yes"}
    diags = tree.diagnostics()
    assert [(d.code, d.line, d.column, d.severity.value) for d in diags] == [
        ("TL010", 2, 13, "warning"), ("TL010", 3, 12, "info")]
    assert '"cpu,"' in diags[0].message


def test_python_true_gets_a_hint():
    tree = parse('{\n  "enabled": True\n}')
    [diag] = tree.diagnostics()
    assert (diag.code, diag.line, diag.column) == ("TL010", 2, 14)
    assert "write true" in diag.message


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_reported(token):
    tree = parse(f'{{"lr": {token}\n}}')
    assert tree.ok and math.isnan(tree.value["lr"]) if token == "NaN" else math.isinf(tree.value["lr"])
    [diag] = tree.diagnostics()
    assert (diag.code, diag.line, diag.column, diag.severity.value) == ("TL010", 1, 8, "warning")
    assert "not a JSON number" in diag.message


def test_duplicate_keys_keep_both_positions_and_report_the_second():
    text = '{\n  "zero_optimization": {"stage": 1, "x": 2},\n  "zero_optimization": {"stage": 3}\n}'
    tree = parse(text)
    assert tree.ok
    assert tree.value == {"zero_optimization": {"stage": 3}}
    [dup] = tree.duplicates
    assert dup.first == Span(2, 3, 2, 22) and dup.second == Span(3, 3, 3, 22)
    assert codes(tree) == [("TL003", 3, 3)]
    diag = tree.diagnostics()[0]
    assert "first at line 2" in diag.message and diag.related[0].span == Span(2, 3, 2, 22)
    # positions of the first (dropped) value are gone, the second's are kept
    assert "/zero_optimization/x" not in tree.key_spans
    assert tree.value_spans["/zero_optimization/stage"] == Span(3, 34, 3, 35)


def test_nested_duplicate():
    tree = parse('{"a": {"b": 1,\n "b": 2}}')
    assert codes(tree) == [("TL003", 2, 2)]


@pytest.mark.parametrize("text, line, column, message", [
    ('{\n  "zero_optimization": {\n    "stage": 3 "x": 1}}', 3, 16,
     "expected ',' or '}' after the value of \"stage\""),
    ('{"a": [1 2]}', 1, 10, "expected ',' or ']' after element 0 of \"a\""),
    ('{"a" 1}', 1, 6, "expected ':' after the key \"a\""),
    ('{"a": }', 1, 7, "expected a value for \"a\", found '}'"),
    ('{"a": 1,, "b": 2}', 1, 9, "unexpected ','"),
    ('{\n  "a": "open\n}', 2, 8, "unterminated string"),
    ('{"a": 01}', 1, 7, "invalid number '01'"),
    ('{"a": 1.}', 1, 7, "invalid number '1.'"),
    ('{"a": "\\q"}', 1, 8, "invalid escape"),
    ('{"a": 1} {"b": 2}', 1, 10, "unexpected '{' after the end of the document"),
    ('{\n  "a": {\n    "b": 1\n', 4, 1, "'{' opened at line 2 column 8 is not closed"),
    ('', 1, 1, "empty document"),
    ('  /* only a comment', 1, 3, "unterminated /* comment"),
    ('{"a": [1, 2}', 1, 12, "expected ',' or ']' after element 1 of \"a\", found '}'"),
])
def test_syntax_errors_at_exact_positions(text, line, column, message):
    tree = parse(text)
    assert not tree.ok
    [diag] = [d for d in tree.diagnostics() if d.code == "TL002"]
    assert (diag.line, diag.column) == (line, column), diag.message
    assert message in diag.message


def test_deep_nesting_is_a_syntax_error_not_a_recursion_error():
    start = time.process_time()
    tree = parse("[" * 100_000)
    assert not tree.ok
    assert "nesting too deep" in tree.error.message
    assert tree.error.span.column == MAX_DEPTH + 1
    assert time.process_time() - start < 2.0


def test_nesting_up_to_the_limit_is_fine():
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse(text).ok


def test_time_is_linear():
    def timed(n: int) -> float:
        text = "{" + ",".join(f'"k{i}": {{"a": [1, 2.5, "x", true, null]}}' for i in range(n)) + "}"
        start = time.process_time()
        assert parse(text).ok
        return time.process_time() - start

    small, large = timed(2_000), timed(20_000)
    assert large < small * 25  # 10x the input, well under quadratic


def test_never_raises_on_garbage():
    for text in ["{", "}", "[", "]", ":", ",", '"', "'", "{'", "{\"a\":", "{a", "[,]", "{,}", "\x00", "/", "/*",
                 "{\"a\": -}", "{\"a\": tru}", "{\"a\": '''x}", "-", "nul", "[1,]]"]:
        parse(text)  # must not raise
