"""`trainlint plan`, the planning parts of `trainlint estimate` and the planning keys of the project config:
behaviour at the edges (bad input is a usage error, never a traceback; impossible plans say so)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.cli import main
from conftest import estimate_run

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GPT8B = str(EXAMPLES / "megatron_gpt_8b.sh")


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainlint", *args], capture_output=True, text=True, cwd=cwd)


def _json(capsys, *argv: str) -> tuple[int, object]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def _estimate(capsys, *argv: str) -> tuple[int, dict]:
    """``trainlint estimate ARGV``'s one run (its JSON is always ``{"runs": [...]}``)."""
    code = main(["estimate", *argv])
    return code, estimate_run(capsys.readouterr().out)


# ------------------------------------------------------------------------------------------ estimate


@pytest.mark.parametrize("flag,value", [("--tokens", "abc"), ("--tokens", "-2T"), ("--tokens", "inf"),
                                        ("--price-per-gpu-hour", "-3"), ("--price-per-gpu-hour", "0")])
def test_estimate_rejects_bad_planning_flags_without_a_traceback(flag, value):
    r = _cli("estimate", "--isolated", "--model", "llama3-8b", flag, value, GPT8B)
    assert r.returncode == 2 and "Traceback" not in r.stderr and flag in r.stderr


@pytest.mark.parametrize("text,tokens", [("2T", 2e12), ("300B", 300e9), ("1.5e12", 1.5e12), ("1,000,000,000", 1e9)])
def test_estimate_tokens_spellings(capsys, text, tokens):
    _code, data = _estimate(capsys, "--isolated", "--model", "llama3-8b", "--tokens", text, "--format", "json", GPT8B)
    assert data["run"]["tokens"] == tokens and data["run"]["tokens_source"] == "--tokens"


def test_estimate_run_length_from_the_config(capsys):
    _code, data = _estimate(capsys, "--isolated", "--format", "json", str(EXAMPLES / "megatron_gpt_2.7b_network_bound.sh"))
    run = data["run"]
    # --train-iters x --global-batch-size x --seq-length, as written in the script
    assert run["tokens"] == pytest.approx(data["tokens_per_s"] * run["time_s"])
    assert run["tokens_source"] == "train iters x global batch x sequence length"
    assert run["steps"] == 100_000  # --train-iters 100000 in the script
    assert run["tokens"] == 100_000 * run["tokens_per_step"]
    assert run["flops_6pd"] == pytest.approx(6 * data["num_params"] * run["tokens"])
    assert run["model_flops"] == pytest.approx(data["model_flops_per_step"] * 100_000)
    assert run["hardware_flops"] >= run["model_flops"]  # recompute included
    assert run["cost"] is None and run["price_source"] == "no price"


def test_price_key_may_be_an_alias_and_is_validated(tmp_path, capsys):
    config = tmp_path / "trainlint.toml"
    config.write_text("[prices]\nh100 = 2.5\n")  # an alias of h100-sxm
    _code, data = _estimate(capsys, "--config", str(config), "--model", "llama3-8b", "--tokens", "1T",
                       "--format", "json", GPT8B)
    assert data["run"]["price_per_gpu_hour"] == 2.5 and data["run"]["price_source"] == "prices.h100 in the project config"
    for bad, said in (('max-days = "thirty"', "`max-days` must be a positive number"),
                      ("max-cost = -1", "`max-cost` must be a positive number"),
                      ("prices = 3", "`prices` must be a table"),
                      ("[prices]\nh1000 = 2.5", "`prices.h1000`: no GPU 'h1000'"),
                      ("[prices]\nh100-sxm = \"cheap\"", "`prices.h100-sxm` must be a positive number")):
        config.write_text(bad + "\n")
        r = _cli("check", "--config", str(config), GPT8B)
        assert r.returncode == 2 and said in r.stderr, (bad, r.stderr)


def test_same_throughput_sizes_valid_layouts_and_re_estimates(capsys):
    # megatron_gpt_8b.sh: 16 GPUs, TP 2, PP 2, micro batch 1, global batch 128.
    _code, data = _estimate(capsys, "--isolated", "--model", "llama3-8b", "--tokens", "1T", "--format", "json",
                       "--compare-gpus", "h100-sxm,a100-80gb,h200,l4", "--same-throughput", GPT8B)
    target = data["base_tokens_per_s"]
    rows = {r["gpu"]: r for r in data["compare_gpus"]}
    assert rows["h100-sxm"]["gpus"] == data["base_world_size"] == 16  # the config's own GPU kind: its own size
    for r in rows.values():
        dp = r["gpus"] // 4
        assert r["gpus"] % 8 == 0 and r["gpus"] % 4 == 0 and 128 % dp == 0, r  # whole nodes, DP integer, batch kept
        if "the smallest valid size" in r["sizing"]:
            assert r["tokens_per_s"] >= target * (1 - 1e-9)
    assert rows["a100-80gb"]["gpus"] > 16  # a slower GPU needs more of them
    assert "DP" in rows["a100-80gb"]["sizing"] and "accumulation" in rows["a100-80gb"]["sizing"]


def test_same_throughput_says_when_the_batch_cannot_grow(capsys):
    # 256 GPUs at micro batch 1 already use the whole global batch 256: DP cannot grow.
    main(["estimate", "--isolated", "--compare-gpus", "a100-80gb", "--same-throughput",
          str(EXAMPLES / "megatron_gpt_2.7b_network_bound.sh")])
    out = capsys.readouterr().out
    assert "at most 256 GPUs (DP <= global batch 256 / micro batch 1)" in out


