"""The whole-layout search is memoised on exactly the fields it reads (trainlint.layout.reads).

An edit of a field the search does not read (``--train-iters``) answers from the memo, with the same
layout a fresh search finds; an edit of a field it reads (the micro batch) searches again; the
launch-time rules, which read any setting, are asked again on every memoised answer."""

from __future__ import annotations

import copy
from pathlib import Path

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_source
from trainlint.layout.reads import ReadLog, matches, paused, traced
from trainlint.project.session import SessionOptions, open_session
from trainlint.files.sources import SourceText

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPT = (EXAMPLES / "megatron_gpt_2.7b_network_bound.sh").read_text()  # TL301 with a whole-layout hint


def _spec_of(text: str):
    result = check_source(SourceText("run.sh", text), builtin_adapters())
    assert result.specs, result.diagnostics
    return result.specs[0]


def _advice(tmp_path):
    from trainlint.rules.estimation.fixes import LayoutAdvice

    session = open_session(SessionOptions(isolated=True), tmp_path)
    return LayoutAdvice(session.estimate, session.startup_rules, session.adapters)


def test_a_traced_copy_records_the_fields_read_and_not_its_copies():
    spec = _spec_of(SCRIPT)
    log = ReadLog()
    with log.recording():
        seen = traced(spec)
        seen.value("parallel.tensor")
        _ = seen.batch.micro_batch
        "train_iters" in seen.settings  # noqa: B015 - a read of one key
        copied = seen.copy()
        copy.copy(copied.model)
        copied.settings.copy()
        copied.value("model.hidden_size")  # a copy stays traced
        with paused():
            seen.value("model.num_layers")
    seen.value("model.ffn_hidden_size")  # outside the recording: not noted
    assert log.names == {"parallel.tensor", "batch.micro_batch", "settings:train_iters", "model.hidden_size"}
    key = log.key(spec)
    assert matches(key, _spec_of("# a comment moves every line\n" + SCRIPT))
    assert matches(key, _spec_of(SCRIPT.replace("--lr 1e-4", "--lr 2e-4")))  # a setting not read
    assert not matches(key, _spec_of(SCRIPT.replace("--train-iters 100000", "--train-iters 5")))  # one read
    assert not matches(key, _spec_of(SCRIPT.replace("--micro-batch-size 1", "--micro-batch-size 2")))


def test_a_whole_section_read_is_every_field_of_it():
    spec = _spec_of(SCRIPT)
    log = ReadLog()
    with log.recording():
        vars(traced(spec).run)
    assert log.names == {"run.*"}
    assert not matches(log.key(spec), _spec_of(SCRIPT.replace("--train-iters 100000", "--train-iters 5")))


def test_an_unread_field_hits_the_memo_and_a_read_one_does_not(tmp_path):
    assert "--train-iters 100000" in SCRIPT and "--micro-batch-size 1" in SCRIPT
    advice = _advice(tmp_path)
    first = advice(_spec_of(SCRIPT), 0.9)
    assert first is not None and advice.searches == 1
    read = {name for answer in advice.found for name, _ in answer.key}
    assert "batch.micro_batch" in read and not any("train_iters" in name for name in read)

    edited = _spec_of(SCRIPT.replace("--train-iters 100000", "--train-iters 120000"))
    again = advice(edited, 0.9)
    assert advice.searches == 1  # from the memo
    fresh = _advice(tmp_path)(edited, 0.9)
    assert (again.layout, again.changes, again.spelled) == (fresh.layout, fresh.changes, fresh.spelled)
    assert again.estimate.tokens_per_s == fresh.estimate.tokens_per_s
    assert again.spec.value("run.train_iters") == 120000  # the layout applied to the edited spec

    advice(_spec_of(SCRIPT.replace("--micro-batch-size 1", "--micro-batch-size 2")), 0.9)
    assert advice.searches == 2


def test_a_memoised_answer_asks_the_launch_rules_again(tmp_path, monkeypatch):
    """The TL1xx rules read any setting (the training length too): a memoised answer is given again only when
    the launch checks the search made answer as before on the edited spec."""
    from trainlint.rules.estimation.fixes import LayoutAdvice

    advice = _advice(tmp_path)
    assert advice(_spec_of(SCRIPT), 0.9) is not None
    monkeypatch.setattr(LayoutAdvice, "_refused", lambda self, spec, make, before: True)
    assert advice(_spec_of(SCRIPT.replace("--train-iters 100000", "--train-iters 5")), 0.9) is None
    assert advice.searches == 2


def _spec_at(path: str, text: str):
    result = check_source(SourceText(path, text), builtin_adapters())
    assert result.specs, result.diagnostics
    return result.specs[0]


def test_the_same_question_in_another_folder_answers_from_the_memo(tmp_path):
    """A folder is nothing the search reads: the same script in two folders is searched once, with the
    answer a fresh search gives. A file's name may be (a fix hint names the DeepSpeed JSON that writes
    the ZeRO stage): another name searches again."""
    advice = _advice(tmp_path)
    first = advice(_spec_at(str(tmp_path / "a" / "run.sh"), SCRIPT), 0.9)
    assert first is not None and advice.searches == 1
    other = _spec_at(str(tmp_path / "b" / "run.sh"), SCRIPT)
    again = advice(other, 0.9)
    assert advice.searches == 1
    fresh = _advice(tmp_path)(other, 0.9)
    assert (again.layout, again.changes, again.spelled) == (fresh.layout, fresh.changes, fresh.spelled)
    assert again.spec.path == other.path  # the layout applied to the asking spec
    advice(_spec_at(str(tmp_path / "a" / "other.sh"), SCRIPT), 0.9)
    assert advice.searches == 2


def test_the_key_holds_the_name_of_the_file_a_value_is_written_in():
    from dataclasses import replace

    spec = _spec_at("/x/run.sh", SCRIPT)
    log = ReadLog()
    with log.recording():
        traced(spec).value("batch.micro_batch")
    key = log.key(spec)
    moved = _spec_at("/y/run.sh", SCRIPT)
    assert matches(key, moved)
    value = moved.batch.micro_batch
    moved.batch.micro_batch = replace(value, provenance=replace(value.provenance, path="/y/ds_config.json"))
    assert not matches(key, moved)
