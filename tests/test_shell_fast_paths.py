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
from trainlint.adapters.megatron.shell import ShellEvaluator
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
