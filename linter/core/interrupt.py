"""A Ctrl-C that Python would drop.

Python turns SIGINT into ``KeyboardInterrupt`` in whatever Python code runs next. When that code is
a weakref callback (the import system's module-lock callbacks run during every import), a
``__del__``, a garbage-collector callback or an at-fork handler, Python cannot propagate the
exception: it prints "Exception ignored in ..." and carries on, so a check the user stopped would
run to its end and exit 0 (seen in CI: ``_get_module_lock.<locals>.cb`` while ``check -j 2`` was
importing).

:func:`installed` records every SIGINT as it raises, and takes the "ignored" ``KeyboardInterrupt``
out of the unraisable hook (quietly: the user asked for the stop, not for a traceback). The run's
loops call :func:`stop_if_received` at their safe points (each chunk of files), and the CLI ends
with 130 when one was received, whether or not its exception reached it.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    import signal
else:  # the same functions without the enums `signal` builds at import (~1 ms of every start)
    import _signal as signal

__all__ = ["installed", "received", "stop_if_received"]

_received = False


def received() -> bool:
    """Whether a Ctrl-C reached this process since :func:`installed` began."""
    return _received


def stop_if_received() -> None:
    """A safe point: raise ``KeyboardInterrupt`` when a Ctrl-C was received and dropped."""
    if _received:
        raise KeyboardInterrupt


def _on_sigint(signum: int, frame: Any) -> None:
    global _received
    _received = True
    raise KeyboardInterrupt


@contextmanager
def installed() -> Iterator[None]:
    """Record Ctrl-C for the body. Only where Python's own handler is in place: a process started
    with SIGINT ignored (``nohup``, a background job of a script) keeps ignoring it, and outside
    the main thread no handler can be set. The handlers before it are back afterwards."""
    global _received
    _received = False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    try:
        previous_handler = signal.signal(signal.SIGINT, _on_sigint)
    except ValueError:  # not the main thread (an in-process caller's thread)
        yield
        return
    previous_hook = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        global _received
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _received = True
            return
        previous_hook(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGINT, previous_handler)
