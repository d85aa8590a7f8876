"""``--format sarif``: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One run. The driver lists every rule that has a result, with its documentation as help. Files
under the source root (the git checkout that holds the working directory, else the working
directory itself) get URIs relative to ``%SRCROOT%``, percent-encoded, with forward slashes;
GitHub reads those as repository paths. Regions are exact: 1-based, the end exclusive, columns
in Unicode code points as in the text output (``run.columnKind``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence
from urllib.parse import quote

from trainlint import __version__
from trainlint.rules import frameworks_of
from trainlint.core.results import FileResult
from trainlint.core.diagnostics import Diagnostic, Severity
from trainlint.output.report import as_report
from trainlint.core.positions import Span

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.output.report import Report

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/trainlint/trainlint"
SRCROOT = "%SRCROOT%"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
PROBLEM_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "recommendation"}
MAX_DESCRIPTION = 1024
"""GitHub's limit for shortDescription.text and fullDescription.text."""
FAILURE_CODES = ("TL998", "TL999")
"""A plugin or trainlint itself failed: the run did not complete as it should (exit 2)."""


# -- paths -------------------------------------------------------------------------------------

def source_root(start: str | None = None) -> Path:
    """The root repository-relative paths are taken from: the git checkout that holds ``start``
    (default: the working directory), else ``start`` itself. GitHub resolves annotation files
    and SARIF URIs against the repository root, which is not always where trainlint runs
    (``working-directory: training`` in a workflow) nor where its project config lives."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():  # a directory, or a file in worktrees and submodules
            return folder
    return here


def is_pseudo_path(path: str) -> bool:
    """``<command line>`` (trainlint run), ``<plugins>``: findings that are not in a file."""
    return path.startswith("<") and path.endswith(">")


def relative_path(path: str, root: Path) -> str | None:
    """``path`` relative to ``root`` with forward slashes, symlinks resolved; None when outside."""
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return None


def artifact_location(path: str, root: Path) -> dict[str, str]:
    """A relative URI under %SRCROOT%, else an absolute file: URI (GitHub drops files outside
    the checkout; other viewers can still open them)."""
    relative = relative_path(path, root)
    if relative is not None:
        # os.fsencode: a non-UTF-8 file name (surrogate-escaped) is percent-encoded byte by byte
        return {"uri": quote(os.fsencode(relative), safe="/"), "uriBaseId": SRCROOT}
    return {"uri": Path(path).resolve().as_uri()}


# -- rules -------------------------------------------------------------------------------------

def _clip(text: str, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def _section(documentation: str, heading: str) -> str:
    """The body of ``## heading`` in a ruff-style rule docstring ('' when absent)."""
    match = re.search(rf"^##\s*{re.escape(heading)}\s*$(.*?)(?=^##\s|\Z)", documentation, re.M | re.S | re.I)
    return match.group(1).strip() if match else ""


def _family(rule: Any) -> str | None:
    """``trainlint.rules.startup.megatron.megatron_save_interval`` -> ``startup`` for the built-in rules."""
    parts = getattr(rule, "__module__", "").split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["trainlint", "rules"] else None


def _builtin(rule: Any) -> bool:
    return getattr(rule, "plugin", "").startswith("trainlint")


def rule_descriptor(code: str, name: str, registry: Any) -> dict[str, Any]:
    """A reportingDescriptor: summary, the docstring's "What it does" as full description, the
    whole documentation (as ``trainlint explain`` prints it) as help, a link to docs/rules.md."""
    from trainlint.core.input_codes import INPUT_CODES
    from trainlint.rules.docs import explain, explain_input_code, help_uri

    rule = registry.rules.get(code) if registry is not None else None
    tags: list[str] = []
    uri: str | None = None
    if rule is not None:
        summary, severity = rule.summary, rule.default_severity
        documentation = rule.documentation()
        full = _section(documentation, "What it does") or documentation.split("\n\n", 1)[0]
        help_text = explain(rule)
        family = _family(rule)
        tags = [family] if family else [rule.plugin]
        tags += frameworks_of(rule)
        if _builtin(rule):
            uri = help_uri(code, rule.name)
        name = rule.name
    elif code in INPUT_CODES:
        entry = INPUT_CODES[code]
        summary, severity, full, name = entry.summary, entry.severity, entry.summary, entry.name
        help_text = explain_input_code(code)
        tags = ["input"]
        uri = help_uri(code, entry.name)
    else:  # a code nothing describes (a plugin that reports under a code it does not register)
        summary, severity, full, help_text = name or code, Severity.WARNING, name or code, name or code
    # The help is shown under the rule's name on GitHub: drop explain()'s "# name (code)" title.
    help_body = re.sub(r"\A# [^\n]*\n+", "", help_text).strip() or summary
    descriptor: dict[str, Any] = {
        "id": code,
        "name": name or code,
        "shortDescription": {"text": _clip(summary or name or code)},
        "fullDescription": {"text": _clip(full or summary or code)},
        "help": {"text": help_body, "markdown": help_body},
        "defaultConfiguration": {"level": LEVELS[severity]},
        "properties": {
            "tags": list(dict.fromkeys(tags)),
            # Launch and input checks restate what the framework itself refuses; estimation and
            # planning findings rest on a model of memory and time.
            "precision": "medium" if tags[:1] in (["estimation"], ["planning"]) else "high",
            "problem.severity": PROBLEM_SEVERITY[severity],
        },
    }
    if uri:
        descriptor["helpUri"] = uri
    return descriptor


