"""The strict-JSON path of the JSON reader (issue 33): a text it reads gives the tree the full
(hjson) reader gives, keys and spans in the same order; any other text is left to the full reader."""

from __future__ import annotations

import random
from pathlib import Path

from trainlint.adapters.text import json_tree

REPO = Path(__file__).resolve().parents[1]

SAMPLES = [
    '{"a": 1, "b": [1, 2.5, -3e-2, true, false, null, "x"], "c": {"d": {}, "e": []}}',
    '{\n  "zero_optimization": {\n    "stage": 3\n  },\n  "betas": [0.9, {"x": true}]\n}\n',
    '{"näme": "é😀", \t"b":\t1, "esc\\"aped/~key": "line\\nbreak \\u00e9"}',
    '[{"a": 1}, [], [[0]], {"": ""}]', '{"a": 12345678901234567890123}', '{"a": 1e400}',
]
NOT_STRICT = [
    '{"a": 1,}', '{"a": 1 "b": 2}', '{"a": 1\n "b": 2}', "{'a': 1}", '{a: 1}', '{"a": NaN}', '{"a": 1} x',
    '{"a": 01}', '{"a": 1.}', '{"a": truex}', '{"a": "tab\there"}', '{"a": 1, "a": 2}', '"just a string"',
    '{"a": [1, 2,]}', '{"a": -Infinity}', '{"a": GB_SIZE}', '// c\n{"a": 1}', '{"a": 1} // c', '{"a":\ufeff1}',
    '{"a": "\\x"}', '', '   ', '{', '{"a": {"b": [}]}',
]


def _texts() -> list[str]:
    texts = SAMPLES + NOT_STRICT
    texts += [p.read_text(errors="replace") for p in sorted((REPO / "examples").glob("*.json"))]
    return texts


def _variants(text: str, count: int, rnd: random.Random) -> list[str]:
    junk = ["", '"', "{", "}", "[", "]", ":", ",", "-", "#", "//", "\n", " ", "\\", "\t", "\x01", "0", "1.5e3",
            "true", "nulls", '"k": 1,', '"k": {}', "'", "\ufeff", "é"]
    out = []
    for _ in range(count):
        i = rnd.randrange(len(text) + 1)
        j = min(len(text), i + rnd.randrange(8))
        out.append(text[:i] + rnd.choice(junk) + text[j:])
    return out


def _same(text: str) -> bool | None:
    """Whether the strict path, when it reads ``text``, gives the full reader's tree (None: it left it)."""
    fast = json_tree._parse_strict(text)
    if fast is None:
        return None
    full = json_tree.parse_full(text)
    return (fast == full and list(fast.key_spans) == list(full.key_spans)
            and list(fast.value_spans) == list(full.value_spans) and repr(fast.value) == repr(full.value))


def test_strict_path_gives_the_full_readers_tree_on_edited_texts():
    rnd = random.Random(33)
    texts = [v for t in _texts() for v in [t, *_variants(t, 120, rnd)]]
    verdicts = [_same(t) for t in texts]
    assert all(v is not False for v in verdicts), [t for t, v in zip(texts, verdicts) if v is False][:3]
    assert verdicts.count(True) > 100  # the edits leave many texts strict JSON
    assert verdicts.count(None) > 100  # and make many of them something else


def test_strict_path_leaves_every_extension_and_error_to_the_full_reader():
    for text in NOT_STRICT:
        assert json_tree._parse_strict(text) is None, text
        assert json_tree.parse(text) == json_tree.parse_full(text)
    for text in SAMPLES:
        assert _same(text) is True, text


def test_strict_path_on_the_corpus(corpus_dir: Path):
    read = 0
    for path in sorted(corpus_dir.rglob("*.json")):
        text = path.read_text(encoding="utf-8", errors="replace").removeprefix("\ufeff")
        verdict = _same(text)
        assert verdict is not False, path
        read += verdict is True
    assert read > 50  # most public DeepSpeed configs are strict JSON
