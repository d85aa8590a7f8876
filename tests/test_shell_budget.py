"""Issue 29, H1/H2: the shell evaluator's values and pattern matches are bounded (one budget,
adapters/megatron/shell_budget.py), and ordinary scripts still get bash's values."""

from __future__ import annotations

import time

import pytest

from trainlint.adapters.megatron.shell import evaluate
from trainlint.adapters.megatron.shell_budget import MAX_VALUE_CHARS
from trainlint.files.sources import SourceText


def run(text: str):
    def read(path: str) -> SourceText:
        raise OSError(path)

    return evaluate(SourceText("/tmp/x/launch.sh", text), read)


def scalar(result, name: str) -> str | None:
    segs = result.env.values[name].as_scalar()
    return None if any(s.unknown for s in segs) else "".join(s.text for s in segs)


def test_doubling_a_variable_stops_at_the_budget_with_one_tl012():
    # 24 doublings: 48 s and 555 MB before the budget (issue 29, H1)
    start = time.process_time()
    result = run("X=ab\n" + "X=$X$X\n" * 24 + "Y=$X\n")
    assert time.process_time() - start < 5
    assert scalar(result, "X") is None  # past the budget: unknown, with the reason
    reasons = [s.unknown for s in result.env.values["X"].as_scalar() if s.unknown]
    assert reasons and "trainlint does not build it" in reasons[0]
    tl012 = [d for d in result.diagnostics if d.code == "TL012"]
    assert len(tl012) == 1 and "up to a limit" in tl012[0].message and tl012[0].span.line < 26


def test_doubling_an_array_and_chained_variables_stop_too():
    result = run("A=(a b)\n" + 'A=("${A[@]}" "${A[@]}")\n' * 28)
    assert len(result.env.values["A"].as_fields()) < 20_000
    chained = "V0=" + "x" * 1000 + "\n" + "".join(f"V{i + 1}=" + f"$V{i}" * 8 + "\n" for i in range(12))
    result = run(chained)
    assert scalar(result, "V1") == "x" * 8000 and scalar(result, "V12") is None
    assert [d.code for d in result.diagnostics] == ["TL012"]


def test_replacement_that_would_explode_is_refused_before_it_is_built():
    result = run("X=" + "a" * 200_000 + "\n" + "Y=${X//a/aaaaaaaaaa}\n")
    assert scalar(result, "Y") is None
    assert [d.code for d in result.diagnostics] == ["TL012"]


def test_small_values_keep_bash_semantics():
    result = run('X=ab\nX=$X$X\nX=$X$X\nA=(1 "2 3")\nB=("${A[@]}" "${A[@]}")\nP=/a/b/c.tar.gz\n'
                 'D=${P%/*}\nF=${P##*/}\nE=${P#*.}\nS=${P%%.*}\nR=${P//a/AA}\n'
                 'if [[ $F == c.* ]]; then M=yes; else M=no; fi\ncase $F in *.gz) C=gz;; *) C=other;; esac\n')
    assert scalar(result, "X") == "abababab"
    assert [f.text for f in result.env.values["B"].as_fields()] == ["1", "2 3", "1", "2 3"]
    assert (scalar(result, "D"), scalar(result, "F"), scalar(result, "E"), scalar(result, "S")) == (
        "/a/b", "c.tar.gz", "tar.gz", "/a/b/c")
    assert scalar(result, "R") == "/AA/b/c.tAAr.gz"
    assert (scalar(result, "M"), scalar(result, "C")) == ("yes", "gz")
    assert not result.diagnostics


@pytest.mark.parametrize("size", [300_000 - 16, MAX_VALUE_CHARS - 16])
def test_prefix_removal_on_a_large_value_is_linear_and_exact(size):
    # 105 s of backtracking on 300 KB before (issue 29, H2); the value is under the budget and known
    value = "a" * size + "b" + "cd"
    start = time.process_time()
    result = run(f"X={value}\nY=${{X##*a*b}}\nZ=${{X%%b*}}\nW=${{X#*a*b}}\nif [[ $X == *a*b*e ]]; then Q=1; fi\n")
    assert time.process_time() - start < 5
    assert scalar(result, "Y") == ("cd" if size <= MAX_VALUE_CHARS else None)
    if size <= MAX_VALUE_CHARS:
        assert scalar(result, "Z") == "a" * size and scalar(result, "W") == "cd" and "Q" not in result.env.values


def test_patterns_match_as_fnmatch_did():
    import fnmatch
    import random

    from trainlint.adapters.megatron.shell_pattern import Glob, fullmatch, remove_prefix, remove_suffix

    rng = random.Random(29)
    for _ in range(3000):
        pattern = "".join(rng.choice("ab*?[]!-") for _ in range(rng.randint(0, 6)))
        text = "".join(rng.choice("ab[]-!") for _ in range(rng.randint(0, 8)))
        glob = Glob.of(pattern)
        assert fullmatch(glob, text) == fnmatch.fnmatchcase(text, pattern), (pattern, text)
        prefixes = [i for i in range(len(text) + 1) if fnmatch.fnmatchcase(text[:i], pattern)]
        suffixes = [i for i in range(len(text) + 1) if fnmatch.fnmatchcase(text[i:], pattern)]
        assert remove_prefix(glob, text, False) == (text[prefixes[0]:] if prefixes else text)
        assert remove_prefix(glob, text, True) == (text[prefixes[-1]:] if prefixes else text)
        assert remove_suffix(glob, text, False) == (text[:suffixes[-1]] if suffixes else text)
        assert remove_suffix(glob, text, True) == (text[:suffixes[0]] if suffixes else text)
