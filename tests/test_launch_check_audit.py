"""The launch-check audit (linter/data/audit/launch_checks.json, docs/launch-checks.md): every row
names an existing rule or a reason, the page is up to date, the audited releases are the supported
ones, and the rules built from it say the lines and releases the audit found. Prints the counts."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from trainlint.project import audit
from trainlint.core.input_codes import INPUT_CODES
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.rules.startup.megatron.check_table import Check

ROOT = Path(__file__).resolve().parent.parent
READINGS = ROOT / "linter" / "data" / "audit" / "readings.yaml"


# the rules built from the audit's rows at upstream main: the tables of megatron/check_table.py (the
# release tables of megatron/release_table.py quote each release's own lines, checked by their own test)
TABLE_RULES = [r for r in build_registry(create_host(entry_points=False)).rules.values()
               if getattr(r, "checks", ()) and all(isinstance(c, Check) for c in r.checks)]


def _codes() -> set[str]:
    return set(build_registry(create_host(entry_points=False)).rules) | set(INPUT_CODES)


def test_every_check_names_an_existing_rule_or_a_reason_category():
    codes, problems = _codes(), []
    for row in audit.load_rows():
        if row.get("covered_by") and row["covered_by"] not in codes:
            problems.append(f"{row['id']}: no rule {row['covered_by']}")
        if row.get("reason") and row["reason"] not in audit.REASONS:
            problems.append(f"{row['id']}: no reason category {row['reason']}")
        if row.get("covered_by") and row.get("reason"):
            problems.append(f"{row['id']}: both covered and not static")
        if not row["lines"]:
            problems.append(f"{row['id']}: no release makes it")
        if row.get("by") not in (None, "reference", "reading", "same-check", "pattern"):
            problems.append(f"{row['id']}: unknown classification {row.get('by')}")
    assert not problems, "\n".join(problems)


def test_the_readings_name_checks_the_audit_lists_and_valid_verdicts():
    readings = yaml.safe_load(READINGS.read_text(encoding="utf-8"))
    ids, codes = {r["id"] for r in audit.load_rows()}, _codes()
    assert set(readings) <= ids, sorted(set(readings) - ids)
    for ident, reading in readings.items():
        assert set(reading) <= {"covered_by", "reason", "note"}, ident
        assert reading.get("covered_by") in (None, *codes), ident
        assert reading.get("reason") in (None, *audit.REASONS), ident


def test_the_docs_table_is_rendered_from_the_audit_and_lists_every_check():
    text = audit.DOC.read_text(encoding="utf-8")
    assert text == audit.render(), "docs/launch-checks.md is stale: python scripts/audit_launch_checks.py render"
    for row in audit.load_rows():
        assert f"`{row['id']}`" in text, row["id"]


def test_the_audited_releases_are_the_supported_releases():
    """A release added to the shipped catalogs without auditing it fails here (its checks would
    otherwise be missing from the counts silently)."""
    index = json.loads((ROOT / "linter" / "data" / "frameworks" / "index.json").read_text(encoding="utf-8"))
    audited = audit.load_releases()
    for family, variant in (("deepspeed", "DeepSpeed"), ("megatron", "Megatron-LM"), ("neox", "GPT-NeoX")):
        supported = {(c["version"], c["commit"]) for c in index["catalogs"]
                     if c["family"] == family and c["variant"] == variant and c["version"] != "main"}
        assert supported <= {tuple(pair) for pair in audited[family]}, family
        assert audited[family][-1][0] == "main"  # and the upstream commit the rules were read from


def test_every_release_has_checks_and_the_counts_add_up():
    counts = audit.counts()
    assert counts
    for c in counts:
        assert c.found > 0, (c.family, c.release)
        assert c.covered + c.unknowable <= c.found
    print("\n" + audit.counts_text())


def test_the_table_rules_quote_lines_and_releases_the_audit_found():
    """Each row of the Megatron check tables (TL167-TL173) names a source line at the upstream commit
    where the audit found a check, and the first release the audit found it in."""
    rows = [r for r in audit.load_rows() if r["framework"] == "megatron" and "main" in r["lines"]]
    problems = []
    assert len(TABLE_RULES) >= 9, [r.code for r in TABLE_RULES]  # TL167-TL175 at least
    for rule in TABLE_RULES:
        for check in rule.checks:
            if check.last is not None:
                continue  # a check later releases dropped is quoted at its own release (core_releases.references)
            hits = [r for r in rows if r["file"] == check.path and r["lines"]["main"] == check.line]
            if not hits:
                problems.append(f"{rule.code}: no audited check at {check.path}:{check.line}")
                continue
            firsts = {next(iter(r["lines"])) for r in hits}
            # a check whose message changed is two audited rows: the older wording (same file and
            # function) is the row of the release the table names
            earlier = any(check.first in r["lines"] and r["file"] == check.path and r["function"] == hits[0]["function"]
                          and r.get("covered_by") == rule.code for r in audit.load_rows())
            if check.first not in firsts and not earlier:
                problems.append(f"{rule.code}: {check.path}:{check.line} first in {sorted(firsts)}, says {check.first}")
            if not any(r.get("covered_by") for r in hits):  # by it, or by another rule citing the line too (TL161)
                problems.append(f"{rule.code}: the audit does not count {check.path}:{check.line} as covered")
    assert not problems, "\n".join(problems)