def test_compare_without_a_run_length_says_so(capsys, tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 \\\n"
                      "    --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 \\\n"
                      "    --micro-batch-size 1 --global-batch-size 64 --tensor-model-parallel-size 8 --bf16\n")
    main(["estimate", "--isolated", "--model", "llama2-7b", "--compare-gpus", "h100-sxm", str(script)])
    out = capsys.readouterr().out
    assert "no run length in the config (give --tokens or --train-samples): no time or cost to train" in out


# ---------------------------------------------------------------------------------------------- plan


def test_plan_impossible_mfu_exits_1_and_says_why(capsys):
    code, plan = _json(capsys, "plan", "--isolated", "--format", "json", "--params", "70B", "--tokens", "15T",
                       "--days", "10", "--budget", "1M", "--price-per-gpu-hour", "4")
    assert code == 1 and plan["mfu"] > 1 and plan["infeasible"]
    assert any(n.startswith("impossible") for n in plan["notes"])


def test_plan_optimistic_mfu_is_noted_but_not_failed(capsys):
    code, plan = _json(capsys, "plan", "--isolated", "--format", "json", "--params", "30B", "--tokens", "2T",
                       "--days", "30", "--gpus", "256")
    assert code == 0 and 0.5 < plan["mfu"] <= 1 and any(n.startswith("optimistic") for n in plan["notes"])


def test_plan_given_gpus_over_budget_and_over_time(capsys):
    code, plan = _json(capsys, "plan", "--isolated", "--format", "json", "--params", "30B", "--tokens", "2T",
                       "--days", "30", "--budget", "2M", "--price-per-gpu-hour", "4", "--gpus", "1024")
    assert code == 1 and plan["over_budget"]
    code, plan = _json(capsys, "plan", "--isolated", "--format", "json", "--params", "30B", "--tokens", "2T",
                       "--days", "30", "--mfu", "0.4", "--gpus", "128")
    assert code == 1 and plan["over_days"] and plan["days_limit"] == 30 and plan["days"] > 30


def test_plan_dims_use_seed000_parameter_formula(capsys):
    _code, plan = _json(capsys, "plan", "--isolated", "--format", "json", "--layers", "80", "--hidden", "8192",
                       "--vocab", "32000", "--gpus", "128", "--mfu", "0.45", "--tokens", "2T")
    assert plan["params"] == 12 * 80 * 8192**2 + 2 * 32000 * 8192  # Psi ~ 12 L H^2 + 2 V H


def test_plan_model_preset_moe_uses_active_parameters_for_flops(capsys):
    _code, plan = _json(capsys, "plan", "--isolated", "--format", "json", "--model", "mixtral-8x7b", "--gpus", "64",
                       "--mfu", "0.4")
    assert plan["params"] < plan["total_params"]  # 6 P D with the active parameters; memory with all of them
    assert plan["tokens"] == 20 * plan["params"]


@pytest.mark.parametrize("argv,said", [
    (["--params", "30B", "--tokens", "2T", "--days", "30"], "give two of"),
    (["--params", "30B", "--tokens", "2T", "--days", "30", "--budget", "2M"], "needs a price"),
    (["--params", "thirty", "--days", "30", "--mfu", "0.4"], "--params: not a number"),
    (["--params", "30B", "--days", "30", "--mfu", "0.4", "--gpu", "h1000"], "h1000"),
    (["--params", "30B", "--days", "30", "--mfu", "0.4", "--gpu", "v100-32gb"], "no bf16 peak"),
])
def test_plan_errors_are_usage_errors(argv, said):
    r = _cli("plan", "--isolated", *argv)
    assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_plan_reads_prices_and_custom_gpus_from_the_project_config(tmp_path):
    (tmp_path / ".trainlint.toml").write_text("gpu = \"mine\"\n[gpus.mine]\nmemory_gb = 96\nbf16_tflops = 800\n"
                                              "hbm_bandwidth_tbps = 4.0\n[prices]\nmine = 3.2\n")
    r = _cli("plan", "--params", "7B", "--tokens", "1T", "--gpus", "64", "--mfu", "0.4", "--format", "json", cwd=tmp_path)
    plan = json.loads(r.stdout)
    assert plan["gpu"] == "mine" and plan["price_per_gpu_hour"] == 3.2
    assert plan["usd_per_tbps_hour"] == pytest.approx(0.8)


def test_max_days_and_max_cost_gate_ci_when_raised_to_errors(tmp_path):
    config = tmp_path / "trainlint.toml"
    script = str(EXAMPLES / "megatron_gpt_2.7b_network_bound.sh")  # 0.3 days, 1,645 GPU-hours on H100
    config.write_text("max-days = 0.2\nmax-cost = 3000\nprices = { h100-sxm = 2.5 }\n")
    r = _cli("check", "--config", str(config), "--select", "TL503,TL504", script)
    assert r.returncode == 0 and "TL503" in r.stdout and "TL504" in r.stdout  # warnings: reported, not failing
    config.write_text(config.read_text() + 'severity = { TL503 = "error", TL504 = "error" }\n')
    r = _cli("check", "--config", str(config), "--select", "TL503,TL504", script)
    assert r.returncode == 1 and "2 errors" in r.stdout
    config.write_text("max-days = 2\nmax-cost = 20000\nprices = { h100-sxm = 2.5 }\n")
    r = _cli("check", "--config", str(config), "--select", "TL503,TL504", script)
    assert r.returncode == 0 and "TL50" not in r.stdout  # within both limits
