"""Reading spec values safely: a value as an int, a bool, a string or a number, or None when it is
unknown, of another type, or taken from one branch of a shell condition trainlint could not decide
(``Provenance.uncertain``). The rules, the frameworks and the estimator read values through these,
so none of them guesses. Part of the core model layer."""

from __future__ import annotations

import math

from trainlint.core.provenance import Value


def uncertain(value: Value | None) -> bool:
    """A value the adapter took from one branch of a shell ``if``/``case`` it could not decide:
    the rules treat it as unknown rather than act on a guess."""
    return value is not None and value.provenance.uncertain


def integral(raw: object) -> int | None:
    """A raw number as an int (an integral float counts), None for bool, strings and the rest."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        return int(raw)
    return None


def as_int(value: Value | None) -> int | None:
    """The value as an int (an integral float counts), None for bool, strings, unknowns."""
    if value is None or uncertain(value):
        return None
    return integral(value.value)


def as_bool(value: Value | None) -> bool | None:
    if value is None or uncertain(value):
        return None
    return value.value if isinstance(value.value, bool) else None


def as_str(value: Value | None) -> str | None:
    if value is None or uncertain(value) or not isinstance(value.value, str):
        return None
    return value.value


def as_number(value: Value | None) -> float | None:
    if value is None or uncertain(value) or isinstance(value.value, bool) or not isinstance(value.value, (int, float)):
        return None
    return float(value.value)
