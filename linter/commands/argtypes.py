"""Argument types that keep every number a command takes within what its arithmetic can carry:
an int with an upper bound (the lower bounds stay with each command, which words them), and the
range :func:`trainlint.commands.estimate.positive_count` allows."""

from __future__ import annotations

import argparse
from typing import Callable

COUNT_MIN = 1e-6
COUNT_MAX = 1e24
"""Counts and prices (tokens, parameters, days, budgets, tokens/s, $/GPU-hour): outside this range
products and quotients of them overflow or underflow a float (1e-300 days divides by zero)."""


def int_at_most(limit: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""), 10) if len(text) <= 40 else None
        except ValueError:
            value = None
        if value is None:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}")
        if value > limit:
            raise argparse.ArgumentTypeError(f"must be at most {limit:,}, got {value:,}")
        return value

    parse.__name__ = "int"  # argparse names the type in its messages
    return parse
