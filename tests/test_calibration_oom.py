"""TL201 over the published runs (../shared/calibration): every run that completed gets no
TL201 error and every run that ran out of memory gets one. Each row goes through the user's path
of the accuracy benchmark (benchmarks/accuracy.py: written as the files its users write, read by
the adapters, estimated as `trainlint estimate` does)."""

from __future__ import annotations

import pytest

from trainlint.core.diagnostics import Severity
from trainlint.estimator import estimate
from trainlint.rules import RuleContext
from trainlint.rules.estimation.oom_risk import OomRisk

from conftest import CALIBRATION, SHARED_ABSENT, calibration_rows

@pytest.mark.slow
def test_completed_runs_fit_and_oom_runs_do_not(accuracy):
    # Every calibration file, every row that states a memory measurement (a completed run's peak, or
    # that it ran out of memory): completed runs get no TL201 error, OOM runs get one.
    rows = [row for row in calibration_rows(every=True) if row["kind"] == "peak_memory_gb"]
    if not rows:
        pytest.skip(f"calibration data not found at {CALIBRATION} ({SHARED_ABSENT})")
    completed_flagged, oom_missed, checked_oom, checked = [], [], 0, 0
    for row in rows:
        try:
            spec, ctx, _ = accuracy.row_to_spec(row)
        except accuracy.Skip:
            continue
        est = estimate(spec, ctx)
        if not est.ok:
            continue
        checked += 1
        findings = list(OomRisk().check(spec, RuleContext(options={"headroom": 0.9}, estimate=est)))
        error = any(f.severity is Severity.ERROR for f in findings)
        if row["measured"].get("oom"):
            checked_oom += 1
            if not error:
                oom_missed.append(row["id"])
        elif error:
            completed_flagged.append(row["id"])
    assert checked >= 75 and checked_oom >= 3
    assert completed_flagged == [], completed_flagged
    assert oom_missed == [], oom_missed
