"""How much text the static shell evaluator may build, and how much pattern matching it may do.

A 200-byte script that doubles a variable (``X=$X$X``) 28 times asks for a 256 MB value, and
``${X##*a*b}`` on a 300 KB value costs minutes of backtracking. A launch script's values are a few
KB (the corpus's largest script is 10 KB), so the evaluator carries one :class:`ShellBudget` and
asks it

* before a variable's value is copied into a word (``$X``, ``${A[@]}``, the result of
  ``${X//a/bb}``): the only way a value grows past the script's own text is by repeating one, and
  every repetition passes here. A value over :data:`MAX_VALUE_CHARS` / :data:`MAX_VALUE_PIECES`, or
  one that would take the whole evaluation past :data:`MAX_TOTAL_CHARS` / :data:`MAX_TOTAL_PIECES`,
  is not copied: the word gets an unknown piece saying why, as for ``$(cmd)``;
* before a pattern is matched (``${X#pat}``, ``[[ $X == pat ]]``, ``case``): :mod:`.shell_pattern`
  matches in one pass over the value (characters x pattern words), and the budget refuses a match
  past :data:`MAX_MATCH_WORK` in all; the result is then unknown.

Nothing here knows the syntax tree; the evaluator says where the first refusal happened (TL012).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

MAX_VALUE_CHARS = 256 * 1024
"""One expansion: a value larger than this is unknown (a launch script's largest is a few KB)."""
MAX_VALUE_PIECES = 8192
"""One expansion: pieces (each remembers where it was written) and array elements."""
MAX_TOTAL_CHARS = 16 * 1024 * 1024
"""All expansions of one script and what it sources: bounds time and memory whatever the script does
(at most :data:`~.shell.MAX_STEPS` words, each at most MAX_VALUE_CHARS, would be 5 GB)."""
MAX_TOTAL_PIECES = 1_000_000
MAX_MATCH_WORK = 40_000_000
"""Characters matched times the pattern's length in machine words, over the whole evaluation:
~2 s of matching at most."""


@dataclass
class ShellBudget:
    """What the evaluation has built and matched so far, against the limits above."""

    chars: int = 0
    pieces: int = 0
    match_work: int = 0
    refused: str | None = None
    """Why the first refusal happened (None: nothing refused yet)."""

    def charge(self, chars: int, pieces: int) -> str | None:
        """Account for copying a value of ``chars`` characters in ``pieces`` pieces: None when it
        fits (and is counted), else the reason it does not (and nothing is counted)."""
        if chars > MAX_VALUE_CHARS:
            return self._refuse(f"a value larger than {MAX_VALUE_CHARS // 1024} KB")
        if pieces > MAX_VALUE_PIECES:
            return self._refuse(f"a value built from more than {MAX_VALUE_PIECES:,} pieces")
        if self.chars + chars > MAX_TOTAL_CHARS or self.pieces + pieces > MAX_TOTAL_PIECES:
            return self._refuse(f"the script's values add up to more than {MAX_TOTAL_CHARS // 1024 // 1024} MB")
        self.chars += chars
        self.pieces += pieces
        return None

    def charge_match(self, length: int, pattern_words: int, distinct: int = 0) -> bool:
        """Account for matching a value of ``length`` characters against a pattern that takes
        ``pattern_words`` machine words per character (and ``distinct`` new characters to
        classify): False when the work would pass :data:`MAX_MATCH_WORK`."""
        work = (length + 1) * pattern_words + distinct
        if self.match_work + work > MAX_MATCH_WORK:
            self._refuse("pattern matching that would take too long")
            return False
        self.match_work += work
        return True

    def _refuse(self, reason: str) -> str:
        if self.refused is None:
            self.refused = reason
        return reason


def size_of(texts: Iterable[str], split: bool) -> tuple[int, int]:
    """(characters, pieces) of a value's known texts; an unquoted value is split at blanks, each
    field a piece of its own, so its blanks count as pieces too."""
    chars = pieces = 0
    for text in texts:
        chars += len(text)
        pieces += 1
        if split and text:
            pieces += text.count(" ") + text.count("\t") + text.count("\n")
    return chars, pieces
