"""benchmarks/rejection_recall.py: its case manifests are well formed, and it tells a caught rejection
from a clean accepted config (one case of each, run as the benchmark runs them)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def recall():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import rejection_recall as module
    finally:
        sys.path.pop(0)
    return module


def test_every_manifest_names_existing_cases_with_an_outcome_and_a_source(recall):
    cases = recall.load_cases()
    assert {c.framework for c in cases} >= {"megatron"}
    for case in cases:
        assert case.expect in ("reject", "accept") and case.source, case.file
    listed = {c.file for c in cases}
    on_disk = {p for p in (REPO / "benchmarks" / "rejection_cases").glob("*/*") if p.name != "cases.yaml"}
    assert on_disk == listed, sorted(str(p) for p in on_disk ^ listed)  # no case file left out of a manifest


def test_a_rejection_is_caught_and_an_accepted_config_is_clean(recall):
    by_name = {c.file.name: c for c in recall.load_cases("megatron")}
    rejected = recall.run(by_name["eval-batch-gtp-factor.sh"])
    assert rejected.caught and any("TL173" in line for line in rejected.errors + rejected.warnings)
    accepted = recall.run(by_name["eval-batch-gtp-divisible.sh"])
    assert accepted.errors == []
