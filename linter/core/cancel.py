"""Cooperative cancellation of a lint (the language server's over-budget and superseded lints).

A thread cannot be stopped from outside, so a lint the server no longer wants (a newer change
arrived, it ran over its time budget, the server is shutting down) would keep the CPU busy to the
end. Instead, the lint runs inside :func:`scope` with a :class:`Token`, and the places where work
repeats call :func:`check`: each file checked, each rule and the estimate (engine), each value
of a JSON or YAML document, each shell evaluation step. Once the token is cancelled, the next
check raises :class:`Cancelled`, which unwinds the lint.

:class:`Cancelled` is a ``BaseException``: the handlers that turn a failing rule or adapter into a
TL998/TL999 catch ``Exception`` and must let it through. Outside a scope (the CLI) :func:`check`
does nothing.
"""

from __future__ import annotations

import time
from _thread import _local as thread_local  # threading.local itself; `import threading` costs ~1 ms of every start
from contextlib import contextmanager
from typing import Iterator

__all__ = ["Cancelled", "Token", "check", "current", "scope"]


class Cancelled(BaseException):
    """The lint was cancelled; ``str(exc)`` says why."""


class Token:
    """One lint's cancellation flag, set from another thread (the event loop)."""

    __slots__ = ("cancelled_at", "checks", "checks_at_cancel", "reason")

    def __init__(self) -> None:
        self.reason: str | None = None
        self.cancelled_at: float | None = None
        self.checks = 0
        """How many safe points the lint passed (a measure of the work done)."""
        self.checks_at_cancel: int | None = None

    def cancel(self, reason: str) -> None:
        if self.reason is None:
            self.cancelled_at = time.perf_counter()
            self.reason = reason
            # read after the flag is set: the lint's thread may pass one more safe point while
            # this runs, never more than one
            self.checks_at_cancel = self.checks

    @property
    def cancelled(self) -> bool:
        return self.reason is not None

    def check(self) -> None:
        self.checks += 1
        if self.reason is not None:
            raise Cancelled(self.reason)


_local = thread_local()


@contextmanager
def scope(token: Token) -> Iterator[Token]:
    """Run the body with ``token`` as this thread's lint token."""
    previous = getattr(_local, "token", None)
    _local.token = token
    try:
        yield token
    finally:
        _local.token = previous


def check() -> None:
    """A safe point: raise :class:`Cancelled` when this thread's lint was cancelled."""
    token = getattr(_local, "token", None)
    if token is not None:
        token.check()


def current() -> Token | None:
    """This thread's lint token (None outside a :func:`scope`): a loop of many safe points asks it
    once and calls its ``check`` (the rule engine: ~80 rules a run, none of them in a scope in the CLI)."""
    return getattr(_local, "token", None)
