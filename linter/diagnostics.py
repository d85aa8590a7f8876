"""The one diagnostic type every part of trainlint produces and every reporter consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from trainlint.positions import FILE_START, Span


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


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    severity: Severity
    message: str
    span: Span = FILE_START
    path: str | None = None
    fix: str | None = None
    related: tuple[Related, ...] = field(default_factory=tuple)

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def sort_key(self) -> tuple:
        return (self.path or "", self.span, self.code, self.message)

    def to_dict(self) -> dict:
        data = {
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
        if self.related:
            data["related"] = [
                {"message": r.message, "path": r.path, "line": r.span.line, "column": r.span.column}
                for r in self.related
            ]
        return data
