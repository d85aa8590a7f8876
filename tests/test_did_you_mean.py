""""Did you mean": the prefilters before difflib (lengths, shared characters) drop only names difflib
itself would reject, so the answers are exactly difflib's over the normalised names."""

from __future__ import annotations

import difflib
import random

import pytest

from trainlint.adapters.megatron.flag_table import flag_table
from trainlint.files.did_you_mean import _closest, _norm, did_you_mean
import functools


def reference(name: str, pool: tuple[str, ...], limit: int) -> tuple[str, ...]:
    """difflib over every normalised name (the first candidate of each), no prefilter, then the
    edit bound (a third of the typed name's length), by a plain Levenshtein-with-swaps written here."""
    by_norm: dict[str, str] = {}
    for cand in pool:
        by_norm.setdefault(_norm(cand), cand)
    target = _norm(name)
    if target in by_norm and by_norm[target] != name:
        return (by_norm[target],)
    close = difflib.get_close_matches(target, list(by_norm), n=len(by_norm), cutoff=0.75)
    bound = max(len(target), 3) // 3

    def cut_short(a: str, b: str) -> bool:
        short, long = (a, b) if len(a) <= len(b) else (b, a)
        return short in long and len(short) >= len(long) * 2 / 3

    return tuple(by_norm[c] for c in close if _distance(target, c) <= bound or cut_short(target, c))[:limit]


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap of neighbours) from a to b, by memoised recursion."""

    @functools.cache
    def d(i: int, j: int) -> int:
        if i == 0 or j == 0:
            return i + j
        best = min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))
        if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
            best = min(best, d(i - 2, j - 2) + 1)
        return best

    return d(len(a), len(b))


def typos(words: list[str], count: int, seed: int) -> list[str]:
    """Names near and far from the table's: dropped, doubled, swapped and replaced characters."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        word = list(rng.choice(words))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(word))
            edit = rng.randrange(4)
            if edit == 0 and len(word) > 1:
                del word[i]
            elif edit == 1:
                word.insert(i, word[i])
            elif edit == 2 and i + 1 < len(word):
                word[i], word[i + 1] = word[i + 1], word[i]
            else:
                word[i] = rng.choice("abcdefghijklmnopqrstuvwxyz_-0123456789")
        out.append("".join(word))
    return out


@pytest.mark.parametrize("limit", [1, 3])
def test_the_closest_flags_are_difflibs(limit):
    pool = tuple(flag_table().all_flags)
    names = typos(list(pool), 300, seed=limit) + ["--bert-prob", "--tokenizer-name-or-path", "--num_layers", "", "-",
                                                  "--x", "--" + "a" * 80, "--ñandú-size", "--NUM-LAYERS"]
    for name in names:
        assert _closest(name, pool, limit) == reference(name, pool, limit), name


def test_small_pools_and_repeated_characters():
    pool = ("aaa", "aab", "abb", "bbb", "a", "", "zero_optimization", "zero_allow_untested_optimizer")
    for name in ("aaa", "aaab", "ab", "b", "", "zero_optimisation", "zero_optimizer", "optimization_zero"):
        for limit in (1, 3):
            assert _closest(name, pool, limit) == reference(name, pool, limit), name
    assert did_you_mean("train_micro_batch_size_per_gpu2", ["train_micro_batch_size_per_gpu"]) == \
        ["train_micro_batch_size_per_gpu"]


def test_a_lookup_counts_the_characters_of_names_near_its_length_only():
    from trainlint.files.did_you_mean import _profiles

    pool = ("--num-layers", "--hidden-size", "--a-very-long-flag-name-nobody-types", "--lr")
    assert _closest("--num-layer", pool, 1) == ("--num-layers",)
    counted = {length: group.counts is not None for length, group in _profiles(pool)}
    assert counted == {len("num_layers"): True, len("hidden_size"): True,
                       len("a_very_long_flag_name_nobody_types"): False, len("lr"): False}


def test_a_close_ratio_is_not_enough_without_few_edits():
    """`_comment` shares the letters of `comet` (ratio 0.77) but is three edits from it in eight
    letters; a typo of a long name stays within a third of its length."""
    assert difflib.SequenceMatcher(None, "_comment", "comet").ratio() >= 0.75
    assert did_you_mean("_comment", ["comet", "comms_logger"]) == []
    assert did_you_mean("--recompute", ["--recompute-sound", "--recompute-method"]) == []
    # a name cut short by less than a third of the known one is still that name
    assert did_you_mean("train_micro_batch_size", ["train_micro_batch_size_per_gpu"]) == \
        ["train_micro_batch_size_per_gpu"]
    assert did_you_mean("gradient_clip", ["gradient_clipping"]) == ["gradient_clipping"]  # 4 edits in 13
    assert did_you_mean("zero_optimisation", ["zero_optimization", "zero_allow_untested_optimizer"]) == \
        ["zero_optimization"]
