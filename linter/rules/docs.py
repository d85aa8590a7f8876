"""Rule documentation: the text of ``trainlint explain`` and of docs/rules.md."""

from __future__ import annotations

from typing import Iterable

from trainlint.core.input_codes import INPUT_CODES
from trainlint.rules import Rule, frameworks_of

DOCS_URL = "https://github.com/trainlint/trainlint/blob/main/docs/rules.md"


def help_uri(code: str, name: str) -> str:
    return f"{DOCS_URL}#{code.lower()}-{name}"


def explain(rule: type[Rule]) -> str:
    lines = [f"# {rule.name} ({rule.code})", "",
             f"Default severity: {rule.default_severity.value}. From plugin `{rule.plugin}`."
             + (f" Applies to: {', '.join(frameworks_of(rule))}." if frameworks_of(rule) else ""),
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


SEVERITY_POLICY = (
    "## What is an error",
    "",
    "An **error** is a certainty: the framework the config targets (found in the project, or stated with "
    "`--framework-source`, `framework-source` or `framework = {...}`) refuses the config or crashes on it, or the "
    "estimate says it runs out of memory on the hardware the user named. A verdict that depends on an *assumed* "
    "release, fork or branch is a **warning** that names the assumption and, where known, the release where the "
    "behaviour changed: a rule whose verdict depends on the release (the column below; each rule declares it, a "
    "test over every rule checks it) is lowered from error to warning when the release is assumed. Unknown names "
    "against an assumed release are one warning per file listing them, with how to state the release; a name a "
    "letter or two from a defined one keeps a finding of its own. Names an entry point of its own may add "
    "(a parser trainlint could not read) are information. Flags a script passes that the assumed release lacks "
    "never lower another finding. See docs/frameworks.md for how the target is found.",
)
"""The severity policy (issue 28), at the head of docs/rules.md."""


def render_markdown(rules: Iterable[type[Rule]]) -> str:
    """docs/rules.md: every code, generated from the rule metadata (a test keeps it current).
    ``rules``: the registry's rules in its order (the session's or the command's)."""
    rules = list(rules)
    out = ["# trainlint rules", "",
           "Generated from the rule metadata by `trainlint rules --format markdown`; do not edit by hand.", "",
           *SEVERITY_POLICY, "",
           "| code | name | severity | release-dependent | summary |", "|---|---|---|---|---|"]
    for entry in INPUT_CODES.values():
        out.append(f"| {entry.code} | {entry.name} | {entry.severity.value} | - | {entry.summary} |")
    for rule in rules:
        dependent = {True: "yes", False: "no"}.get(rule.release_dependent, "-")  # type: ignore[arg-type]
        out.append(f"| {rule.code} | {rule.name} | {rule.default_severity.value} | {dependent} | {rule.summary} |")
    out += ["", "## Input diagnostics", ""]
    for entry in INPUT_CODES.values():
        out += [f"### {entry.code} {entry.name}", "", f"Severity: {entry.severity.value}.", "", entry.summary, ""]
    out += ["## Rules", ""]
    for rule in rules:
        body = explain(rule).split("\n", 1)[1].strip()
        body = body.replace("\n## ", "\n#### ")
        out += [f"### {rule.code} {rule.name}", "", body, ""]
    return "\n".join(out).rstrip() + "\n"
