"""The Megatron reader's short cuts give what the long way gives (issue 33's speed work).

Each short cut is compared with the general code it stands for, on generated input and (where
../shared is present) on every launch script of the corpus:

* a continued string's words split by walking its runs (``words._mapped_words``) against
  ``Seg.piece`` for each word;
* a variable passed by before splitting (``adapter._may_hold_flags``) never holds two flag words;
* a one-literal command name and a literal assignment value (``_word_fields``, ``_assign``) against
  the pieces-and-split path they skip.
"""

from __future__ import annotations

import random

import pytest

from tests.conftest import CORPUS, SHARED_ABSENT
from trainlint.adapters.megatron.adapter import _fields_of, _may_hold_flags
from trainlint.adapters.megatron.shell import MAX_STEPS, ShellEvaluator
from trainlint.adapters.megatron.shell_expansion import _DQ_ESCAPE, _ESCAPE
from trainlint.adapters.megatron.shell_text import MAX_NESTING, FileText, _parser
from trainlint.adapters.megatron.words import (
    _IFS_WORD,
    Field,
    Loc,
    Seg,
    VarValue,
    _mapped_words,
    split_pieces,
    unescaped_seg,
    without_chars,
)
from trainlint.files.sources import SourceText, read_source

_CHARS = ["a", "b", "-", " ", "\t", "\n", "\\\n", '\\"', "\\\\", "\\$", "\\", "x"]