# -- results -----------------------------------------------------------------------------------

def region(span: Span) -> dict[str, int]:
    """SARIF's region: the same numbers as the text output; an empty span has no end."""
    out = {"startLine": span.line, "startColumn": span.column}
    if (span.end_line, span.end_column) > (span.line, span.column):
        out["endLine"] = span.end_line
        out["endColumn"] = span.end_column
    return out


class _Artifacts:
    """The run's artifact list; the lines (for fingerprints) of the file being reported."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.index: dict[str, int] = {}
        self.entries: list[dict[str, Any]] = []
        self.lines: dict[str, list[str]] = {}
        """Read when a result first needs them; emptied after each file (:meth:`done`), so a
        report of 10,000 files never holds their texts."""

    def location(self, path: str) -> dict[str, Any]:
        """The artifactLocation of ``path``, adding the file to the artifact list once."""
        location = artifact_location(path, self.root)
        key = location["uri"]
        if key not in self.index:
            self.index[key] = len(self.entries)
            self.entries.append({"location": dict(location)})
        return {**location, "index": self.index[key]}

    def lines_of(self, uri: str, path: str) -> list[str]:
        if uri not in self.lines:
            self.lines[uri] = _read_lines(path)
        return self.lines[uri]

    def done(self) -> None:
        self.lines.clear()


def _read_lines(path: str) -> list[str]:
    from trainlint.files.sources import read_text_lenient

    text = read_text_lenient(path)
    return text.split("\n") if text is not None else []


def _line_hash(code: str, uri: str, span: Span, lines: list[str]) -> str:
    """Stable across unrelated edits: the rule, the file and the text of the line (whitespace
    collapsed), not its number."""
    text = " ".join(lines[span.line - 1].split()) if 0 < span.line <= len(lines) else ""
    return hashlib.sha256(f"{code}\0{uri}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _physical_or_logical(path: str, span: Span, artifacts: _Artifacts) -> dict[str, Any]:
    if is_pseudo_path(path):  # no file to point into: name the place instead
        return {"logicalLocations": [{"name": path.strip("<>"), "kind": "module"}]}
    return {"physicalLocation": {"artifactLocation": artifacts.location(path), "region": region(span)}}


def _result(d: Diagnostic, path: str, rule_index: int, artifacts: _Artifacts, seen: Counter) -> dict[str, Any]:
    location = _physical_or_logical(path, d.span, artifacts)
    result: dict[str, Any] = {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": LEVELS[d.severity],
        "message": {"text": d.message + (f"\nFix: {d.fix}" if d.fix else "")},
        "locations": [location],
    }
    if "physicalLocation" in location:
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        digest = _line_hash(d.code, uri, d.span, artifacts.lines_of(uri, path))
        seen[digest] += 1  # GitHub's own form, "hash:occurrence", keeps equal lines apart
        result["partialFingerprints"] = {"primaryLocationLineHash": f"{digest}:{seen[digest]}"}
    fixes = _fixes(d, path, artifacts)
    if fixes:
        result["fixes"] = fixes
    related = []
    for i, r in enumerate(d.related, start=1):
        rel = _physical_or_logical(r.path or path, r.span, artifacts)
        related.append({"id": i, "message": {"text": r.message}, **rel})
    if related:
        result["relatedLocations"] = related
    return result


def _fixes(d: Diagnostic, path: str, artifacts: _Artifacts) -> list[dict[str, Any]]:
    """SARIF ``fixes`` for a safe fix (what ``check --fix`` applies): its edits as replacements,
    grouped by file. Unsafe and display-only fixes stay in the message text."""
    from trainlint.core.diagnostics import Applicability

    if d.applicability is not Applicability.SAFE or not d.edits:
        return []
    changes: dict[str, list[dict[str, Any]]] = {}
    for edit in d.edits:
        target = edit.path or path
        if is_pseudo_path(target):
            return []
        span = edit.span
        changes.setdefault(target, []).append({
            "deletedRegion": {"startLine": span.line, "startColumn": span.column,
                              "endLine": span.end_line, "endColumn": span.end_column},
            "insertedContent": {"text": edit.content},
        })
    return [{"description": {"text": d.fix or "apply the fix"},
             "artifactChanges": [{"artifactLocation": artifacts.location(target), "replacements": replacements}
                                 for target, replacements in changes.items()]}]


def render(results: Sequence[FileResult] | Report, *, registry: Any = None, root: str | os.PathLike | None = None,
           baseline: tuple | None = None) -> str:
    """The SARIF log as JSON text. ``root``: where relative URIs start (default: see
    :func:`source_root`). ``baseline``: (path, Outcome) when a baseline left findings out: every
    result reported is then ``baselineState: new``, and the run's properties say how many were
    left out and how many recorded ones no longer occur."""
    return "".join(render_pieces(results, registry=registry, root=root, baseline=baseline))


_RESULTS_INDENT = "\n" + " " * 8
"""A result is at depth 4 of the log ({runs: [{results: [...]}]}): json.dumps(indent=2) indents it by 8."""


def render_pieces(results: Sequence[FileResult] | Report, *, registry: Any = None,
                  root: str | os.PathLike | None = None, baseline: tuple | None = None) -> Iterator[str]:
    """:func:`render`'s text in pieces: the same bytes as ``json.dumps(log, indent=2)``. The rules,
    the artifacts and whether the run succeeded come before the results in the log and are known
    only once every result is made: the results are written to a temporary file (in memory while
    small) as they are made, one file's at a time, and copied out after the rest of the log."""
    from trainlint.output.report import Spool

    base = Path(root).resolve() if root is not None else source_root()
    rule_index: dict[str, int] = {}
    rules: list[dict[str, Any]] = []
    artifacts = _Artifacts(base)
    seen: Counter = Counter()
    failed = False
    count = 0
    spool = Spool()
    try:
        for entry in as_report(results).entries():
            for d in entry.diagnostics:
                if d.code not in rule_index:
                    rule_index[d.code] = len(rules)
                    rules.append(rule_descriptor(d.code, d.name, registry))
                failed = failed or d.code in FAILURE_CODES
                result = _result(d, d.path or entry.path, rule_index[d.code], artifacts, seen)
                if baseline is not None:
                    result["baselineState"] = "new"
                spool.append(((",", "")[count == 0] + _RESULTS_INDENT + json.dumps(result, indent=2).replace(
                    "\n", _RESULTS_INDENT)).encode("utf-8", "surrogatepass"))
                count += 1
            if entry.target is not None and entry.diagnostics and not is_pseudo_path(entry.path):
                # the framework the file's findings are about: a property of the file, not of each result
                index = artifacts.location(entry.path)["index"]
                artifacts.entries[index].setdefault("properties", {})["target"] = entry.target
            artifacts.done()
        run = {
            "tool": {"driver": {
                "name": "trainlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            # No workingDirectory: GitHub would take it as the base of absolute URIs, and the base
            # of ours is %SRCROOT%, which need not be the directory trainlint ran in.
            "invocations": [{"executionSuccessful": not failed}],
            "originalUriBaseIds": {SRCROOT: {"uri": base.as_uri().rstrip("/") + "/"}},
            "artifacts": artifacts.entries,
            "results": [],
            "columnKind": "unicodeCodePoints",
        }
        if baseline is not None:
            path, outcome = baseline
            run["properties"] = {"baseline": {"path": str(path), "suppressed": outcome.suppressed,
                                              "stale": outcome.stale}}
        text = json.dumps({"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
        # the results go where json.dumps put the empty list: the last `"results": []` of the log
        # (a string value holding those characters has its quotes escaped)
        cut = text.rindex('"results": []') + len('"results": [')
        yield text[:cut]
        if count:
            import codecs

            # an incremental decoder: a block may end inside a character
            decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
            for start in range(0, spool.end, 1 << 16):
                yield decoder.decode(spool.read_at(start, min(1 << 16, spool.end - start)))
            yield decoder.decode(b"", final=True) + "\n      "
        yield text[cut:]
    finally:
        spool.close()
