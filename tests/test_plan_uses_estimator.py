"""issue 31 Deliver 3: one static-memory formula, and ``trainlint plan`` sizing a run with the same
estimator as ``trainlint estimate`` (6PD arithmetic only where no layout is given, and said so)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import estimate_run

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _plan_json(capsys, *args: str) -> dict:
    from trainlint.cli import main

    code = main(["plan", "--isolated", *args, "--format", "json"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return json.loads(out)


@pytest.mark.parametrize("script, extra", [
    ("megatron_gpt_8b.sh", ("--model", "llama3-8b")),
    ("megatron_llama2_70b_oom.sh", ()),
])
def test_a_plan_and_an_estimate_of_one_run_agree(capsys, script: str, extra: tuple[str, ...]) -> None:
    from trainlint.cli import main

    path = str(EXAMPLES / script)
    common = ["--gpu", "h100-sxm", "--tokens", "1T", "--price-per-gpu-hour", "2.5", *extra]
    main(["estimate", "--isolated", *common, "--format", "json", path])
    est = estimate_run(capsys.readouterr().out)
    plan = _plan_json(capsys, path, *common)
    run = est["run"]
    assert plan["gpus"] == est["world_size"] == run["gpus"]
    assert plan["days"] * 86400 == pytest.approx(run["time_s"], rel=1e-9)
    assert plan["gpu_hours"] == pytest.approx(run["gpu_hours"], rel=1e-9)
    assert plan["budget"] == pytest.approx(run["cost"], rel=1e-9)
    assert plan["tokens_per_s"] == pytest.approx(est["tokens_per_s"], rel=1e-9)
    assert plan["mfu"] == pytest.approx(est["mfu"], rel=1e-9)
    assert plan["memory_gib"] == pytest.approx(est["memory_gib"]["total"], rel=1e-9)
    assert plan["fits"] == est["fits"]
    assert plan["infeasible"] == (not est["fits"])
    assert plan["basis"].startswith("the estimator")


def test_plan_checks_the_days_against_the_estimated_time(capsys) -> None:
    path = str(EXAMPLES / "megatron_gpt_8b.sh")
    plan = _plan_json(capsys, path, "--model", "llama3-8b", "--gpu", "h100-sxm", "--tokens", "1T", "--days", "0.001")
    assert plan["over_days"] and plan["infeasible"]
    assert plan["days"] > 0.001


def test_plan_without_a_layout_says_it_is_6pd(capsys) -> None:
    from trainlint.cli import main

    plan = _plan_json(capsys, "--params", "7B", "--mfu", "0.4", "--days", "30")
    assert plan["basis"].startswith("6PD arithmetic: no layout given")
    assert main(["plan", "--isolated", "--params", "7B", "--mfu", "0.4", "--days", "30"]) == 0
    assert "basis           6PD arithmetic: no layout given" in capsys.readouterr().out


def test_plan_refuses_an_mfu_for_a_layout(capsys) -> None:
    from trainlint.cli import main

    code = main(["plan", "--isolated", str(EXAMPLES / "megatron_gpt_8b.sh"), "--model", "llama3-8b", "--mfu", "0.4",
                 "--days", "3"])
    assert code == 2
    assert "--mfu is what the estimator computes" in capsys.readouterr().err


def test_one_static_memory_formula() -> None:
    """The planning floor, the estimator and the layout search's floor count bytes per parameter
    with the same function: a change to it moves all three."""
    from trainlint.estimator import memory as M
    from trainlint.planning.sizing import min_gpus_for_static_memory, static_bytes_per_param

    assert static_bytes_per_param() == sum(M.model_state_bytes(1.0, dtype="bf16", grad_bytes=2.0, optimizer="adam"))
    assert static_bytes_per_param() == 16.0  # seed 000's 2 + 2 + 12, from the estimator's formula
    assert min_gpus_for_static_memory(70e9, 80e9) == 14  # seed 000: "70B requires >= 14 H100s"
    original = M._optimizer_state_bytes
    try:
        M._optimizer_state_bytes = lambda name: 2.0  # an 8-bit optimizer everywhere
        assert static_bytes_per_param() == 2 + 2 + 2 + 4
    finally:
        M._optimizer_state_bytes = original


def test_static_floor_is_one_stage_without_activations() -> None:
    from trainlint.estimator import memory as M
    from trainlint.estimator.core import estimate_inputs
    from test_estimator import make_inputs

    i = make_inputs(framework="deepspeed", zero=1, pp=2, dp=4)  # ZeRO buckets: buffers with fragmentation
    worst = max(M.stage_memory(i), key=lambda s: s.total)
    floor = M.static_floor(i)
    assert floor <= worst.total
    expected = worst.params + worst.grads + worst.optimizer + worst.buffers - worst.detail.get("step_grad_copy", 0.0)
    expected += M.fragmentation_bytes(0.0, worst.buffers - worst.detail.get("step_grad_copy", 0.0))
    expected += M.fixed_overhead_bytes(i)
    assert floor == pytest.approx(expected, rel=1e-12)
    assert estimate_inputs(i).ok