def _continued_segs(seed: int, count: int) -> list[Seg]:
    """Segs with runs, as the evaluator makes them from strings with escapes and continued lines."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        raw = "".join(rng.choice(_CHARS) for _ in range(rng.randint(1, 40)))
        seg = unescaped_seg(raw, Loc("x.sh", 7, 7 + len(raw)), rng.choice([_DQ_ESCAPE, _ESCAPE]))
        if rng.random() < 0.3:
            seg = without_chars(seg, "\"'")
        if seg.runs is not None and not seg.exact and seg.loc is not None:
            out.append(seg)
    return out


def test_mapped_words_are_the_pieces_of_each_word() -> None:
    compared = 0
    for seg in _continued_segs(33, 3000):
        spans = [m.span() for m in _IFS_WORD.finditer(seg.text)]
        fast = _mapped_words(seg, spans)
        slow = [seg.piece(start, end) for start, end in spans]
        assert fast == slow, seg  # Seg equality compares text, place, exactness, runs and the rest
        compared += len(spans)
    assert compared > 3000


def _value(rng: random.Random) -> VarValue:
    words = ["--num-layers", "--lr", "8", "-", "--", "-x", "a--b", "--hidden-size=4", " ", "\n", "$X"]
    segs = []
    for _ in range(rng.randint(0, 8)):
        if rng.random() < 0.15:
            segs.append(Seg("", None, False, "$X (not set in the script)"))
        else:
            segs.append(Seg("".join(rng.choice(words) for _ in range(rng.randint(1, 3))), None, False))
    if rng.random() < 0.4:
        half = len(segs) // 2
        return VarValue(array=[Field(tuple(segs[:half])), Field(tuple(segs[half:]))])
    return VarValue(scalar=tuple(segs))


def test_a_variable_passed_by_holds_no_two_flags() -> None:
    rng = random.Random(34)
    passed = 0
    for _ in range(5000):
        value = _value(rng)
        if _may_hold_flags(value):
            continue
        passed += 1
        flags = [f for f in _fields_of(value) if f.text and f.text.startswith("--")]
        assert len(flags) < 2, value
    assert passed > 500  # the test saw variables passed by, not only ones split


def _command_name_nodes(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "command_name":
            yield n
        stack.extend(n.children)


def _scripts() -> list[str]:
    generated = [
        "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2\nA=8\nB=/a/b\nC=\"x y\"\n",
        "mkdir -p \"$D\"; 'python' x.py; $PY x.py; ./run.sh; A=1 B=2 env\nN=12\nX=a\\\\b\n",
        "{ " * (MAX_NESTING - 2) + "echo x; A=1; " + "}; " * (MAX_NESTING - 2) + "\n",
        "{ " * MAX_NESTING + "echo x; A=1; " + "}; " * MAX_NESTING + "\n",
    ]
    out = list(generated)
    if (CORPUS / "MANIFEST.tsv").is_file():
        out += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(CORPUS.rglob("*.sh"))]
    return out


def test_command_names_read_as_the_long_way_reads_them() -> None:
    """Every command name of the scripts: ``_word_fields`` (with its one-literal short cut) against
    the pieces of the name split as any other word, at every depth the short cut may see."""
    seen = 0
    for text in _scripts():
        ft = FileText.of("x.sh", text)
        tree = _parser().parse(ft.data)
        for depth in (0, MAX_NESTING - 2, MAX_NESTING - 1):
            evaluator = ShellEvaluator(SourceText("x.sh", text), read_source)
            evaluator.files["x.sh"] = ft
            for node in _command_name_nodes(tree.root_node):
                evaluator._depth = depth
                try:
                    fast = evaluator._word_fields(node, ft)
                except Exception as exc:  # noqa: BLE001 - the same exception is expected the long way
                    fast = type(exc)
                evaluator._depth = depth
                try:
                    slow = split_pieces(evaluator._pieces(node, ft, quoted=False), evaluator._loc(node, ft),
                                        bool(evaluator._uncertain))
                except Exception as exc:  # noqa: BLE001
                    slow = type(exc)
                assert fast == slow, (text[:80], node.text)
                seen += 1
    assert seen > 20


@pytest.mark.skipif(not (CORPUS / "MANIFEST.tsv").is_file(), reason=f"corpus not found ({SHARED_ABSENT})")
def test_literal_assignments_as_the_long_way() -> None:
    """The assignments of every corpus script: the values set with the literal short cut equal
    those the pieces path gives for the same nodes."""
    compared = 0
    for path in sorted(CORPUS.rglob("*.sh")):
        text = path.read_text(encoding="utf-8", errors="replace")
        ft = FileText.of(str(path), text)
        tree = _parser().parse(ft.data)
        evaluator = ShellEvaluator(SourceText(str(path), text), read_source)
        evaluator.files[str(path)] = ft
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            if node.type != "variable_assignment":
                continue
            value_node = node.child_by_field_name("value")
            name_node = node.child_by_field_name("name")
            if value_node is None or value_node.type not in ("word", "number") or name_node is None or \
                    name_node.type == "subscript":
                continue  # `A[1]=x` keeps the value in an array element: the same pieces, another shape
            result = evaluator._assign(node, ft, apply=False)
            assert result is not None
            pieces = evaluator._pieces(value_node, ft, quoted=True)
            joined = [s for p in pieces for s in p.segs if s.unknown is not None or s.text]
            assert result[1].scalar == tuple(joined)
            compared += 1
    assert compared > 100



def test_one_piece_doubt_is_the_general_answer() -> None:
    """spec_build._doubt_of's shortcut for one value of one piece gives what _variable_and_doubt gives
    (the variable a value came from whole, whether it is uncertain), for every mix of text, unknown,
    declared variable and doubt, and for values of several pieces or fields."""
    import itertools

    from trainlint.adapters.megatron.spec_build import _doubt_of, _variable_and_doubt
    from trainlint.adapters.megatron.words import Field, Loc, Seg

    loc = Loc("run.sh", 0, 1)
    segs = [Seg(text, loc, True, unknown, env, seg_doubt)
            for text, unknown, env, seg_doubt in itertools.product(("", "8"), (None, "$X"), (None, "", "GPUS"), (False, True))
            if not (unknown is not None and text)]
    fields = [Field((seg,), loc, doubt) for seg in segs for doubt in (False, True)]
    for f in fields:
        assert _doubt_of([f]) == _variable_and_doubt([f]), f
    for a, b in itertools.product(segs[:6], segs[-6:]):
        assert _doubt_of([Field((a, b), loc)]) == _variable_and_doubt([Field((a, b), loc)])
        assert _doubt_of([Field((a,), loc), Field((b,), loc)]) == _variable_and_doubt([Field((a,), loc), Field((b,), loc)])


def _word_lists(root):
    """(words, rejoin) of every command (its name and arguments) and array (its elements) below ``root``."""
    from trainlint.adapters.megatron import shell_text

    stack = [root]
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        if n.type == "command":
            name = n.child_by_field_id(shell_text.NAME_FIELD)
            if name is not None:
                yield [name, *n.children_by_field_name("argument")], True
        elif n.type == "array":
            yield n.named_children, False


def _long_way(evaluator: ShellEvaluator, words: list, ft: FileText, rejoin: bool) -> list:
    """The fields of ``words`` the general way: each word's pieces split as bash splits them (after its
    step), a word cut after a ``$`` rejoined, a comment skipped."""
    from trainlint.adapters.megatron.shell_expansion import split_at_dollar

    out: list = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.type == "comment":
            i += 1
            continue
        if rejoin and i + 1 < len(words) and split_at_dollar(word, words[i + 1]):
            out.extend(evaluator._rejoined_fields(word, words[i + 1], ft))
            i += 2
            continue
        evaluator._step(word, ft)
        out.extend(split_pieces(evaluator._pieces(word, ft, quoted=False), evaluator._loc(word, ft),
                                bool(evaluator._uncertain)))
        i += 1
    return out


def _run(evaluator: ShellEvaluator, how, *args):
    try:
        return how(evaluator, *args), evaluator._steps
    except Exception as exc:  # noqa: BLE001 - the same exception is expected both ways
        return type(exc), evaluator._steps


def test_words_read_as_the_long_way_reads_them() -> None:
    """Every command's and array's words of the scripts (generated ones with escapes, non-ASCII text
    and deep nesting, and the corpus's): ``_fields_of_words`` (literal words made in its loop) against
    each word's pieces split, with the same steps counted (MAX_STEPS is reached at the same word),
    at the depths around MAX_NESTING, in certain and uncertain branches."""
    extra = [
        "torchrun --a 1 --b \\\n  2 é --c=ü $X \"q $Y\" a\\ b 'r' $A/$B.out ${Z:-3}\nA=(--x 1 # c\n --y \\$ \"é\")\n",
        "cmd " + " ".join(f"w{i}" for i in range(200)) + "\n",  # steps past a multiple of 64 inside one command
    ]
    compared = 0
    for text in _scripts() + extra:
        ft = FileText.of("x.sh", text)
        tree = _parser().parse(ft.data)
        for words, rejoin in _word_lists(tree.root_node):
            for depth, uncertain, steps in ((0, 0, 60), (0, 1, 60), (MAX_NESTING - 1, 0, 60), (MAX_NESTING, 0, 60),
                                            (0, 0, MAX_STEPS - 2)):
                got = []
                for way in ("fast", "slow"):
                    evaluator = ShellEvaluator(SourceText("x.sh", text), read_source)
                    evaluator.files["x.sh"] = ft
                    evaluator._depth, evaluator._uncertain, evaluator._steps = depth, uncertain, steps
                    how = ShellEvaluator._fields_of_words if way == "fast" else _long_way
                    result = _run(evaluator, how, words, ft, rejoin)
                    got.append((result, [d.message for d in evaluator.diagnostics]))
                assert got[0] == got[1], (text[:80], [w.text for w in words], depth, steps)
                compared += 1
    assert compared > 50  # the generated scripts alone (the corpus adds thousands)


def test_values_hash_and_compare_by_their_fields() -> None:
    """Loc, Seg and Field (plain dataclasses, for speed: see words.py) still behave as values: equal
    when every field is, hashed alike, unequal when one field differs; replace() and pickling keep them."""
    import dataclasses
    import pickle

    a, b = Loc("x.sh", 1, 4), Loc("x.sh", 1, 4)
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != Loc("x.sh", 1, 5) and a != Loc("y.sh", 1, 4)
    s1, s2 = Seg("abc", a, True), Seg("abc", b, True)
    assert s1 == s2 and hash(s1) == hash(s2)
    for change in ({"text": "abd"}, {"exact": False}, {"unknown": "$X"}, {"env": "X"}, {"uncertain": True},
                   {"loc": None}):
        other = dataclasses.replace(s1, **change)
        assert other != s1 and s1 == s2
    f1, f2 = Field((s1,), a), Field((s2,), b)
    assert f1 == f2 and hash(f1) == hash(f2) and len({f1, f2}) == 1
    assert f1 != Field((s1,), a, True) and f1 != Field((s1, s2), a)
    assert f1.text == "abc" and f1.value_loc == a
    for value in (a, s1, f1, Field((s1, Seg("", None, False, "$Y")), a)):
        again = pickle.loads(pickle.dumps(value))
        assert again == value and hash(again) == hash(value) and repr(again) == repr(value)
    assert repr(a) == "Loc(path='x.sh', start=1, end=4)"
    assert [f.name for f in dataclasses.fields(Seg)] == ["text", "loc", "exact", "unknown", "env", "uncertain", "runs"]


def test_one_unquoted_piece_splits_as_the_long_way() -> None:
    """split_pieces' short cut for one unquoted expansion of one piece against its general loop (an
    empty unquoted piece first adds nothing and takes the long way): unknown pieces, texts with and
    without blanks, places as long as the text or not, exact or not, with runs, with a field break."""
    from trainlint.adapters.megatron.words import Piece

    rng = random.Random(36)
    segs = _continued_segs(36, 200)
    for _ in range(3000):
        text = "".join(rng.choice(["a", "8", "-", " ", "\t", "\n", "é"]) for _ in range(rng.randint(0, 6)))
        start = rng.randint(0, 5)
        loc = rng.choice([None, Loc("x.sh", start, start + len(text)), Loc("x.sh", start, start + len(text) + 2)])
        kind = rng.random()
        if kind < 0.15:
            seg = Seg("", loc, False, "$X (not set in the script)")
        elif kind < 0.3:
            seg = rng.choice(segs)
        else:
            seg = Seg(text, loc, rng.random() < 0.6)
        piece = Piece([seg], True, rng.random() < 0.3)
        site = Loc("x.sh", 0, 40)
        for uncertain in (False, True):
            assert split_pieces([piece], site, uncertain) == split_pieces([Piece([], True), piece], site, uncertain), seg
