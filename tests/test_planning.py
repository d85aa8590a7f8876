"""Planning arithmetic reproduces the worked numbers of seeds 000 and 001.

Seed 000 (H100 bf16 dense peak from the catalog, 989.5 TFLOP/s; the seed rounds to 'about 1000'):
- 30B model, 30 days, USD 2M at USD 4 per GPU-hour: 694 GPUs by budget, practical value 640;
  600B tokens -> 6.6 % MFU, 2T -> 22 %, 2T on 512 GPUs -> ~28 % (table; tolerance 0.5 point,
  the seed's percentages are rounded).
- 70B, batch 1M tokens, 128 H100, 45 % MFU: time per step 6*70e9*1e6 / (128 * peak * 0.45) ~ 7.4 s,
  2T tokens ~ 170 days (tolerance 3 %, the seed's peak is rounded).
"""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

import pytest

from trainlint.presets.catalog import find_gpu
from trainlint.planning import PlanError, cost, gpu_hours, parse_count, solve, train_time_s, training_flops
from conftest import estimate_run

PEAK = find_gpu("h100-sxm").peak_tflops("bf16") * 1e12


def test_parse_count() -> None:
    assert parse_count("30B") == 30e9
    assert parse_count("2T") == 2e12
    assert parse_count("600e9") == 600e9


def test_c_equals_6pd_and_gpu_hours() -> None:
    c = training_flops(30e9, 600e9)
    assert c == pytest.approx(1.08e23)
    t = train_time_s(c, 640, PEAK, 0.066)
    assert gpu_hours(t, 640) == pytest.approx(640 * t / 3600)
    assert cost(t, 640, 4.0) == pytest.approx(gpu_hours(t, 640) * 4.0)
    assert training_flops(1, 1, hardware_factor=4 / 3) == pytest.approx(8.0)


@pytest.mark.parametrize("tokens,gpus,seed_mfu,tol", [("600B", None, 6.6, 0.1), ("2T", None, 22.0, 0.5),
                                                    ("2T", 512, 28.0, 1.0)])  # seed prints "~28%"
def test_seed000_budget_table(tokens: str, gpus: int | None, seed_mfu: float, tol: float) -> None:
    plan = solve(params=30e9, tokens=parse_count(tokens), peak_flops_per_gpu=PEAK, gpus=gpus, days=30,
                 budget=2e6, price_per_gpu_hour=4.0, gpu_multiple=128)
    assert plan.gpus_from_budget == pytest.approx(694.4, abs=0.1)
    assert plan.gpus == (gpus or 640)
    assert plan.mfu * 100 == pytest.approx(seed_mfu, abs=tol)
    assert plan.budget <= 2e6


def test_seed000_70b_step_and_training_time() -> None:
    step = train_time_s(training_flops(70e9, 1e6), 128, PEAK, 0.45)
    assert step == pytest.approx(7.4, rel=0.03)
    plan = solve(params=70e9, tokens=2e12, peak_flops_per_gpu=PEAK, gpus=128, mfu=0.45)
    assert plan.days == pytest.approx(170, rel=0.03)
    assert plan.days * 86400 == pytest.approx(2e12 / (1e6 / step))


def test_days_and_mfu_solve_gpus() -> None:
    plan = solve(params=30e9, tokens=2e12, peak_flops_per_gpu=PEAK, days=30, mfu=0.45, gpu_multiple=8)
    assert plan.gpus % 8 == 0
    assert plan.days <= 30
    assert plan.budget is None


def test_errors() -> None:
    with pytest.raises(PlanError):
        solve(params=1e9, tokens=1e9, peak_flops_per_gpu=PEAK, days=1)
    with pytest.raises(PlanError):
        solve(params=1e9, tokens=1e9, peak_flops_per_gpu=PEAK, days=1, budget=10)  # no price


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainlint", *args], capture_output=True, text=True)


