"""Integers of any length in a config, read without crashing.

Python's ``int()`` refuses strings of more than 4,300 digits (``sys.get_int_max_str_digits``) and is
quadratic below that; ``json.load`` and PyYAML, and so DeepSpeed and GPT-NeoX, stop on such a
number. trainlint reads it as a value (so the file is still recognised and the rules say what is
wrong) but clamps its magnitude to 4,300 nines: far beyond any setting, still printable.
"""

from __future__ import annotations

import re

PY_INT_DIGITS = 4300
HUGE = int("9" * PY_INT_DIGITS)
MESSAGE_DIGITS = 30
"""Numbers longer than this are named by their length in messages (:func:`shorten_numbers`)."""


def read_int(token: str, base: int = 10) -> int:
    """``int(token)`` for a decimal token of any length (longer ones clamp to ±HUGE)."""
    digits = token.lstrip("+-").replace("_", "")
    if base == 10 and len(digits) > PY_INT_DIGITS and digits.isdigit():
        return -HUGE if token.lstrip().startswith("-") else HUGE
    return int(token, base)


def short(value: object, limit: int = 40) -> str:
    """A value for a message: a long number or string cut in the middle."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit // 2]}…{text[-8:]} ({len(text):,} characters)"


# A run of more digits than any setting has: a clamped 4,300-digit value, or a product of them.
_LONG_NUMBER = re.compile(rf"\d{{{MESSAGE_DIGITS + 1},}}")


def shorten_numbers(text: str) -> str:
    """``text`` with every number of more than ``MESSAGE_DIGITS`` digits named by its length ("a
    4,301-digit number"): a rule message quotes config values, and one such value would otherwise be
    thousands of characters of a finding, a CI log line and a SARIF result."""
    if len(text) <= MESSAGE_DIGITS:
        return text
    return _LONG_NUMBER.sub(lambda m: f"a {len(m.group()):,}-digit number", text)
