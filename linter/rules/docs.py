"""Rule documentation: the text of ``trainlint explain`` and of docs/rules.md."""

from __future__ import annotations

from trainlint.input_codes import INPUT_CODES
from trainlint.registry import Registry
from trainlint.rules import Rule

DOCS_URL = "https://github.com/trainlint/trainlint/blob/main/docs/rules.md"


def help_uri(code: str, name: str) -> str:
    return f"{DOCS_URL}#{code.lower()}-{name}"


def explain(rule: type[Rule]) -> str:
    lines = [f"# {rule.name} ({rule.code})", "",
             f"Default severity: {rule.default_severity.value}. From plugin `{rule.plugin}`."
             + (f" Applies to: {', '.join(rule.frameworks)}." if rule.frameworks else ""),
             "", rule.documentation()]
    if rule.options:
        lines += ["", "## Options", ""]
        for name, option in rule.options.items():
            lines.append(f"- `{name}` (default `{option.default!r}`): {option.help}")
    return "\n".join(lines).rstrip() + "\n"


def explain_input_code(code: str) -> str:
    entry = INPUT_CODES[code]
    # TL020 is found from what suppressed the other findings, after the rules ran
    source = ("Reported after the rules ran, from what the suppressions suppressed." if code == "TL020"
              else "Reported by the adapters while reading a file.")
    return (f"# {entry.name} ({entry.code})\n\nDefault severity: {entry.severity.value}. "
            f"{source}\n\n{entry.summary}\n")


def render_markdown(registry: Registry) -> str:
    """docs/rules.md: every code, generated from the rule metadata (a test keeps it current)."""
    out = ["# trainlint rules", "",
           "Generated from the rule metadata by `trainlint rules --format markdown`; do not edit by hand.", "",
           "| code | name | severity | summary |", "|---|---|---|---|"]
    for entry in INPUT_CODES.values():
        out.append(f"| {entry.code} | {entry.name} | {entry.severity.value} | {entry.summary} |")
    for rule in registry.rules.values():
        out.append(f"| {rule.code} | {rule.name} | {rule.default_severity.value} | {rule.summary} |")
    out += ["", "## Input diagnostics", ""]
    for entry in INPUT_CODES.values():
        out += [f"### {entry.code} {entry.name}", "", f"Severity: {entry.severity.value}.", "", entry.summary, ""]
    out += ["## Rules", ""]
    for rule in registry.rules.values():
        body = explain(rule).split("\n", 1)[1].strip()
        body = body.replace("\n## ", "\n#### ")
        out += [f"### {rule.code} {rule.name}", "", body, ""]
    return "\n".join(out).rstrip() + "\n"
