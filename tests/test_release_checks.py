"""The release-bound Megatron check tables (TL600-TL611, linter/rules/startup/megatron/release_table.py):
every row names a check the launch-check audit found at that line in the release it names, within
the releases the audit found it in; and the tables' semantics (a check upstream no longer makes is
said only against a stated release inside its range; defaults are the release's own)."""

from __future__ import annotations

import pytest

from trainlint.project import audit
from trainlint.frameworks.target import FrameworkTarget, TargetOrigin
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.rules.startup.megatron.release_table import ReleaseCheck, ReleaseCheckTable
from trainlint.rules.startup.releases import release_key

RULES = [rule for rule in build_registry(create_host(entry_points=False)).rules.values()
         if isinstance(rule, type) and issubclass(rule, ReleaseCheckTable)]


def test_the_tables_are_registered():
    assert sorted(r.code for r in RULES) == [f"TL60{i}" for i in range(10)] + ["TL610", "TL611"]


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


def _defined(release: str) -> set[str]:
    """The dests a release defines: its shipped catalog, or upstream's table for ``main``."""
    if release == "main":
        from trainlint.schemas import load_schema

        return set(load_schema("megatron")["properties"])
    import json
    from pathlib import Path

    import trainlint

    folder = Path(trainlint.__file__).resolve().parent / "data" / "frameworks"
    data = json.loads((folder / f"megatron-megatron-lm-{release}.json").read_text(encoding="utf-8"))
    return {row[1] for row in data["args"]}


def _sources(dest: str, release: str, derived: dict) -> tuple[str, ...]:
    """The options a (derived) value is read from in a release: use_dist_ckpt is the flag up to
    core_v0.8.0, then ckpt_format != "torch"."""
    if dest == "use_dist_ckpt":
        key = release_key(release)
        return ("use_dist_ckpt",) if key is not None and key < (0, 9, 0) else ("ckpt_format",)
    return derived[dest][0] if dest in derived else (dest,)


def test_every_option_a_row_reads_is_defined_by_every_release_it_names():
    """A row reading a flag some release of its range does not define would silently never fire there
    (an unknown default): the ranges and the flag names must agree with the releases' catalogs."""
    from trainlint.rules.startup.megatron.release_table import DERIVED, Dest, Quiet

    order = [release for release, _ in audit.load_releases()["megatron"]]
    defined = {release: _defined(release) for release in order}
    problems = []
    for rule in RULES:
        for check in rule.checks:
            span = order[order.index(check.first):order.index(check.last or "main") + 1]
            for release in span:
                dests = set()
                for cond in check.when:
                    if isinstance(cond, Quiet):
                        continue  # a guard: an option a release does not define cannot have turned the check off
                    dests.update(_sources(cond[0], release, DERIVED))
                    if len(cond) > 2 and isinstance(cond[2], Dest):
                        dests.update(_sources(cond[2].name, release, DERIVED))
                missing = sorted(d for d in dests if d not in defined[release])
                if missing:
                    problems.append(f"{rule.code} {check.path}:{check.line}: {release} defines no {missing}")
    assert not problems, "\n".join(problems)
