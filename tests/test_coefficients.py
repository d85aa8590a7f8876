"""The estimator's global coefficients stay inside their documented physical ranges, and the
accuracy benchmark's fit cannot move them out."""

from __future__ import annotations

import pytest

from trainlint.estimator import coefficients as C

from conftest import calibration_rows


@pytest.mark.parametrize("name", sorted(C.RANGES))
def test_every_coefficient_is_inside_its_physical_range(name: str) -> None:
    bounds = C.RANGES[name]
    assert bounds.low < bounds.high and bounds.why
    assert bounds.kind in ("throughput", "memory")
    assert bounds.low <= getattr(C, name) <= bounds.high, (name, getattr(C, name), bounds)


def test_fp8_speedup_range_is_one_to_two() -> None:
    assert (C.RANGES["FP8_GEMM_SPEEDUP"].low, C.RANGES["FP8_GEMM_SPEEDUP"].high) == (1.0, 2.0)


def test_fit_keeps_every_coefficient_in_range(accuracy, tmp_path) -> None:
    """Start every fitted coefficient at a bound (where the search's steps would overshoot) and fit on a
    few calibration rows read through the user's path: no value leaves its range."""
    rows = calibration_rows()
    if not rows:
        pytest.skip("calibration data absent (../shared)")
    loaded, _, _ = accuracy.load_cases(rows[:40], tmp_path, check_cli=False)
    assert loaded
    with accuracy.coefficients_restored():
        for n, (name, bounds) in enumerate(C.FITTED.items()):
            setattr(C, name, bounds.high if n % 2 else bounds.low)
        fitted = accuracy.fit(loaded, passes=1)
        for name, value in fitted.items():
            assert C.FITTED[name].low <= value <= C.FITTED[name].high, (name, value)
    assert all(getattr(C, name) == value for name, value in accuracy.shipped_coefficients().items())
