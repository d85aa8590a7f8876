"""The launch-check audit: every check the frameworks make while they read a config, per supported
release, and what trainlint says about each (``linter/data/audit/launch_checks.json``, built by
``scripts/audit_launch_checks.py`` from the frameworks' sources; rendered to ``docs/launch-checks.md``).

A row is one check (an ``assert``, a guarded ``raise``, a NeoX ``validate_*`` ``return False``) with
its line at the pinned commit of every release that makes it, and either the rule that covers it
(``covered_by``), a reason it cannot be known from the files (``reason``, one of :data:`REASONS`), or
neither: statically knowable and not covered yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "audit" / "launch_checks.json"
DOC = Path(__file__).resolve().parents[2] / "docs" / "launch-checks.md"

REASONS: dict[str, str] = {
    "environment": "depends on the machine or the installed software (a library version, the GPU, an environment "
                   "variable), not on the config",
    "python-object": "tests a Python object the training code builds (the model, its modules, a client optimizer, "
                     "an mpu), which no config file describes",
    "runtime": "tests state that exists only while the job runs (ranks, process groups, the initialised "
               "distributed backend)",
    "data": "tests the contents of data, checkpoint or tokenizer files",
    "internal": "an invariant of the framework's own code, with no config value that reaches it",
}
"""Why a check cannot be decided from the files."""

def _frameworks() -> list[Any]:
    from trainlint.adapters import builtin_frameworks

    return [f for f in builtin_frameworks() if f.catalog_family]


# the audited frameworks: the shipped ones with argument catalogs (title and repository their own)
FAMILIES = tuple(sorted(f.catalog_family for f in _frameworks()))
FAMILY_NAMES = {f.catalog_family: f.title for f in _frameworks()}
REPOSITORIES = {f.catalog_family: f.repository for f in _frameworks()}


def _load() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def load_rows() -> list[dict[str, Any]]:
    return list(_load()["checks"])


def load_releases() -> dict[str, list[list[str]]]:
    """{family: [[release, commit], ...]} oldest first, upstream last."""
    return dict(_load()["releases"])


def save_rows(rows: list[dict[str, Any]], releases: dict[str, Any]) -> None:
    order = {family: [r for r, _ in releases[family]] for family in releases}

    def key(row: dict[str, Any]) -> tuple:
        newest = order[row["framework"]][-1]
        return (row["framework"], row["file"], row["lines"].get(newest, 10**9), min(row["lines"].values()), row["id"])

    for row in rows:
        row["lines"] = {r: row["lines"][r] for r in order[row["framework"]] if r in row["lines"]}
    data = {"generated_by": "scripts/audit_launch_checks.py",
            "releases": {f: [list(pair) for pair in releases[f]] for f in sorted(releases)},
            "checks": sorted(rows, key=key)}
    DATA.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, ensure_ascii=False)
    DATA.write_text(text + "\n", encoding="utf-8")


def status(row: dict[str, Any]) -> str:
    """``covered``, ``unknowable`` or ``uncovered``."""
    if row.get("covered_by"):
        return "covered"
    if row.get("reason"):
        return "unknowable"
    return "uncovered"


@dataclass(frozen=True)
class Count:
    family: str
    release: str
    commit: str
    found: int
    covered: int
    unknowable: int

    @property
    def uncovered(self) -> int:
        return self.found - self.covered - self.unknowable

    @property
    def knowable_covered(self) -> str:
        knowable = self.found - self.unknowable
        return f"{100 * self.covered / knowable:.0f}%" if knowable else "-"


def counts(rows: list[dict[str, Any]] | None = None, releases: dict[str, Any] | None = None) -> list[Count]:
    rows = load_rows() if rows is None else rows
    releases = load_releases() if releases is None else releases
    out = []
    for family in FAMILIES:
        for release, commit in releases.get(family, []):
            present = [r for r in rows if r["framework"] == family and release in r["lines"]]
            out.append(Count(family, release, commit, len(present),
                             sum(status(r) == "covered" for r in present),
                             sum(status(r) == "unknowable" for r in present)))
    return out


def counts_text() -> str:
    lines = [f"{'framework':<12}{'release':<15}{'commit':<10}{'found':>7}{'covered':>9}{'not static':>12}"
             f"{'uncovered':>11}{'covered of knowable':>21}"]
    for c in counts():
        lines.append(f"{FAMILY_NAMES[c.family]:<12}{c.release:<15}{c.commit[:8]:<10}{c.found:>7}{c.covered:>9}"
                     f"{c.unknowable:>12}{c.uncovered:>11}{c.knowable_covered:>21}")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def _span(row: dict[str, Any], order: list[str]) -> str:
    present = [r for r in order if r in row["lines"]]
    if present == order:
        return "all"
    first, last = present[0], present[-1]
    if first == last:
        return first
    gaps = len(present) != order.index(last) - order.index(first) + 1
    return f"{first} to {last}" + (" (not every release)" if gaps else "")


def render() -> str:
    """docs/launch-checks.md from the audit data."""
    data = _load()
    rows, releases = data["checks"], data["releases"]
    out = [
        "# Launch checks: what the frameworks check at start-up, and what trainlint covers",
        "",
        "<!-- generated by `python scripts/audit_launch_checks.py render` from linter/data/audit/launch_checks.json;"
        " do not edit -->",
        "",
        "Every check a config can trigger while the framework reads its arguments or config: an `assert`, a `raise`"
        " under the `if` that guards it, a GPT-NeoX `validate_*` returning False. They were read with `ast` from the"
        " source at the pinned commit of each supported release (the commits of the shipped argument catalogs,"
        " `linter/data/frameworks/index.json`, and the upstream commit trainlint's rules were read from, `main`) in:",
        "",
        "* Megatron-LM: `megatron/training/arguments.py` (`validate_args` and its helpers), Megatron-Core's"
        " `TransformerConfig` / `ModelParallelConfig` `__post_init__` and the micro-batch calculator;",
        "* DeepSpeed: `DeepSpeedConfig` (`runtime/config.py`), its pydantic config models and their validators"
        " (precision, ZeRO, offload, `config_utils.py`), elasticity, and the engine's and pipeline engine's"
        " configuration steps;",
        "* GPT-NeoX: `NeoXArgs` (`from_ymls`, `calculate_derived`, `validate_keys/types/values`).",
        "",
        "A check is one row however many releases make it (matched by file, function, condition and message); its"
        " line is given at the newest release that has it. **Covered by** is the trainlint rule that reports it (from"
        " the rules' own references to these lines, or a reader's decision); **not static** gives why the files"
        " cannot tell (" + "; ".join(f"`{k}`: {v}" for k, v in REASONS.items()) + "). A row with neither is a check"
        " a config decides that trainlint does not make yet. How each row was classified is in the `by` column"
        " (`reference`, `reading`, `pattern`: from the names the condition reads).",
        "",
        "`tests/test_launch_check_audit.py` fails when a row names no existing rule or reason, when this page is"
        " out of date, and prints the counts.",
        "",
        "## Counts per release",
        "",
        "| framework | release | commit | checks | covered by a rule | not static | not covered | covered of the"
        " knowable |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for c in counts(rows, releases):
        out.append(f"| {FAMILY_NAMES[c.family]} | {c.release} | `{c.commit[:8]}` | {c.found} | {c.covered} |"
                   f" {c.unknowable} | {c.uncovered} | {c.knowable_covered} |")
    for family in FAMILIES:
        order = [r for r, _ in releases.get(family, [])]
        if not order:
            continue
        commits = dict(releases[family])
        out += ["", f"## {FAMILY_NAMES[family]}", "",
                "Releases: " + ", ".join(f"{r} (`{commits[r][:8]}`)" for r in order) + ".", "",
                "| check | releases | source (newest) | condition (fails when) | message | covered by / not static | by |",
                "|---|---|---|---|---|---|---|"]
        for row in (r for r in rows if r["framework"] == family):
            newest = next(r for r in reversed(order) if r in row["lines"])
            url = f"https://github.com/{REPOSITORIES[family]}/blob/{commits[newest]}/{row['file']}#L{row['lines'][newest]}"
            verdict = f"**{row['covered_by']}**" if row.get("covered_by") else \
                (f"not static: {row['reason']}" if row.get("reason") else "not covered")
            if row.get("note"):
                verdict += f" ({_cell(row['note'])})"
            out.append(f"| `{row['id']}` | {_span(row, order)} | [{row['file'].rsplit('/', 1)[-1]}:{row['lines'][newest]}]"
                       f"({url}) `{row['function']}` | `{_cell(row['condition'])}` | {_cell(row['message'])} | {verdict} |"
                       f" {row.get('by', '')} |")
    return "\n".join(out) + "\n"
