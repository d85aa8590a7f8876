"""Colour for the text output, and when to use it.

Colour is for a person at a terminal: it is used when the stream is a TTY, or when asked for
(``--color always``, or ``FORCE_COLOR`` in the environment), and never when ``NO_COLOR`` is set
(https://no-color.org) unless ``--color always`` says so. Machine formats (json, sarif, github,
markdown) are never coloured.

Escape sequences are added around text that :func:`trainlint.core.escape.printable` has already
made safe: a config's own ``\\x1b`` is still shown as ``\\e``, and only trainlint's sequences reach
the terminal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, TextIO

from trainlint.core.diagnostics import Severity

COLOR_CHOICES = ("auto", "always", "never")

_RESET = "\x1b[0m"
_SEVERITY_SGR = {Severity.ERROR: "1;31", Severity.WARNING: "1;33", Severity.INFO: "1;36"}
_BOLD = "1"
_DIM = "2"


def use_color(choice: str, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour ``stream``: ``--color always`` / ``never`` decide; ``auto`` (the default)
    colours a TTY, or any stream with ``FORCE_COLOR`` set (not empty, not ``0``), and never with
    ``NO_COLOR`` set (not empty)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # a closed or unusual stream is no terminal
        return False


@dataclass(frozen=True)
class Style:
    """How to mark pieces of a line; with ``color`` False every method returns its text unchanged."""

    color: bool = False

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}{_RESET}" if self.color and text else text

    def severity(self, severity: Severity) -> str:
        """The severity word: error red, warning yellow, info cyan."""
        return self._sgr(_SEVERITY_SGR[severity], severity.value)

    def path(self, text: str) -> str:
        return self._sgr(_BOLD, text)

    def code(self, text: str) -> str:
        return self._sgr(_BOLD, text)

    def dim(self, text: str) -> str:
        """Secondary text: the ``fix:`` hint's label, the separators of a location."""
        return self._sgr(_DIM, text)


PLAIN = Style(False)
