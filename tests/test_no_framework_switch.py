"""No framework-name switch outside the frameworks' own folders (issue 31).

The core model, the estimator, the rules, the layout search, the engine and the faces ask the run's
:class:`trainlint.core.framework.Framework` (or check a capability) instead of comparing a framework or
format name. This test reads the package's Python sources and fails with every line that compares
a ``framework`` / ``format`` / ``kind`` / ``family`` value with a built-in framework's name, keys a
table by those names or lists them, outside ``adapters/<framework>/`` (and the flat adapter modules
that are a framework's until they move into its folder, named in ``FRAMEWORK_MODULES``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES = r"""["'](?:deepspeed|megatron|neox|gpt-neox|megatron-deepspeed|hf-trainer|accelerate)["']"""
SUBJECT = r"\b(?:\w*framework\w*|fw|fmt|format|\w*_format|kind|family|FORMAT)\b"
PATTERNS = [
    re.compile(SUBJECT + r"\s*(?:==|!=|not in|in)\s*[(\[{]?\s*" + NAMES),   # fw == "neox", fw in ("megatron", ...)
    re.compile(NAMES + r"\s*(?:==|!=|in|not in)\s*(?:\w+\.)*" + SUBJECT),   # "neox" == spec.framework
    re.compile(r"[{,]\s*" + NAMES + r"\s*:\s*"),                             # {"megatron": ...}
    re.compile(r"=\s*\(\s*" + NAMES + r"\s*,"),                              # FAMILIES = ("megatron", ...)
    re.compile(r"\bframeworks\s*=\s*\(\s*" + NAMES),                         # frameworks = ("deepspeed",)
]

FRAMEWORK_MODULES: set[str] = set()
"""A framework's modules still beside the folders (adapters/<name>.py), each belonging to one framework."""

KNOWN = {
    # Switches not yet moved into their framework, by file: the count may only fall. Each entry is
    # work left for issue 31 (see docs/architecture.md, "What is not yet in its place").
}


def offending_lines() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for top in ("linter", "adapters", "schemas"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            parts = rel.split("/")
            if parts[0] == "adapters" and (len(parts) > 2 or rel in FRAMEWORK_MODULES):
                continue  # inside a framework's own folder (or module)
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if any(p.search(code) for p in PATTERNS):
                    found.setdefault(rel, []).append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_framework_name_switch_outside_the_frameworks():
    found = offending_lines()
    new = {rel: lines for rel, lines in found.items() if len(lines) > KNOWN.get(rel, 0)}
    assert not new, "framework-name switches outside adapters/<framework>/ (ask the run's Framework, or " \
                    "declare a capability):\n" + "\n".join(line for lines in new.values() for line in lines)


def test_the_known_list_only_shrinks():
    found = offending_lines()
    stale = {rel: n for rel, n in KNOWN.items() if len(found.get(rel, [])) < n}
    assert not stale, f"fewer switches than KNOWN says (lower the counts): {stale}"


def test_the_patterns_catch_a_switch():
    samples = ['if spec.framework == "megatron":', 'fw in ("deepspeed", "neox")', '_SCHEMAS = {"neox": "neox"}',
               'FAMILIES = ("megatron", "neox")', '    frameworks = ("megatron",)', 'if "neox" == spec.framework:']
    assert all(any(p.search(s) for p in PATTERNS) for s in samples)
    assert not any(p.search('if i.owner == "megatron":') for p in PATTERNS)  # an engine field's value, not a framework
