"""The one diagnostic type every part of trainlint produces and every reporter consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from trainlint.core.numbers import shorten_numbers
from trainlint.core.positions import FILE_START, Span


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


@dataclass(frozen=True)
class Related:
    """Another place that contributed to a finding ("global batch set here")."""

    message: str
    span: Span
    path: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", shorten_numbers(self.message))


class Applicability(str, Enum):
    """How a fix may be applied, as ruff classifies fixes.

    ``safe``: cannot change what the job does (a key spelled as the target version defines it, a
    deprecated name with a one-to-one replacement); ``check --fix`` applies it. ``unsafe``: changes
    the run (layout, batch, precision); applied only with ``--unsafe-fixes``. ``display``: a hint
    for a person, never applied by a tool.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY = "display"


@dataclass(frozen=True)
class Edit:
    """Replace the text at ``span`` of ``path`` (None: the finding's file) with ``content``.

    A zero-width span inserts; an empty ``content`` deletes. Spans are the adapters' own
    (1-based, end exclusive, code points), so an edit is exact in the file's own format.
    """

    span: Span
    content: str
    path: str | None = None


@dataclass(frozen=True)
class Diagnostic:
    """One finding as reported: code, rule name, severity, message, where it is, related places and the fix."""

    code: str
    name: str
    severity: Severity
    message: str
    span: Span = FILE_START
    path: str | None = None
    fix: str | None = None
    """The fix hint a person reads (always present when ``edits`` is)."""
    related: tuple[Related, ...] = field(default_factory=tuple)
    applicability: Applicability | None = None
    """None when there is no fix; otherwise how ``edits`` may be applied."""
    edits: tuple[Edit, ...] = field(default_factory=tuple)
    """The fix as text edits, when it can be applied mechanically."""
    subject: str | None = None
    """The JSON pointer of the config key an input finding is about (``/bf16/enabled``), so that
    callers decide on data, never on the message text."""
    choices: tuple[str, ...] = ()
    """For a value outside the framework's choices: the choices, as the message spells them."""

    def __post_init__(self) -> None:
        # the one place words become a finding, whoever wrote them (a rule, an adapter, the
        # engine): a number of thousands of digits (a clamped config value, a product of such)
        # is named by its length, so no output format carries it (text, JSON, SARIF, LSP)
        object.__setattr__(self, "message", shorten_numbers(self.message))
        if self.fix:
            object.__setattr__(self, "fix", shorten_numbers(self.fix))

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def applies(self, unsafe: bool = False) -> bool:
        """Whether ``check --fix`` applies this finding's fix (``unsafe``: ``--fix --unsafe-fixes``):
        it has edits, and it is safe (or unsafe, when unsafe fixes are on). A hint without edits,
        or a display-only fix, is never applied, whatever its text says."""
        if not self.edits or self.applicability is None:
            return False
        return self.applicability is Applicability.SAFE or (unsafe and self.applicability is Applicability.UNSAFE)

    @property
    def fix_applicability(self) -> Applicability | None:
        """The applicability as a tool may rely on it: None without a fix; ``display`` for a fix
        without edits (a hint, whatever the rule classified it as: nothing can apply it)."""
        if self.applicability is None or self.edits:
            return self.applicability
        return Applicability.DISPLAY

    def sort_key(self) -> tuple:
        return (self.path or "", self.span, self.code, self.message)

    def to_dict(self) -> dict:
        data: dict[str, object] = {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
        }
        if self.fix:
            data["fix"] = self.fix
        if self.fix_applicability is not None:
            data["applicability"] = self.fix_applicability.value
        if self.related:
            data["related"] = [
                {"message": r.message, "path": r.path, "line": r.span.line, "column": r.span.column}
                for r in self.related
            ]
        return data


def code(text: object) -> str:
    """``text`` as a code span of a message (`` `name` ``), whatever characters it holds.

    Messages mark names and values with backticks, and the Markdown and SARIF faces render them as
    code spans. A key or value read from a file may itself hold backticks (``x` [a](http://...) ```):
    quoted with one backtick, it would close the span early and the rest would be read as Markdown.
    CommonMark ends a span only at a run of exactly as many backticks as opened it, so the fence is
    one longer than the longest run inside, with a space inside each end when the text begins or
    ends with a backtick (issue 29, O2)."""
    value = str(text)
    if "`" not in value:
        return f"`{value}`"
    fence = "`" * (_longest_backtick_run(value) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _longest_backtick_run(value: str) -> int:
    longest = run = 0
    for ch in value:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest
