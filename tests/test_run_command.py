"""``trainlint run [options] -- <launch command>``: the gate before launch (issue 5.3).

Every test runs the real command line (``python -m trainlint run ...``) in a temporary directory,
so exit codes, stdout/stderr separation and signals are what a user gets.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PY = sys.executable

MEGATRON_ENTRY = """\
import pathlib
pathlib.Path("marker").write_text("ran")
print("trained")
"""


def trainlint_run(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "trainlint", "run", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def megatron_argv(tp: int, heads: int = 6) -> list[str]:
    return [PY, "pretrain_gpt.py", "--num-layers", "2", "--hidden-size", "96", "--num-attention-heads", str(heads),
            "--tensor-model-parallel-size", str(tp), "--seq-length", "128", "--max-position-embeddings", "128",
            "--micro-batch-size", "1"]


def column_of(argv: list[str], index: int) -> int:
    """1-based column of argv[index] in the words joined by single spaces (the documented convention)."""
    return sum(len(w) + 1 for w in argv[:index]) + 1


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "pretrain_gpt.py").write_text(MEGATRON_ENTRY, encoding="utf-8")
    return tmp_path


# ------------------------------------------------------------------------- passing through


def test_echo_ok_prints_ok(tmp_path):
    result = trainlint_run("--", "echo", "ok", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == "ok\n"
    assert result.stderr == ""  # nothing trainlint reads: nothing to report


def test_exit_code_passes_through(tmp_path):
    result = trainlint_run("--", PY, "-c", "import sys; sys.exit(3)", cwd=tmp_path)
    assert result.returncode == 3


def test_arguments_and_environment_reach_the_command_unchanged(tmp_path):
    script = "import os, sys, json; print(json.dumps([sys.argv[1:], os.environ.get('TRAINLINT_T')]))"
    env = dict(os.environ, TRAINLINT_T="kept")
    result = subprocess.run([PY, "-m", "trainlint", "run", "--", PY, "-c", script, "a b", "$HOME", "*", "--x=1"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [["a b", "$HOME", "*", "--x=1"], "kept"]  # no shell in between


def test_command_not_found_is_127(tmp_path):
    result = trainlint_run("--", "no-such-command-trainlint", cwd=tmp_path)
    assert result.returncode == 127
    assert "no-such-command-trainlint: command not found" in result.stderr


def test_not_executable_is_126(tmp_path):
    (tmp_path / "data.txt").write_text("x", encoding="utf-8")
    result = trainlint_run("--", "./data.txt", cwd=tmp_path)
    assert result.returncode == 126


def test_killed_by_a_signal_reports_128_plus_n(tmp_path):
    result = trainlint_run("--", PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", cwd=tmp_path)
    assert result.returncode == 128 + signal.SIGKILL


def test_no_command_is_a_usage_error(tmp_path):
    result = trainlint_run(cwd=tmp_path)
    assert result.returncode == 2
    assert "no command given" in result.stderr
    assert trainlint_run("--fail-level", "fatal", "--", "echo", cwd=tmp_path).returncode == 2  # argparse


# ------------------------------------------------------------------------------- Megatron argv


def test_megatron_argv_with_heads_not_divisible_by_tp_is_blocked(workdir):
    argv = megatron_argv(tp=4)
    result = trainlint_run("--", *argv, cwd=workdir)
    assert result.returncode == 1
    assert not (workdir / "marker").exists()  # the command did not run
    assert result.stdout == ""
    tp_value = argv.index("--tensor-model-parallel-size") + 1
    assert f"<command line>:1:{column_of(argv, tp_value)}: error TL104 6 attention heads are not divisible by tensor " \
           "parallel size 4" in result.stderr
    # The text the columns count in is printed first.
    assert result.stderr.splitlines()[0] == "<command line>: " + " ".join(argv)
    assert "trainlint: not running the command: 2 findings at error level" in result.stderr


def test_a_clean_megatron_command_runs_and_keeps_stdout_clean(workdir):
    result = trainlint_run("--", *megatron_argv(tp=1), cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert (workdir / "marker").read_text() == "ran"
    assert result.stdout == "trained\n"  # findings (here warnings) go to stderr only
    assert "Found 2 problems (2 warnings)" in result.stderr


def test_dry_run_prints_the_command_and_runs_nothing(workdir):
    argv = megatron_argv(tp=1) + ["--data-path", "0.5 a 0.5 b"]
    result = trainlint_run("--dry-run", "--", *argv, cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == shlex.join(argv) + "\n"
    assert not (workdir / "marker").exists()
    blocked = trainlint_run("--dry-run", "--", *megatron_argv(tp=4), cwd=workdir)
    assert blocked.returncode == 1 and blocked.stdout == ""


def test_srun_prefixed_megatron_gets_the_world_size_from_srun(workdir):
    argv = ["srun", "-N", "2", "--ntasks-per-node", "8", "python", "pretrain_gpt.py", "--num-layers", "2",
            "--hidden-size", "96", "--num-attention-heads", "6", "--tensor-model-parallel-size", "3",
            "--seq-length", "128", "--max-position-embeddings", "128", "--micro-batch-size", "1"]
    result = trainlint_run("--dry-run", "--", *argv, cwd=workdir)
    assert result.returncode == 1
    assert f"<command line>:1:{column_of(argv, 4)}: error TL101 world size 16 is not divisible by TP 3" in result.stderr


def test_elastic_nnodes_range_leaves_the_world_size_unknown(workdir):
    argv = ["torchrun", "--nproc-per-node=4", "--nnodes=1:4", "pretrain_gpt.py", "--num-layers", "2",
            "--hidden-size", "96", "--num-attention-heads", "6", "--tensor-model-parallel-size", "3",
            "--seq-length", "128", "--max-position-embeddings", "128", "--micro-batch-size", "1"]
    result = trainlint_run("--dry-run", "--", *argv, cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "TL101" not in result.stderr


# -------------------------------------------------------------------- DeepSpeed JSON + launcher

DS_BAD = """\
{
  "train_batch_size": 100,
  "train_micro_batch_size_per_gpu": 2,
  "gradient_accumulation_steps": 4,
  "zero_optimization": {"stage": 2}
}
"""


@pytest.mark.parametrize("spelling", [["--deepspeed_config", "ds.json"], ["--deepspeed-config", "ds.json"],
                                      ["--deepspeed_config=ds.json"], ["--deepspeed", "ds.json"]])
def test_deepspeed_launcher_world_size_checks_the_json(tmp_path, spelling):
    (tmp_path / "ds.json").write_text(DS_BAD, encoding="utf-8")
    argv = ["deepspeed", "--num_gpus", "8", "--num_nodes", "2", "train.py", *spelling]
    result = trainlint_run("--format", "json", "--", *argv, cwd=tmp_path)
    assert result.returncode == 1
    report = json.loads(result.stderr.split("\ntrainlint: not running", 1)[0])
    (ds,) = [f for f in report["files"] if f["path"] == "ds.json"]
    (finding,) = [d for d in ds["diagnostics"] if d["code"] == "TL100"]
    assert (finding["line"], finding["column"]) == (2, 23)
    assert "x DP 16 = 128" in finding["message"]
    # The world size is located on the command line, at the launcher's --num_gpus value.
    assert any(r["path"] == "<command line>" and r["column"] == column_of(argv, 2) for r in finding["related"])


def test_deepspeed_json_consistent_with_the_world_size_passes(tmp_path):
    (tmp_path / "ds.json").write_text(DS_BAD.replace("100", "128"), encoding="utf-8")
    argv = ["torchrun", "--nproc_per_node=8", "--nnodes", "2", "train.py", "--deepspeed_config", "ds.json"]
    result = trainlint_run("--dry-run", "--", *argv, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == shlex.join(argv) + "\n"


def test_missing_deepspeed_json_blocks_at_its_word(tmp_path):
    argv = ["deepspeed", "train.py", "--deepspeed_config", "missing.json"]
    result = trainlint_run("--", *argv, cwd=tmp_path)
    assert result.returncode == 1
    assert f"<command line>:1:{column_of(argv, 3)}: error TL013 DeepSpeed config `missing.json` not found" in result.stderr


def test_missing_megatron_deepspeed_json_is_an_error_on_a_command_line(workdir):
    # In a script the file may still be written before the launch line (TL013 is a warning there);
    # a command line about to run needs it now.
    argv = ["deepspeed", "--num_gpus", "2", "pretrain_gpt.py", "--deepspeed", "--deepspeed_config", "nope.json",
            "--num-layers", "2", "--hidden-size", "96", "--num-attention-heads", "6"]
    result = trainlint_run("--dry-run", "--", *argv, cwd=workdir)
    assert result.returncode == 1
    assert f"<command line>:1:{column_of(argv, 6)}: error TL013" in result.stderr


def test_fail_level_warning_blocks_on_a_warning(tmp_path):
    (tmp_path / "ds.json").write_text('{\n  "train_batch_size": 128,\n  "zero_optimisation": {"stage": 1}\n}\n',
                                      encoding="utf-8")
    argv = ["deepspeed", "--num_gpus", "8", "train.py", "--deepspeed_config", "ds.json"]
    assert trainlint_run("--dry-run", "--", *argv, cwd=tmp_path).returncode == 0
    result = trainlint_run("--dry-run", "--fail-level", "warning", "--", *argv, cwd=tmp_path)
    assert result.returncode == 1
    assert "ds.json:3:3: warning TL004" in result.stderr
    assert "--fail-level warning" in result.stderr


def test_selection_options_apply(tmp_path):
    (tmp_path / "ds.json").write_text(DS_BAD, encoding="utf-8")
    argv = ["deepspeed", "--num_gpus", "8", "--num_nodes", "2", "train.py", "--deepspeed_config", "ds.json"]
    result = trainlint_run("--dry-run", "--ignore", "TL100", "--", *argv, cwd=tmp_path)
    assert result.returncode == 0, result.stderr


# ----------------------------------------------------------------------------- NeoX deepy.py

NEOX = """\
{
  "pipe_parallel_size": 2,
  "model_parallel_size": 1,
  "num_layers": 12,
  "hidden_size": 768,
  "num_attention_heads": 12,
  "seq_length": 2048,
  "max_position_embeddings": 2048,
}
"""


def test_neox_deepy_reads_the_yamls_as_one_run(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "model.yml").write_text(NEOX, encoding="utf-8")
    (tmp_path / "configs" / "train.yml").write_text('{\n  "zero_optimization": {"stage": 2},\n}\n', encoding="utf-8")
    # -d prefixes the directory; `model` without a suffix is model.yml, as deepy.py does.
    result = trainlint_run("--", PY, "deepy.py", "train.py", "-d", "configs", "model", "train.yml", cwd=tmp_path)
    assert result.returncode == 1
    assert "configs/train.yml:2:34: error TL110 ZeRO stage 2 with DeepSpeed's pipeline engine" in result.stderr
    missing = trainlint_run("--dry-run", "--", "python", "deepy.py", "train.py", "-d", "configs", "nope", cwd=tmp_path)
    assert missing.returncode == 1
    assert "TL013 GPT-NeoX config `nope` (read as `configs/nope.yml`) not found" in missing.stderr


# ----------------------------------------------------------------------------- launch scripts


def test_bash_launch_script_is_checked_before_it_runs(workdir):
    script = workdir / "train.sh"
    script.write_text("#!/bin/bash\ntouch marker\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
                      "    --num-layers 2 --hidden-size 96 --num-attention-heads 6 \\\n"
                      "    --tensor-model-parallel-size 4 --seq-length 128 --max-position-embeddings 128\n",
                      encoding="utf-8")
    result = trainlint_run("--", "bash", "train.sh", cwd=workdir)
    assert result.returncode == 1
    assert "train.sh:5:34: error TL104" in result.stderr
    assert not (workdir / "marker").exists()


# ------------------------------------------------------------------------------------ signals


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signame, code", [("SIGTERM", 42), ("SIGINT", 43)])
def test_signals_are_forwarded_to_the_command(tmp_path, signame, code):
    child = (f"import signal, sys, time\n"
             f"signal.signal(signal.{signame}, lambda *a: sys.exit({code}))\n"
             f"print('ready', flush=True)\n"
             f"time.sleep(60)\n")
    (tmp_path / "child.py").write_text(child, encoding="utf-8")
    proc = subprocess.Popen([PY, "-m", "trainlint", "run", "--", PY, "child.py"], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(0.1)
        proc.send_signal(getattr(signal, signame))  # to trainlint only, not to its process group
        assert proc.wait(timeout=30) == code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


# ----------------------------------------------------------------------- the launch parser


def test_parse_launch_kinds():
    from trainlint.adapters.launch.command_line import launcher_cluster, parse_launch

    cases = {
        "echo ok": ("none", None),
        "python -c pass": ("none", None),
        "torchrun --nproc_per_node 4 --nnodes 2 pretrain_gpt.py --num-layers 2": ("megatron", 8),
        "python -m torch.distributed.launch --nproc-per-node=2 train.py --deepspeed_config a.json": ("deepspeed", 2),
        "python -m torch.distributed.run --nproc_per_node 2 train.py --deepspeed-config a.json": ("deepspeed", 2),
        "deepspeed --include localhost:0,1,2 train.py --deepspeed a.json": ("deepspeed", 3),
        "deepspeed train.py --deepspeed_config a.json": ("deepspeed", None),  # every local GPU: unknown
        "env NCCL_DEBUG=INFO deepspeed --num_gpus 4 train.py --deepspeed_config a.json": ("deepspeed", 4),
        "python train.py --deepspeed_config a.json": ("deepspeed", 1),
        "./deepy.py train.py configs/125M.yml": ("neox", None),
    }
    for command, (kind, world) in cases.items():
        launch = parse_launch(shlex.split(command))
        assert launch.kind == kind, command
        if kind == "deepspeed":
            cluster = launcher_cluster(launch)
            assert (cluster.world_size.value if cluster.world_size else None) == world, command
        if kind == "megatron":
            assert launcher_cluster(launch).world_size.value == world
