"""The release-bound Megatron check tables (TL600-TL609, linter/rules/startup/megatron/release_table.py):
every row names a check the launch-check audit found at that line in the release it names, within
the releases the audit found it in; and the tables' semantics (a check upstream no longer makes is
said only against a stated release inside its range; defaults are the release's own)."""

from __future__ import annotations

import pytest

from trainlint import audit
from trainlint.frameworks.target import FrameworkTarget, TargetOrigin
from trainlint.plugins import create_host
from trainlint.registry import build_registry
from trainlint.rules.startup.megatron.release_table import ReleaseCheck, ReleaseCheckTable

RULES = [rule for rule in build_registry(create_host(entry_points=False)).rules.values()
         if isinstance(rule, type) and issubclass(rule, ReleaseCheckTable)]


def test_the_tables_are_registered():
    assert sorted(r.code for r in RULES) == [f"TL60{i}" for i in range(10)]


def test_every_row_quotes_a_line_and_releases_the_audit_found():
    rows = [r for r in audit.load_rows() if r["framework"] == "megatron"]
    order = [release for release, _ in audit.load_releases()["megatron"]]
    problems = []
    for rule in RULES:
        for check in rule.checks:
            at = check.last or "main"
            hits = [r for r in rows if r["lines"].get(at) == check.line
                    and r["file"].rsplit("/", 1)[-1] == check.path.rsplit("/", 1)[-1]]
            if not hits:
                problems.append(f"{rule.code}: no audited check at {check.path}:{check.line} in {at}")
                continue
            first = check.first if check.first != "main" else "main"
            if not any(first in r["lines"] and order.index(first) >= order.index(next(iter(r["lines"]))) for r in hits):
                problems.append(f"{rule.code}: {check.path}:{check.line} said to start in {first}, the audit disagrees")
    assert not problems, "\n".join(problems)


def _target(version: str | None, origin: TargetOrigin = TargetOrigin.PROJECT_CONFIG) -> FrameworkTarget:
    return FrameworkTarget("megatron", "Megatron-LM", version, origin)


@pytest.mark.parametrize("version, origin, applies", [
    ("core_v0.14.0", TargetOrigin.PROJECT_CONFIG, True),
    ("core_v0.11.0", TargetOrigin.INSTALLED, True),
    ("core_v0.10.0", TargetOrigin.PROJECT_CONFIG, False),
    ("core_v0.18.0", TargetOrigin.PROJECT_CONFIG, False),
    (None, TargetOrigin.SOURCE_BESIDE, False),     # a checkout of unknown version: maybe newer than the range
    (None, TargetOrigin.ASSUMED, False),           # upstream no longer makes it
])
def test_a_check_upstream_dropped_applies_only_to_a_known_release_in_its_range(version, origin, applies):
    check = ReleaseCheck("megatron/training/arguments.py", 1, "core_v0.11.0", "core_v0.17.0", (), "")
    assert check.applies(_target(version, origin)) is applies


def test_a_check_upstream_still_makes_applies_to_the_assumed_upstream():
    check = ReleaseCheck("megatron/training/arguments.py", 1, "core_v0.17.0", None, (), "")
    assert check.applies(_target(None, TargetOrigin.ASSUMED))
    assert check.applies(_target("core_v0.19.0"))
    assert not check.applies(_target("core_v0.16.0"))
