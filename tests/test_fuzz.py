"""Fuzzing with hypothesis: random and mutated configs of each format through check, the rules,
the estimator and its reports. No exception escapes, no TL998/TL999, nothing hangs.

The run is bounded and repeatable in CI (derandomized, ``TRAINLINT_FUZZ_EXAMPLES`` examples per
test, default 40). For a deeper search run
``TRAINLINT_FUZZ_EXAMPLES=2000 TRAINLINT_FUZZ_RANDOM=1 python -m pytest tests/test_fuzz.py``,
or the atheris target ``python fuzz/atheris_check.py`` (see its docstring).
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache, cache

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from fuzz_harness import exercise, seed_files  # noqa: E402
from trainlint.schemas import load_schema  # noqa: E402

EXAMPLES_PER_TEST = int(os.environ.get("TRAINLINT_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES_PER_TEST,
    deadline=None,  # the harness's watchdog catches hangs; speed is the benchmarks' business
    derandomize=not os.environ.get("TRAINLINT_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Values that have broken parsers and estimators before: zero, negative, huge, not-a-number,
# placeholders, shell, non-BMP characters, YAML's surprises.
NASTY = ["0", "-1", "1e400", "-Infinity", "NaN", "nan", "99999999999999999999999", "3.5", "1e-5", "\"auto\"", "auto",
         "", "null", "~", "yes", "0x10", "$TP", "${TP:-}", "$(echo 4)", "`id`", "$((8/0))", "\"\U0001F600\"", "[]", "{}",
         "&a", "*a", "!!python/object:os.system", "<<", "'", "\"", "\\", "${", "\u0000"]


def _interesting() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(NASTY), st.integers(-2**70, 2**70).map(str),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr),
                     st.text(max_size=12))


@lru_cache(maxsize=1)
def _seeds() -> list[tuple[str, str]]:
    out = []
    for path in seed_files():
        try:
            out.append((path.name, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    return out


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@st.composite
def mutated(draw) -> tuple[str, str]:
    name, text = draw(st.sampled_from(_seeds()))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["number", "delete", "insert", "duplicate", "truncate", "swap"]))
        if not text:
            break
        if op == "number":
            numbers = list(NUMBER.finditer(text))
            if numbers:
                m = draw(st.sampled_from(numbers))
                text = text[:m.start()] + draw(_interesting()) + text[m.end():]
        elif op == "delete":
            a = draw(st.integers(0, len(text) - 1))
            text = text[:a] + text[a + draw(st.integers(1, 40)):]
        elif op == "insert":
            a = draw(st.integers(0, len(text)))
            text = text[:a] + draw(st.one_of(_interesting(), st.text(max_size=30))) + text[a:]
        elif op == "duplicate":
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif op == "truncate":
            text = text[:draw(st.integers(0, len(text)))]
        else:
            lines = text.split("\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return name, text


@cache
def _keys(schema: str) -> list[str]:
    return sorted(k for k in load_schema(schema)["properties"] if "@" not in k)


@lru_cache(maxsize=1)
def _megatron_flags() -> list[str]:
    props = load_schema("megatron")["properties"]
    return sorted({f for p in props.values() for f in p.get("x-flags", [])})


def _json_values(keys: list[str]) -> st.SearchStrategy:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**66, 2**66), st.floats(), st.text(max_size=8),
                        st.sampled_from(["auto", "bf16", "adam", "cpu", "nvme", "none"]))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(keys), inner, max_size=6)), max_leaves=25)


@st.composite
def deepspeed_json(draw) -> tuple[str, str]:
    keys = _keys("deepspeed")
    config = draw(st.dictionaries(st.sampled_from(keys), _json_values(keys), min_size=1, max_size=12))
    return "ds_config.json", json.dumps(config, indent=draw(st.sampled_from([None, 2])))


@st.composite
def neox_yaml(draw) -> tuple[str, str]:
    keys = _keys("neox")
    config = draw(st.dictionaries(st.sampled_from(keys), _json_values(keys), min_size=1, max_size=15))
    return "neox.yml", yaml.safe_dump(config, default_flow_style=draw(st.booleans()))


@st.composite
def megatron_script(draw) -> tuple[str, str]:
    flags = _megatron_flags()
    words = []
    for _ in range(draw(st.integers(1, 25))):
        words.append(draw(st.sampled_from(flags)))
        if draw(st.booleans()):
            words.append(draw(_interesting()))
    junk = draw(st.sampled_from(["", "TP=4\n", "ARGS=(\n", "if [ $X ]; then\n", "cat <<EOF\n", "export A=$(hostname)\n",
                                 "for i in 1 2; do\n", "set -e\nsource env.sh\n", "OPTS=\"--x \\\"y\\\"\"\n"]))
    entry = draw(st.sampled_from(["python pretrain_gpt.py", "torchrun --nproc_per_node 8 pretrain_gpt.py",
                                  "deepspeed --num_gpus 8 pretrain_gpt.py", "python -m megatron.training"]))
    separator = draw(st.sampled_from([" ", " \\\n  "]))
    return "pretrain_gpt.sh", "#!/bin/bash\n" + junk + entry + separator + separator.join(words) + "\n"


@pytest.mark.slow
@FUZZ
@given(mutated())
def test_mutated_seed_configs(case):
    exercise(*case)


@FUZZ
@given(deepspeed_json())
def test_random_deepspeed_json(case):
    exercise(*case)


@FUZZ
@given(neox_yaml())
def test_random_neox_yaml(case):
    exercise(*case)


@FUZZ
@given(megatron_script())
def test_random_megatron_scripts(case):
    exercise(*case)


@FUZZ
@given(st.sampled_from(["ds_config.json", "neox.yml", "train.sh", "config.yaml"]), st.text(max_size=400))
def test_arbitrary_text(name, text):
    exercise(name, text)


@FUZZ
@given(st.binary(max_size=400))
def test_arbitrary_bytes_through_decoding(data):
    from trainlint.files.sources import UnreadableSource, decode

    try:
        text = decode(data, "x.json")
    except UnreadableSource:
        return
    exercise("x.json", text)


# ============================================ issue 20: write-back and the language server

from fuzz_harness import ENCODINGS, LSP_METHODS, exercise_lsp, exercise_write_back  # noqa: E402

_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=20)


@FUZZ
@given(st.lists(_LINE, min_size=1, max_size=12), st.data(), st.sampled_from(sorted(ENCODINGS)),
       st.one_of(st.none(), st.sampled_from(["write", "fsync", "replace", "fchmod"])))
def test_write_back_keeps_encoding_line_ends_and_never_loses_the_file(lines, data, encoding, fail):
    ends = data.draw(st.lists(st.sampled_from(["\n", "\r\n", "\r", ""]), min_size=len(lines), max_size=len(lines)))
    ends = [e or "\n" for e in ends[:-1]] + ends[-1:]  # only the last line may lack an end
    normalised = "\n".join(lines) + ("\n" if ends[-1] else "")
    edit = data.draw(st.one_of(
        st.just(normalised),
        st.builds(lambda a, t: normalised[:a] + t + normalised[a:], st.integers(0, len(normalised)),
                  st.text(st.characters(blacklist_characters="\r"), max_size=30)),
        st.builds(lambda a, b: normalised[:a] + normalised[b:], st.integers(0, len(normalised)),
                  st.integers(0, len(normalised)))))
    exercise_write_back(lines, ends, encoding, edit, fail)


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
                     max_leaves=12)


@st.composite
def lsp_message(draw) -> dict:
    method = draw(st.sampled_from(LSP_METHODS))
    uri = draw(st.sampled_from(["file:///tmp/trainlint-fuzz/ds_config.json", "file:///tmp/trainlint-fuzz/n.yml", "x"]))
    text = draw(st.one_of(st.text(max_size=80), st.sampled_from(['{"train_micro_batch_size_per_gpu": 4}', "num_layers: 2\n"])))
    good = {"textDocument": {"uri": uri, "languageId": "json", "version": draw(st.integers(0, 5)), "text": text},
            "contentChanges": [{"text": text}], "position": {"line": draw(st.integers(0, 3)), "character": 0},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "context": {"diagnostics": []}, "changes": [], "processId": None, "rootUri": None, "capabilities": {},
            "id": 1}
    params = draw(st.one_of(st.just(good), _JSON))
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    if draw(st.booleans()):
        message["id"] = draw(st.integers(1, 10**6))
    return message


@pytest.mark.slow
@FUZZ
@given(st.lists(lsp_message(), min_size=1, max_size=6))
def test_language_server_protocol_answers_every_request(messages):
    exercise_lsp([{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"processId": None, "rootUri": None, "capabilities": {}}}] + messages)