def test_plan_cli_seed_table() -> None:
    r = _cli("plan", "--params", "30B", "--tokens", "600B", "--days", "30", "--budget", "2000000",
             "--price-per-gpu-hour", "4", "--round-gpus", "128")
    assert r.returncode == 0, r.stderr
    assert "694.4 -> 640" in r.stdout and "6.6%" in r.stdout
    r = _cli("plan", "--params", "30B", "--tokens", "2T", "--days", "30", "--gpus", "640", "--mfu", "0.22",
             "--price-per-gpu-hour", "4", "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["days"] == pytest.approx(30, rel=0.01)


def test_plan_cli_error_no_traceback() -> None:
    r = _cli("plan", "--params", "30B", "--tokens", "2T", "--days", "30")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_estimate_run_figures_follow_from_the_estimate(capsys):
    from trainlint.cli import main

    script = str(Path(__file__).resolve().parents[1] / "examples" / "megatron_gpt_8b.sh")
    main(["estimate", "--isolated", "--model", "llama3-8b", "--tokens", "1T", "--price-per-gpu-hour", "2.5",
          "--format", "json", script])
    entry = estimate_run(capsys.readouterr().out)
    run = entry["run"]
    assert run["tokens"] == 1e12
    seconds = 1e12 / entry["tokens_per_s"]
    assert run["time_s"] == pytest.approx(seconds, rel=1e-9)
    assert run["gpu_hours"] == pytest.approx(seconds / 3600 * entry["world_size"], rel=1e-9)
    assert run["cost"] == pytest.approx(run["gpu_hours"] * 2.5, rel=1e-9)


def test_compare_gpus_sorted_by_cost_with_prices_and_by_time_without(capsys, tmp_path):
    from trainlint.cli import main

    script = str(Path(__file__).resolve().parents[1] / "examples" / "megatron_gpt_8b.sh")
    config = tmp_path / "trainlint.toml"
    config.write_text("[prices]\nh100-sxm = 2.5\na100-80gb = 1.2\nb200 = 6.0\n")
    main(["estimate", "--config", str(config), "--model", "llama3-8b", "--tokens", "1T", "--compare-gpus", "all",
          "--format", "json", script])
    rows = estimate_run(capsys.readouterr().out)["compare_gpus"]
    priced = [r for r in rows if r["cost"] is not None]
    assert {r["gpu"] for r in priced} == {"h100-sxm", "a100-80gb", "b200"}
    assert [r["cost"] for r in priced] == sorted(r["cost"] for r in priced)
    assert rows[:len(priced)] == priced  # priced rows first, then the rest by time
    unpriced = rows[len(priced):]
    # those that fit first (compare.py's order), each group by time: a slow GPU that fits (h20) comes
    # before a faster one that does not (a100-40gb)
    key = [(not r["fits"], r["days"]) for r in unpriced]
    assert key == sorted(key)
    for r in rows:  # the same token count everywhere: days x tokens/s is constant
        assert r["days"] * 86400 * r["tokens_per_s"] == pytest.approx(1e12, rel=1e-6)


def test_seed_002_cost_per_memory_bandwidth_ranking(capsys, tmp_path):
    """Seed 002's example catalog: H100-SXM 3.35 TB/s at $3.93, H200 4.80 TB/s at $4.33, L4 0.30 TB/s
    at $1.15 per GPU-hour -> $/TB/s.h 1.17, 0.90, 3.83: H200 < H100 < L4."""
    from trainlint.cli import main

    script = str(Path(__file__).resolve().parents[1] / "examples" / "megatron_gpt_8b.sh")
    config = tmp_path / "trainlint.toml"
    config.write_text("[prices]\nh100-sxm = 3.93\nh200 = 4.33\nl4 = 1.15\n")
    main(["estimate", "--config", str(config), "--model", "llama3-8b", "--tokens", "1T",
          "--compare-gpus", "h100-sxm,h200,l4", "--format", "json", script])
    rows = {r["gpu"]: r for r in estimate_run(capsys.readouterr().out)["compare_gpus"]}
    per_bandwidth = {gpu: round(rows[gpu]["usd_per_tbps_hour"], 2) for gpu in rows}
    assert per_bandwidth == {"h100-sxm": 1.17, "h200": 0.90, "l4": 3.83}
    assert sorted(per_bandwidth, key=per_bandwidth.get) == ["h200", "h100-sxm", "l4"]
