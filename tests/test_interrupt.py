"""A Ctrl-C whose ``KeyboardInterrupt`` Python drops (raised in a weakref callback, as CI saw in
the import system's module-lock callback during ``check -j 2``) still stops the command with 130
and prints nothing (trainlint.core.interrupt)."""

from __future__ import annotations

import gc
import signal
import sys
import weakref

import pytest

from trainlint.cli import main
from trainlint.core import interrupt
from trainlint.project import process_pool


class _Object:
    pass


def _drop_a_keyboard_interrupt() -> None:
    """What Python does with a Ctrl-C that lands in a weakref callback: "Exception ignored"."""
    target = _Object()

    def callback(_ref: object) -> None:
        raise KeyboardInterrupt

    ref = weakref.ref(target, callback)
    del target
    gc.collect()
    assert ref() is None


def test_a_dropped_ctrl_c_is_recorded_quietly(capfd):
    with interrupt.installed():
        assert not interrupt.received()
        _drop_a_keyboard_interrupt()  # no exception reaches here: Python ignored it
        assert interrupt.received()
        with pytest.raises(KeyboardInterrupt):
            interrupt.stop_if_received()
    assert capfd.readouterr().err == ""  # no "Exception ignored in ..."


def test_the_sigint_handler_records_and_raises():
    with interrupt.installed():
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        assert interrupt.received()


def test_handlers_are_given_back():
    hook = sys.unraisablehook
    with interrupt.installed():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        assert sys.unraisablehook is not hook
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert sys.unraisablehook is hook


def test_an_ignored_sigint_stays_ignored():
    # nohup, or a background job of a non-interactive shell: SIGINT is ignored and must stay so
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupt.installed():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)  # ignored: nothing raised, nothing recorded
            assert not interrupt.received()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_other_unraisable_exceptions_still_reach_the_previous_hook(monkeypatch):
    seen: list[type] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_type))
    target = _Object()
    ref = weakref.ref(target, lambda _ref: 1 / 0)
    with interrupt.installed():
        del target
        gc.collect()
    assert ref() is None
    assert seen == [ZeroDivisionError] and not interrupt.received()


def test_check_stops_with_130_when_the_ctrl_c_was_dropped(tmp_path, monkeypatch, capsys):
    for i in range(40):
        (tmp_path / f"ds_{i:02d}.json").write_text('{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 7}}\n')
    lean = process_pool.lean
    calls = []

    def lean_then_drop_a_ctrl_c(result):
        calls.append(result)
        if len(calls) == 1:
            _drop_a_keyboard_interrupt()
        return lean(result)

    monkeypatch.setattr(process_pool, "lean", lean_then_drop_a_ctrl_c)
    assert main(["check", "--isolated", "-j", "1", "--format", "json", str(tmp_path)]) == 130
    captured = capsys.readouterr()
    assert captured.err == ""
    # the check stopped at the next chunk, not at the end of the 40 files
    assert len(calls) <= process_pool.CHUNK
