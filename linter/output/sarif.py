"""``--format sarif``: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One run; the driver lists every rule that has a result (with its documentation as help);
locations are URIs relative to ``%SRCROOT%`` (the project root, else the working directory)
with exact regions. Columns are Unicode code points, 1-based, the end exclusive, as in the
text output (``run.columnKind``)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

from trainlint import __version__
from trainlint.checker import FileResult
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.output import file_entries

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def relative_uri(path: str, root: Path) -> tuple[str, bool]:
    """(uri, relative?) for a diagnostic's path: relative with forward slashes when under ``root``."""
    if path.startswith("<"):  # "<command line>", "<plugins>": nothing on disk
        return path.strip("<>").replace(" ", "-"), True
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(root).as_posix(), True
    except ValueError:
        return absolute.as_uri(), False


def _rule_descriptor(code: str, name: str, registry: Any) -> dict[str, Any]:
    from trainlint.input_codes import INPUT_CODES
    from trainlint.rules.docs import explain, explain_input_code, help_uri

    rule = registry.rules.get(code) if registry is not None else None
    if rule is not None:
        summary, text, level = rule.summary, explain(rule), LEVELS[rule.default_severity]
    elif code in INPUT_CODES:
        entry = INPUT_CODES[code]
        summary, text, level = entry.summary, explain_input_code(code), LEVELS[entry.severity]
    else:
        summary, text, level = name, name, "warning"
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary or name},
        "fullDescription": {"text": summary or name},
        "help": {"text": text, "markdown": text},
        "helpUri": help_uri(code, name),
        "defaultConfiguration": {"level": level},
    }


def _region(d: Diagnostic) -> dict[str, int]:
    span = d.span
    region = {"startLine": span.line, "startColumn": span.column}
    if (span.end_line, span.end_column) > (span.line, span.column):
        region["endLine"] = span.end_line
        region["endColumn"] = span.end_column
    return region


def _fingerprint(code: str, uri: str, d: Diagnostic, lines: dict[str, list[str]]) -> str:
    """Stable across unrelated edits: the rule, the file and the text of the line (not its number)."""
    text = lines.get(uri, [])
    line_text = text[d.line - 1].strip() if 0 < d.line <= len(text) else ""
    return hashlib.sha256(f"{code}\0{uri}\0{line_text}".encode()).hexdigest()[:32]


def _read_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def render(results: Sequence[FileResult], *, registry: Any = None, root: str | None = None) -> str:
    base = Path(root or os.getcwd()).resolve()
    rules: dict[str, int] = {}
    descriptors: list[dict[str, Any]] = []
    artifacts: dict[str, int] = {}
    artifact_list: list[dict[str, Any]] = []
    sarif_results: list[dict[str, Any]] = []
    lines: dict[str, list[str]] = {}

    def artifact(path: str) -> tuple[dict[str, Any], int]:
        uri, relative = relative_uri(path, base)
        if uri not in artifacts:
            artifacts[uri] = len(artifact_list)
            location = {"uri": uri, **({"uriBaseId": "%SRCROOT%"} if relative else {})}
            artifact_list.append({"location": location})
            lines[uri] = _read_lines(path)
        location = {"uri": uri, "index": artifacts[uri], **({"uriBaseId": "%SRCROOT%"} if relative else {})}
        return location, artifacts[uri]

    for entry in file_entries(results):
        for d in entry.diagnostics:
            if d.code not in rules:
                rules[d.code] = len(descriptors)
                descriptors.append(_rule_descriptor(d.code, d.name, registry))
            location, _ = artifact(d.path or entry.path)
            message = d.message + (f"\nFix: {d.fix}" if d.fix else "")
            result: dict[str, Any] = {
                "ruleId": d.code,
                "ruleIndex": rules[d.code],
                "level": LEVELS[d.severity],
                "message": {"text": message},
                "locations": [{"physicalLocation": {"artifactLocation": location, "region": _region(d)}}],
                "partialFingerprints": {"primaryLocationLineHash": _fingerprint(d.code, location["uri"], d, lines)},
            }
            related = []
            for i, r in enumerate(d.related):
                rel_location, _ = artifact(r.path or d.path or entry.path)
                related.append({"id": i, "message": {"text": r.message}, "physicalLocation": {
                    "artifactLocation": rel_location, "region": _region(Diagnostic(d.code, d.name, d.severity, "", r.span))}})
            if related:
                result["relatedLocations"] = related
            sarif_results.append(result)

    run = {
        "tool": {"driver": {
            "name": "trainlint",
            "version": __version__,
            "semanticVersion": __version__,
            "informationUri": "https://github.com/trainlint/trainlint",
            "rules": descriptors,
        }},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": base.as_uri() + "/"}},
        "artifacts": artifact_list,
        "results": sarif_results,
        "columnKind": "unicodeCodePoints",
    }
    return json.dumps({"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
