"""The plugin API: what a trainlint plugin imports, under one path that does not move (docs/plugins.md).

A plugin adds rules, config formats, frameworks, GPUs or model presets through the hooks of
:mod:`trainlint.core.hookspecs`; the names it needs for that are here. The modules behind them live
in the layer packages (``trainlint.core``, ``trainlint.files``, ``trainlint.rules``,
``trainlint.adapters.base``) and may be reorganised again; these names stay. Nothing inside trainlint
imports this module: it is the top layer of the import-linter contract (pyproject.toml).

    from trainlint.plugin import Finding, Rule, Severity, hookimpl
"""

from __future__ import annotations

from trainlint import hookimpl
from trainlint.adapters.base import BY_CONTENT, BY_NAME, CERTAIN, NOT_MINE, Adapter, LoadContext, LoadResult
from trainlint.core.diagnostics import Applicability, Diagnostic, Edit, Severity
from trainlint.core.framework import NEUTRAL, Framework, framework_of
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.positions import Span
from trainlint.core.provenance import Origin, Provenance, Value, from_file
from trainlint.core.results import FileResult
from trainlint.core.spec import TrainingSpec
from trainlint.files.sources import SourceText
from trainlint.files.writing import Texts, WritebackError, Writer
from trainlint.rules import Finding, Option, Rule, RuleContext

__all__ = [
    "BY_CONTENT",
    "BY_NAME",
    "CERTAIN",
    "NEUTRAL",
    "NOT_MINE",
    "Adapter",
    "Applicability",
    "Diagnostic",
    "Edit",
    "FileResult",
    "Finding",
    "Framework",
    "LoadContext",
    "LoadResult",
    "Option",
    "Origin",
    "Provenance",
    "Rule",
    "RuleContext",
    "Severity",
    "SourceText",
    "Span",
    "Texts",
    "TrainingSpec",
    "Value",
    "WritebackError",
    "Writer",
    "framework_of",
    "from_file",
    "hookimpl",
    "input_diagnostic",
]
