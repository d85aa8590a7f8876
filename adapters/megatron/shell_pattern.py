"""Shell patterns (``*``, ``?``, ``[...]``) matched in one pass over the text.

``${X##*a*b}`` asks for the longest prefix of X that the pattern matches. Trying every prefix
with :func:`fnmatch.fnmatchcase` is quadratic (and its regular expression backtracks): minutes on a
300 KB value. Here the pattern is a small automaton run over the text once (shift-and: the set of
pattern positions reached is one integer, a bit per position), giving at every character whether
the text so far is matched: every prefix at once, and every suffix by running the reversed pattern
over the reversed text. The cost is the text's length times the pattern's length in machine words,
which the caller charges to the evaluator's :class:`~.shell_budget.ShellBudget` first.

The pattern language is :func:`fnmatch.fnmatchcase`'s, as the evaluator used before (a bracket
expression is handed to :func:`fnmatch.translate` itself), so results are the same.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import lru_cache

_STAR = "*"


def _tokens(pattern: str) -> list[str | re.Pattern[str]]:
    """The pattern as tokens: "*", a literal character (a one-character str), or a compiled
    bracket expression / "?" (a pattern matched against one character). Adjacent stars are one."""
    out: list[str | re.Pattern[str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not out or out[-1] != _STAR:
                out.append(_STAR)
        elif c == "?":
            out.append(_any_character())
        elif c == "[":
            j = i  # where fnmatch.translate looks for the closing bracket
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append("[")  # no closing bracket: a literal "[", as in fnmatch
            else:
                out.append(_bracket(pattern[i - 1:j + 1]))
                i = j + 1
        else:
            out.append(c)
    return out


@lru_cache(maxsize=1)
def _any_character() -> re.Pattern[str]:
    return re.compile(r"(?s:.)\Z")


@lru_cache(maxsize=256)
def _bracket(expression: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(expression))


@dataclass
class Glob:
    """A compiled pattern: the tokens and the bit masks of the automaton."""

    tokens: list[str | re.Pattern[str]]
    loops: int = 0
    """Bit k set: token k (1-based) is a star, so state k stays on any character."""
    before_star: int = 0
    """Bit k-1 set: token k is a star, so state k-1 also is state k (a star matches nothing too)."""
    accept: int = 0
    _advance: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, pattern: str) -> Glob:
        glob = cls(_tokens(pattern))
        for k, token in enumerate(glob.tokens, start=1):
            if token == _STAR:
                glob.loops |= 1 << k
                glob.before_star |= 1 << (k - 1)
        glob.accept = 1 << len(glob.tokens)
        return glob

    @property
    def words(self) -> int:
        """Machine words per state set: the cost of one step."""
        return len(self.tokens) // 60 + 1

    def reversed(self) -> Glob:
        """The pattern read backwards (a star, a character and a bracket are each one token)."""
        glob = Glob.of("")
        glob.tokens = list(reversed(self.tokens))
        glob.loops = glob.before_star = 0
        for k, token in enumerate(glob.tokens, start=1):
            if token == _STAR:
                glob.loops |= 1 << k
                glob.before_star |= 1 << (k - 1)
        glob.accept = 1 << len(glob.tokens)
        return glob

    def advance(self, c: str) -> int:
        """Bit k-1 set: token k is a character or bracket that ``c`` matches."""
        mask = self._advance.get(c)
        if mask is None:
            mask = 0
            for k, token in enumerate(self.tokens, start=1):
                if token == _STAR:
                    continue
                if token == c if isinstance(token, str) else token.match(c) is not None:
                    mask |= 1 << (k - 1)
            self._advance[c] = mask
        return mask

    def matches(self, text: str) -> list[int]:
        """Every length L (ascending) such that ``text[:L]`` matches the whole pattern."""
        loops, before_star, accept = self.loops, self.before_star, self.accept
        state = 1 | ((1 & before_star) << 1)
        found = [0] if state & accept else []
        advance = self._advance
        for i, c in enumerate(text, start=1):
            mask = advance.get(c)
            if mask is None:
                mask = self.advance(c)
            state = ((state & mask) << 1) | (state & loops)
            state |= (state & before_star) << 1
            if not state:
                break
            if state & accept:
                found.append(i)
        return found


def fullmatch(glob: Glob, text: str) -> bool:
    found = glob.matches(text)
    return bool(found) and found[-1] == len(text)


def remove_prefix(glob: Glob, text: str, longest: bool) -> str:
    """``${X#pattern}`` (shortest) and ``${X##pattern}`` (longest)."""
    found = glob.matches(text)
    if not found:
        return text
    return text[found[-1] if longest else found[0]:]


def remove_suffix(glob: Glob, text: str, longest: bool) -> str:
    """``${X%pattern}`` (shortest) and ``${X%%pattern}`` (longest): the reversed pattern over the
    reversed text."""
    found = glob.reversed().matches(text[::-1])
    if not found:
        return text
    cut = found[-1] if longest else found[0]
    return text[:len(text) - cut]


def distinct_characters(text: str, limit: int = 4096) -> int:
    """How many different characters ``text`` has (at most ``limit``): each costs one pass over the
    pattern to classify."""
    return min(len(set(text)), limit)
