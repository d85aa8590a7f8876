"""Inline suppression comments in YAML and shell configs.

    lr: 6e-4  # trainlint: disable=TL009          this line
    # trainlint: disable-next-line=TL201,TL301    the next line
    # trainlint: disable=TL004                    from here on (own line) ...
    # trainlint: enable=TL004                     ... until here
    # trainlint: disable-file                     the whole file (optionally =CODES)

Codes may be codes, prefixes or rule names; no codes means every code. JSON has no comments:
use ``per-file-ignores`` there. TL998 and TL999 are never suppressed. Only a real comment counts
(:mod:`trainlint.files.comments`): a directive inside a here-document, a YAML block scalar or a quoted
string is data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from trainlint.project.selection import UNSUPPRESSIBLE, _specificity



@cache
def _directive() -> re.Pattern[str]:
    # compiled for the first file that has a directive, not at every start (~0.2 ms)
    return re.compile(
        r"#\s*trainlint:\s*(?P<kind>disable-next-line|disable-line|disable-file|disable|enable)"
        r"(?:\s*=\s*(?P<codes>[A-Za-z0-9_,\s-]+?))?\s*$"
    )


ALL_CODES = "*"
"""The selector of a directive that names no code (it suppresses every code)."""


@dataclass(frozen=True)
class Directive:
    """One disabling comment: where it is written and what it names ([] = every code)."""

    line: int
    column: int
    end_column: int
    kind: str
    codes: tuple[str, ...]

    @property
    def selectors(self) -> tuple[str, ...]:
        return self.codes or (ALL_CODES,)


@dataclass
class Suppressions:
    """The disabling comments of one file: for the whole file, per line, and per range."""

    file_codes: list[str] | None = None
    """Codes disabled for the whole file; [] means all codes."""
    lines: dict[int, list[str]] = field(default_factory=dict)
    """Line -> codes disabled on it ([] = all)."""
    ranges: list[tuple[int, int, list[str]]] = field(default_factory=list)
    directives: list[Directive] = field(default_factory=list)
    """Every disabling comment (not ``enable``), for the unused-suppression report."""
    _scopes: list[tuple[int, int, Directive]] = field(default_factory=list)
    """(first line, last line, directive): where each directive applies."""

    def suppressed(self, code: str, name: str, line: int) -> bool:
        if code in UNSUPPRESSIBLE:
            return False

        def hit(codes: list[str]) -> bool:
            return not codes or any(_specificity(c, code, name) > 0 for c in codes)

        if self.file_codes is not None and hit(self.file_codes):
            return True
        if line in self.lines and hit(self.lines[line]):
            return True
        return any(start <= line <= end and hit(codes) for start, end, codes in self.ranges)

    def suppressing(self, code: str, name: str, line: int) -> list[tuple[int, str]]:
        """(directive line, selector) of every directive that suppresses this finding; [] when
        none does. A directive is used when any finding names it here."""
        if code in UNSUPPRESSIBLE:
            return []
        out = []
        for first, last, directive in self._scopes:
            if first <= line <= last:
                for selector in directive.selectors:
                    if selector == ALL_CODES or _specificity(selector, code, name) > 0:
                        out.append((directive.line, selector))
        return out


def _codes(raw: str | None) -> list[str]:
    return [c.strip() for c in (raw or "").split(",") if c.strip()]


def parse_suppressions(text: str, path: str | None = None) -> Suppressions:
    """Find directives in ``#`` comments. Cheap when the file has none. With ``path``, only a ``#``
    that the file's syntax makes a comment counts (:mod:`trainlint.files.comments`): a directive inside
    a here-document, a YAML block scalar or a quoted string is data and suppresses nothing."""
    result = Suppressions()
    if "trainlint:" not in text:
        return result
    is_comment = None
    if path is not None:
        from trainlint.files.comments import comment_test

        is_comment = comment_test(path, text)
    open_ranges: dict[str, tuple[int, Directive]] = {}
    lines = text.split("\n")
    directive_pattern = _directive()
    for number, line in enumerate(lines, start=1):
        hash_at = line.find("#")
        if hash_at < 0 or "trainlint:" not in line:
            continue
        match = directive_pattern.search(line, hash_at)
        if not match or (is_comment is not None and not is_comment(number, match.start())):
            continue
        kind, codes = match.group("kind"), _codes(match.group("codes"))
        own_line = not line[:match.start()].strip()
        directive = Directive(number, match.start() + 1, len(line.rstrip()) + 1, kind, tuple(codes))
        if kind != "enable":
            result.directives.append(directive)
        if kind == "disable-file":
            result.file_codes = (result.file_codes or []) + codes if codes else []
            result._scopes.append((1, len(lines), directive))
        elif kind == "disable-next-line":
            result.lines.setdefault(number + 1, []).extend(codes)
            if not codes:
                result.lines[number + 1] = []
            result._scopes.append((number + 1, number + 1, directive))
        elif kind == "disable-line" or (kind == "disable" and not own_line):
            result.lines.setdefault(number, []).extend(codes)
            if not codes:
                result.lines[number] = []
            result._scopes.append((number, number, directive))
        elif kind == "disable":
            for code in codes or ["*"]:
                open_ranges.setdefault(code, (number, directive))
        elif kind == "enable":
            for code in codes or list(open_ranges):
                opened = open_ranges.pop(code, None)
                if opened is not None:
                    result.ranges.append((opened[0], number, [] if code == "*" else [code]))
                    result._scopes.append((opened[0], number, _narrowed(opened[1], code)))
    for code, (start, directive) in open_ranges.items():
        result.ranges.append((start, len(lines), [] if code == "*" else [code]))
        result._scopes.append((start, len(lines), _narrowed(directive, code)))
    return result


def _narrowed(directive: Directive, code: str) -> Directive:
    """A range opened by ``disable=A,B`` and closed per code: the scope of one of its codes
    (the same directive line, so its use is counted against the comment that opened it)."""
    return directive if code == "*" else Directive(directive.line, directive.column, directive.end_column,
                                                   directive.kind, (code,))
