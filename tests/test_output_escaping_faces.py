"""Output that a config cannot forge, in every face (issue 20): `estimate`, `suggest`, `plan`, `run`
and `explain` print file names, GPU names from a project catalog, price and token sources as text;
each goes through `escape.printable`, so a forged workflow command, a terminal escape or a
bidi override in one of them reaches stdout (and stderr) only as a visible escape."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainlint.core.escape import printable

FORGED = "\n::error file=README.md,line=1::forged\r\nREADME.md:1:1: TL000 fake\x1b[2J\x1b]0;t\x07\x9b\u202e\u2066\u2028"
MEGATRON = """\
#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 1 \\
    --num-layers 40 --hidden-size 5120 --num-attention-heads 40 --seq-length 2048 \\
    --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 \\
    --bf16 --use-flash-attn
"""
def raw_controls(text: str) -> list[str]:
    """The characters `printable` would escape that are in ``text`` raw, but the line breaks."""
    return sorted({hex(ord(ch)) for ch in text if ch != "\n" and printable(ch) != ch})


@pytest.fixture()
def tree(tmp_path):
    d = tmp_path / ("run" + FORGED)
    d.mkdir()
    script = d / ("pretrain" + FORGED + ".sh")
    script.write_text(MEGATRON)
    config = tmp_path / "trainlint.toml"
    gpu_id = FORGED.replace(",", " ") + "evil"  # --compare-gpus takes a comma-separated list
    config.write_text(f'[gpus."{json.dumps(gpu_id)[1:-1]}"]\nmemory_gb = 80\nbf16_tflops = 900\n'
                      'hbm_bandwidth_tbps = 3.35\n'
                      f'[prices]\n"{json.dumps(gpu_id)[1:-1]}" = 2.5\n')
    return script, config, gpu_id


def face(*argv: str, cwd=None) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "trainlint", *argv], capture_output=True, cwd=cwd, timeout=300)
    out = proc.stdout.decode("utf-8", "surrogateescape")
    err = proc.stderr.decode("utf-8", "surrogateescape")
    return proc.returncode, out, err


COMMON = ["--model", "gpt3-13b", "--nodes", "1"]


@pytest.mark.parametrize("argv", [
    ["estimate", "--isolated", *COMMON, "--gpu", "a100-80gb", "{script}"],
    ["estimate", "--config", "{config}", *COMMON, "--gpu", "{gpu}", "--tokens", "1T", "{script}"],
    ["estimate", "--config", "{config}", *COMMON, "--gpu", "a100-80gb", "--tokens", "1T",
     "--compare-gpus", "{gpu},a100-80gb", "{script}"],
    ["suggest", "--config", "{config}", *COMMON, "--gpu", "{gpu}", "--top", "2", "{script}"],
    ["plan", "--config", "{config}", "--params", "7B", "--gpu", "{gpu}", "--days", "30", "--mfu", "0.4"],
    ["plan", "--config", "{config}", "--params", "7B", "--compare-gpus", "{gpu},a100-80gb", "--days", "30", "--mfu", "0.4"],
    ["run", "--isolated", "--dry-run", "--", "bash", "{script}"],
    ["run", "--isolated", "--dry-run", "--gpu", "h100-sxm", "--", "bash", "{script}"],
    ["explain", "TL301"],
    ["rules"],
], ids=lambda a: "-".join(w for w in a if not w.startswith("{"))[:60])
def test_no_raw_control_character_in_any_face(tree, argv):
    script, config, gpu_id = tree
    argv = [w.format(script=script, config=config, gpu=gpu_id) for w in argv]
    code, out, err = face(*argv, cwd=script.parent.parent)
    assert "Traceback" not in err, err[-2000:]
    assert code in (0, 1), (code, err[-2000:])
    assert out.strip(), err[-2000:]
    assert not raw_controls(out), raw_controls(out)
    assert not raw_controls(err), raw_controls(err)
    # a forged workflow command or finding never starts a line of its own
    for line in (out + err).splitlines():
        assert not line.startswith("::error") and not line.startswith("README.md:1:1"), line
    if argv[0] not in ("explain", "rules"):  # (their text comes from rule docs, not from the tree)
        # the hostile text is there, shown escaped (not dropped)
        assert "\\e[2J" in out + err and "\\u202e" in out + err


def test_dry_run_prints_a_command_that_means_the_same_words(tree):
    script, _, _ = tree
    code, out, _ = face("run", "--isolated", "--dry-run", "--", "bash", str(script), "a'b\\c")
    assert code == 0 and len(out.splitlines()) == 1
    # bash reads the $'...' words back to exactly the argv given
    words = subprocess.run(["bash", "-c", 'for w in ' + out.strip() + '; do printf "%s\\0" "$w"; done'],
                           capture_output=True, check=True).stdout.split(b"\0")[:-1]
    assert [w.decode("utf-8", "surrogateescape") for w in words] == ["bash", str(script), "a'b\\c"]
