"""Integers of any length in a config, read without crashing.

Python's ``int()`` refuses strings of more than 4,300 digits (``sys.get_int_max_str_digits``) and is
quadratic below that; ``json.load`` and PyYAML, and so DeepSpeed and GPT-NeoX, stop on such a
number. trainlint reads it as a value (so the file is still recognised and the rules say what is
wrong) but clamps its magnitude to 4,300 nines: far beyond any setting, still printable.
"""

from __future__ import annotations

import re
import sys
from _thread import allocate_lock  # threading.Lock itself; `import threading` costs ~1 ms of every start
from contextlib import contextmanager
from functools import cache
from typing import Iterator

PY_INT_DIGITS = 4300
HUGE = 10 ** PY_INT_DIGITS - 1
"""4,300 nines (computed, not parsed from text: ``int()`` of 4,300 digits is quadratic)."""
MESSAGE_DIGITS = 30
"""Numbers longer than this are named by their length in messages (:func:`shorten_numbers`)."""


@cache
def _int_literal() -> re.Pattern[str]:
    # compiled for the first token longer than 4,300 digits, not at every start
    return re.compile(r"\s*([+-]?)\d+(?:_\d+)*\s*")


def read_int(token: str, base: int = 10) -> int:
    """``int(token)`` for a decimal token of any length (longer ones clamp to ±HUGE).

    A long token never reaches ``int()``, so this stays linear even while :func:`long_numbers`
    has lifted Python's digit limit in another thread (the language server lints and hovers on
    two threads)."""
    if base == 10 and len(token) > PY_INT_DIGITS:
        literal = _int_literal().fullmatch(token)
        if literal is None:
            raise ValueError(f"invalid literal for int() with base 10: {short(token)!r}")
        if sum(ch.isdigit() for ch in token) > PY_INT_DIGITS:
            return -HUGE if literal.group(1) == "-" else HUGE
    return int(token, base)


def short(value: object, limit: int = 40) -> str:
    """A value for a message: a long number or string cut in the middle."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit // 2]}…{text[-8:]} ({len(text):,} characters)"


@cache
def _long_number() -> re.Pattern[str]:
    # A run of more digits than any setting has: a clamped 4,300-digit value, or a product of them
    # (compiled for the first message that long, not at every start).
    return re.compile(rf"\d{{{MESSAGE_DIGITS + 1},}}")


def shorten_numbers(text: str) -> str:
    """``text`` with every number of more than ``MESSAGE_DIGITS`` digits named by its length ("a
    4,301-digit number"): a rule message quotes config values, and one such value would otherwise be
    thousands of characters of a finding, a CI log line and a SARIF result."""
    if len(text) <= MESSAGE_DIGITS:
        return text
    return _long_number().sub(lambda m: f"a {len(m.group()):,}-digit number", text)


# ============================================================ formatting numbers of any size
#
# A clamped value has 4,300 digits: printable, but ``4 * value`` or ``micro * accumulation`` is
# not (Python refuses to turn an int of more than ``sys.get_int_max_str_digits()`` digits into
# text, so any f-string a rule or the hover builds from such a product raises ValueError). Rules
# and renderers compute with config values and format them freely; rather than guard every
# f-string, the phases that do so (running rules and the estimator, rendering a hover or an
# estimate) run inside :func:`long_numbers`, and every message is then shortened by
# :func:`shorten_numbers` where it becomes a Diagnostic (``Diagnostic.__post_init__``).
#
# The limit also bounds ``int(text)``, which is quadratic in the digits, and it is process-wide:
# while one thread is inside, another may be parsing (the language server lints and hovers on two
# threads), and a rule may read a file. So it is raised to LONG_TEXT_DIGITS, not removed: the
# product of eleven clamped values still prints, and an ``int(text)`` met meanwhile costs at most
# ~0.05 s. The readers never rely on the limit: :func:`read_int` clamps before ``int()``.

LONG_TEXT_DIGITS = 50_000

_lift_lock = allocate_lock()
_lift_depth = 0
_lift_saved = 0


@contextmanager
def long_numbers() -> Iterator[None]:
    """Let ints of up to LONG_TEXT_DIGITS digits be turned into text while inside (thread-safe:
    the limit is process-wide, so it is raised on the first entry and put back on the last exit)."""
    global _lift_depth, _lift_saved
    if not hasattr(sys, "set_int_max_str_digits"):  # a Python before the limit existed
        yield
        return
    with _lift_lock:
        if _lift_depth == 0:
            _lift_saved = sys.get_int_max_str_digits()
            if 0 < _lift_saved < LONG_TEXT_DIGITS:
                sys.set_int_max_str_digits(LONG_TEXT_DIGITS)
        _lift_depth += 1
    try:
        yield
    finally:
        with _lift_lock:
            _lift_depth -= 1
            if _lift_depth == 0 and sys.get_int_max_str_digits() != _lift_saved:
                sys.set_int_max_str_digits(_lift_saved)
