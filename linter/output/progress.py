"""How far a long ``check`` is: ``checked 120/336 files, 2.4 s`` on stderr.

Only for a person watching: the line is written when stderr is a terminal, only once the run has
taken ``DELAY`` seconds (a short run prints nothing), at most ``INTERVAL`` apart, on one line
rewritten in place (``\\r``) and erased at the end, so the report that follows on stdout starts on
a clean line. The caller leaves it out for machine formats and ``--quiet``. A worker process
(forked with a copy of this object) never writes: only the process that made it does.
"""

from __future__ import annotations

import os
import time
from typing import Callable, TextIO

DELAY = 1.0
"""Seconds before the first progress line: a run that ends sooner says nothing."""

INTERVAL = 0.1
"""Seconds between two redraws."""

_ERASE = "\r\x1b[K"


class Progress:
    def __init__(self, total: int, stream: TextIO, *, clock: Callable[[], float] = time.monotonic,
                 delay: float = DELAY, interval: float = INTERVAL) -> None:
        self.total = total
        self.done = 0
        self.stream = stream
        self.clock = clock
        self.delay = delay
        self.interval = interval
        self.start = clock()
        self._last = float("-inf")
        self._shown = False
        self._pid = os.getpid()

    def advance(self, count: int = 1) -> None:
        """``count`` more files are done; redraw when due."""
        self.done = min(self.total, self.done + count)
        if os.getpid() != self._pid:
            return  # a forked worker: its parent counts its chunk when it comes back
        now = self.clock()
        elapsed = now - self.start
        if elapsed < self.delay or now - self._last < self.interval:
            return
        self._last = now
        self._write(f"{_ERASE}checked {self.done}/{self.total} files, {elapsed:.1f} s")
        self._shown = True

    def finish(self) -> None:
        """Erase the progress line (when one was drawn)."""
        if self._shown and os.getpid() == self._pid:
            self._write(_ERASE)
            self._shown = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal: progress is not worth failing the run for
            pass


def wanted(stream: TextIO, fmt: str, quiet: bool) -> bool:
    """Progress is shown for the text formats, without --quiet, when ``stream`` is a terminal."""
    if quiet or fmt not in ("full", "concise", "grouped", "text"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False
