"""The language server's statement memo (adapters/megatron/shell_memo.py) gives exactly what a full
read of the script gives: every corpus script, read once, then edited at random (values, names,
lines added, removed, swapped, syntax broken) and read again after each edit through the memo and
from scratch; the two results (commands, assignments, variables, diagnostics, here-documents) must
be equal."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from trainlint.adapters.megatron import shell_memo
from trainlint.adapters.megatron.shell import ShellEvaluator, ShellResult, evaluate
from trainlint.files.sources import SourceText, read_source
from trainlint.lsp.workspace import Linter

from conftest import CORPUS, SHARED_ABSENT

SCRIPT_SUFFIXES = (".sh", ".slurm", ".sbatch")


def _scripts() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in SCRIPT_SUFFIXES and p.is_file())


def _snapshot(result: ShellResult) -> tuple:
    return (result.commands, result.assignments, result.env.values, result.diagnostics, result.virtual_files,
            {path: ft.text for path, ft in result.files.items()})


_NUMBER = re.compile(r"\b\d+\b")
_NAME = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")


def _edit(text: str, rng: random.Random) -> str:
    """One random edit an editor could make (some of them leave invalid bash)."""
    lines = text.split("\n")
    kind = rng.randrange(12)
    if kind >= 9:  # the file's length changed: a digit typed into or deleted from a number, a line added
        numbers = list(_NUMBER.finditer(text))
        if numbers and kind == 9:
            m = rng.choice(numbers)
            at = rng.randrange(m.start(), m.end() + 1)
            return text[:at] + str(rng.randrange(10)) + text[at:]
        if numbers and kind == 10 and any(len(m.group()) > 1 for m in numbers):
            m = rng.choice([m for m in numbers if len(m.group()) > 1])
            at = rng.randrange(m.start(), m.end())
            return text[:at] + text[at + 1:]
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["X=1", "export Y=$X", "# a comment", "echo $X"]))
        return "\n".join(lines)
    if kind <= 1:  # a number changed: the same length or not
        numbers = list(_NUMBER.finditer(text))
        if numbers:
            m = rng.choice(numbers)
            new = str(int(m.group()) + 1) if kind == 0 else str(rng.choice([0, 7, 10**rng.randrange(1, 6)]))
            return text[:m.start()] + new + text[m.end():]
    if kind == 2:  # a variable renamed where it is used or set
        names = list(_NAME.finditer(text))
        if names:
            m = rng.choice(names)
            return text[:m.start()] + m.group() + "X" + text[m.end():]
    if kind == 3:  # a line removed
        del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if kind == 4:  # a line repeated
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "\n".join(lines)
    if kind == 5:  # two lines swapped
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    if kind == 6:  # a character typed somewhere (a quote or a bracket breaks the syntax after it)
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(["\"", "'", "$", "{", "(", " ", "\n", "x", "é", "\\"]) + text[at:]
    if kind == 7 and text:  # a character deleted
        at = rng.randrange(len(text))
        return text[:at] + text[at + 1:]
    # a blank line, or a newline moved (the same length: every offset stays, the lines do not)
    if "\n" in text and rng.random() < 0.5:
        at = text.index("\n", rng.randrange(len(text) - text[::-1].index("\n")))
        at2 = rng.randrange(len(text))
        if text[at2] not in "\n":
            chars = list(text)
            chars[at], chars[at2] = chars[at2], chars[at]
            return "".join(chars)
    at = rng.randrange(len(lines) + 1)
    lines.insert(at, "")
    return "\n".join(lines)


def _read(path: str) -> SourceText:
    return read_source(path)


def _compare_edits(path: Path, edits: int, seed: int) -> None:
    rng = random.Random(f"{seed}:{path.name}")
    text = read_source(path).text
    memo = shell_memo.StatementMemo()
    name = str(path)
    for step in range(edits + 1):
        with shell_memo.remembering(memo):
            remembered = evaluate(SourceText(name, text), _read, {})
        full = evaluate(SourceText(name, text), _read, {})
        assert _snapshot(remembered) == _snapshot(full), f"{path} after {step} random edits (seed {seed})"
        text = _edit(text, rng)


@pytest.mark.skipif(not _scripts(), reason=f"corpus not found at {CORPUS} ({SHARED_ABSENT})")
@pytest.mark.parametrize("seed", [1, 2])
def test_remembered_reads_equal_full_reads_over_the_corpus(seed: int):
    scripts = _scripts()
    chosen = random.Random(seed).sample(scripts, min(40, len(scripts)))
    for path in chosen:
        _compare_edits(path, 6, seed)


@pytest.mark.slow
@pytest.mark.skipif(not _scripts(), reason=f"corpus not found at {CORPUS} ({SHARED_ABSENT})")
def test_remembered_reads_equal_full_reads_on_every_corpus_script():
    for path in _scripts():
        _compare_edits(path, 25, 3)


def test_a_statement_is_replayed_only_while_what_it_read_is_the_same():
    text = "A=1\nB=2\nC=$A\nD=$B\npython pretrain_gpt.py --x $C --y $D\n"
    memo = shell_memo.StatementMemo()

    def read(t: str) -> ShellResult:
        with shell_memo.remembering(memo):
            return evaluate(SourceText("/x/run.sh", t), _read, {})

    read(text)
    recorded = dict(next(iter(memo._files.values())).entries)
    assert len(recorded) == 5  # every statement recorded
    edited = text.replace("A=1", "A=3")
    result = read(edited)
    assert [f.text for f in result.commands[0].fields][-3:] == ["3", "--y", "2"]
    kept = next(iter(memo._files.values())).entries
    # B=2 and D=$B replayed (the same entries); A=3 is new text, C=$A read a new A, the command a new C
    assert sum(1 for k, e in kept.items() if recorded.get(k) is e) == 2
    assert _snapshot(result) == _snapshot(evaluate(SourceText("/x/run.sh", edited), _read, {}))


def test_a_statement_that_only_moved_is_replayed_at_its_new_place(monkeypatch: pytest.MonkeyPatch):
    replays: list[shell_memo.Entry] = []
    replay = ShellEvaluator._replay

    def counted(self: ShellEvaluator, entry: shell_memo.Entry) -> None:
        replays.append(entry)
        replay(self, entry)

    monkeypatch.setattr(ShellEvaluator, "_replay", counted)
    text = "A=1\nB=2 # é\nC=$A\nD=\"$B x\"\npython pretrain_gpt.py --x $C --y $D --z \"$UNSET\"\n"
    memo = shell_memo.StatementMemo()
    replayed: list[int] = []

    def read(t: str) -> ShellResult:
        replays.clear()
        with shell_memo.remembering(memo):
            result = evaluate(SourceText("/x/run.sh", t), _read, {})
        replayed.append(len(replays))
        full = evaluate(SourceText("/x/run.sh", t), _read, {})
        assert _snapshot(result) == _snapshot(full)
        return result

    read(text)
    for edited in (text.replace("A=1", "A=10"), "# a new line\n\n" + text, text.replace("B=2", "B=20"),
                   text.replace("A=1\n", "A=1; E=2\n")):
        read(text)  # back to the original, then the edit: each step moves what follows it
        result = read(edited)
        assert result.commands[0].loc.start == edited.index("python")
    # A=10 moves B, C is new (A's value changed), D=$B reads the moved B, the command a new C:
    # B, D and nothing else replayed; two lines above: everything moves, all five replayed;
    # B=20 changes B, D and the command (A and C replayed); a statement added after A on its line: the
    # lines after it keep their columns, all but the new E=2 replayed
    assert replayed[2::2] == [2, 5, 2, 5]


@pytest.mark.skipif(not _scripts(), reason=f"corpus not found at {CORPUS} ({SHARED_ABSENT})")
def test_the_language_server_publishes_what_a_fresh_server_does(tmp_path: Path):
    forks = [p for p in _scripts() if "swiss-ai" in str(p)][:4] or _scripts()[:4]
    rng = random.Random(5)
    linter = Linter()
    for path in forks:
        name = str(tmp_path / path.name)
        text = path.read_text(encoding="utf-8")
        linter.lint(name, text, 0)
        for version in range(1, 6):
            text = _edit(text, rng)
            assert linter.lint(name, text, version).by_path == Linter().lint(name, text, 0).by_path, path


def test_an_edit_moves_what_follows_it_and_nothing_it_touched():
    from trainlint.adapters.megatron.words import Loc

    old, new = "A=1\nB=2\n", "A=10\nB=2\n"  # a digit typed after A=1's 1: the common prefix is "A=1"
    shift = shell_memo.Shift.between("/x/run.sh", old, new, 1)
    assert (shift.start, shift.old_end, shift.chars, shift.bytes, shift.lines, shift.last_line) == (3, 3, 1, 1, 0, 1)
    assert shift.loc(Loc("/x/run.sh", 0, 3)) == Loc("/x/run.sh", 0, 3)  # A=1: before the edit
    assert shift.loc(Loc("/x/run.sh", 4, 7)) == Loc("/x/run.sh", 5, 8)  # B=2: after it
    assert shift.loc(Loc("/y/env", 4, 7)) == Loc("/y/env", 4, 7)  # another file's
    for touched in (Loc("/x/run.sh", 3, 3), Loc("/x/run.sh", 2, 4)):  # at the insertion, or across it
        with pytest.raises(shell_memo.Unmappable):
            shift.loc(touched)
    # B=2's key: the line after the edit's; a statement on the edited line keeps no entry
    assert shift.old_key(("variable_assignment", 5, 5, 2, 1, "B=2", (), ())) == (
        "variable_assignment", 4, 4, 2, 1, "B=2", (), ())
    assert shift.old_key(("variable_assignment", 0, 0, 1, 1, "A=10", (), ())) is None
    # a whole line inserted: the line after it starts where the unchanged text starts, columns kept
    lines = shell_memo.Shift.between("/x/run.sh", old, "A=1\nX=é\nB=2\n", 5)
    assert (lines.chars, lines.bytes, lines.lines, lines.last_line) == (4, 5, 1, 1)
