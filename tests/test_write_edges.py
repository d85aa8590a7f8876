"""The edges of writing back (``check --fix``, ``--diff``, ``--write-baseline``): a write that does
not happen says why and exits 2; a symlink out of the checkout is not followed; a read-only file
is not replaced; a file that is not a baseline is not overwritten by one; a ``--diff`` of a CRLF,
BOM or no-final-newline file is one ``git apply`` and ``patch`` accept, and applying it gives the
bytes ``--fix`` writes."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from trainlint.files import safe_write
from trainlint.cli import main

CONFIG = (b'{\n  "train_batch_size": 8,\n  "train_micro_batch_size_per_gpu": 1,\n'
          b'  "zero_optimisation": {"stage": 1}\n}\n')
FIXED = CONFIG.replace(b"zero_optimisation", b"zero_optimization")
FIX = ("check", "--isolated", "--ignore", "TL900", "--fix")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".trainlint-"))


# ------------------------------------------------------------------ a write that fails says why


def _full_disk(monkeypatch, path: Path) -> None:
    monkeypatch.setattr(safe_write.os, "write",
                        lambda fd, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))


def _read_only_directory(monkeypatch, path: Path) -> None:
    # chmod 0555 does not stop root (the suite may run as root): the file system says it instead
    monkeypatch.setattr(safe_write.tempfile, "mkstemp",
                        lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EROFS, os.strerror(errno.EROFS))))


def _edited_while_writing(monkeypatch, path: Path) -> None:
    real = safe_write._write_temp

    def write_then_edit(*args, **kwargs):
        temp = real(*args, **kwargs)
        path.write_bytes(CONFIG + b"\n")  # an editor saves the file between the check and the replace
        return temp

    monkeypatch.setattr(safe_write, "_write_temp", write_then_edit)


@pytest.mark.parametrize("failure, reason", [
    (_full_disk, os.strerror(errno.ENOSPC)),
    (_read_only_directory, os.strerror(errno.EROFS)),
    (_edited_while_writing, "changed since trainlint read it"),
])
def test_a_fix_that_cannot_be_written_says_why_and_exits_2(tmp_path, capsys, monkeypatch, failure, reason):
    config = tmp_path / "ds_config.json"
    config.write_bytes(CONFIG)
    failure(monkeypatch, config)
    code, out, err = run(capsys, *FIX, str(config))
    assert code == 2
    (line,) = [line for line in err.splitlines() if line.startswith("trainlint: error:")]
    assert str(config) in line and reason in line, err
    assert "Fixed 0 findings in 0 files." in err and "TL004" in out
    assert config.read_bytes() in (CONFIG, CONFIG + b"\n") and leftovers(tmp_path) == []


# ------------------------------------------------------------------------------- symlinks


def test_a_symlink_out_of_the_checkout_is_not_followed(tmp_path, capsys, monkeypatch):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    (repo / ".git").mkdir(parents=True)
    (repo / "configs").mkdir()
    elsewhere.mkdir()
    (elsewhere / "ds.json").write_bytes(CONFIG)
    (repo / "shared.json").symlink_to(elsewhere / "ds.json")
    # a symlink inside the checkout is followed as before
    (repo / "configs" / "real.json").write_bytes(CONFIG)
    (repo / "inside.json").symlink_to(Path("configs") / "real.json")
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, *FIX, ".")
    assert (elsewhere / "ds.json").read_bytes() == CONFIG
    # the walk does not follow a link out of the checkout (issue 29, S5): the file behind it is
    # neither read nor written; the write itself refuses it too (the named cases below)
    assert code == 0 and str(elsewhere / "ds.json") not in out, err
    assert (repo / "configs" / "real.json").read_bytes() == FIXED and (repo / "inside.json").is_symlink()
    assert (repo / "shared.json").is_symlink() and leftovers(elsewhere) == []
    # --diff shows what --fix writes: not the file behind the link, which it names as refused
    (repo / "configs" / "real.json").write_bytes(CONFIG)
    code, out, err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--diff", ".")
    assert "+++ b/configs/real.json" in out and "shared.json" not in out  # the file git apply patches


def test_a_symlinked_directory_out_of_the_checkout_is_not_followed(tmp_path, capsys, monkeypatch):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    (repo / ".git").mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "ds.json").write_bytes(CONFIG)
    (repo / "vendored").symlink_to(elsewhere, target_is_directory=True)
    monkeypatch.chdir(repo)
    code, _, err = run(capsys, *FIX, "vendored/ds.json")
    assert code == 2 and "outside the checkout" in err
    assert (elsewhere / "ds.json").read_bytes() == CONFIG


MEGATRON = ("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
            "    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 1 \\\n"
            "    --num-layers 40 --hidden-size 5120 --num-attention-heads 40 --seq-length 2048 \\\n"
            "    --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 \\\n"
            "    --bf16 --use-flash-attn\n")
ARGS = ["--isolated", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--nodes", "1"]


def test_suggest_write_to_and_baseline_do_not_follow_a_symlink_out_of_the_checkout(tmp_path, capsys, monkeypatch):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    (repo / ".git").mkdir(parents=True)
    elsewhere.mkdir()
    (repo / "run.sh").write_text(MEGATRON)
    (elsewhere / "run.sh").write_text(MEGATRON)
    (repo / "linked.sh").symlink_to(elsewhere / "run.sh")
    (repo / "ds_config.json").write_bytes(CONFIG)
    (elsewhere / "baseline.json").write_text('{"tool": "trainlint", "version": 1, "findings": []}\n')
    (repo / "baseline.json").symlink_to(elsewhere / "baseline.json")
    monkeypatch.chdir(repo)
    code, _, err = run(capsys, "suggest", "run.sh", *ARGS, "--write-to", "linked.sh")
    assert code == 2 and "outside the checkout" in err, err
    assert (elsewhere / "run.sh").read_text() == MEGATRON
    code, _, err = run(capsys, "check", "--isolated", "--write-baseline", "baseline.json", "ds_config.json")
    assert code == 2 and "outside the checkout" in err, err
    assert (elsewhere / "baseline.json").read_text() == '{"tool": "trainlint", "version": 1, "findings": []}\n'


# ------------------------------------------------------------------------ modes and read-only


def test_a_read_only_file_is_refused_not_replaced(tmp_path, capsys):
    config = tmp_path / "ds_config.json"
    config.write_bytes(CONFIG)
    config.chmod(0o444)
    inode = config.stat().st_ino
    code, out, err = run(capsys, *FIX, str(config))
    assert code == 2 and "read-only (mode 0444)" in err and str(config) in err, err
    assert config.read_bytes() == CONFIG and config.stat().st_ino == inode
    assert stat.S_IMODE(config.stat().st_mode) == 0o444 and leftovers(tmp_path) == []
    # --diff still shows the change (a CI job may check a read-only checkout)
    code, out, err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--diff", str(config))
    assert code == 1 and '+  "zero_optimization": {"stage": 1}' in out.splitlines() and "error" not in err


@pytest.mark.parametrize("mode", [0o600, 0o664, 0o755])
def test_a_fixed_file_keeps_its_mode(tmp_path, capsys, mode):
    config = tmp_path / "ds_config.json"
    config.write_bytes(CONFIG)
    config.chmod(mode)
    code, _, err = run(capsys, *FIX, str(config))
    assert code == 0 and config.read_bytes() == FIXED, err
    assert stat.S_IMODE(config.stat().st_mode) == mode


# ---------------------------------------------------------------------------------- baseline


def test_write_baseline_refuses_a_file_that_is_not_a_baseline(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("ds_config.json").write_bytes(CONFIG)
    pyproject = b'[project]\nname = "x"\n\n[tool.trainlint]\nselect = ["ALL"]\n'
    Path("pyproject.toml").write_bytes(pyproject)
    code, _, err = run(capsys, "check", "--isolated", "--write-baseline", "pyproject.toml", "ds_config.json")
    assert code == 2 and "not a trainlint baseline" in err and "pyproject.toml" in err, err
    assert Path("pyproject.toml").read_bytes() == pyproject
    Path("other.json").write_bytes(b'{"findings": [], "tool": "ruff"}\n')
    code, _, err = run(capsys, "check", "--isolated", "--write-baseline", "other.json", "ds_config.json")
    assert code == 2 and Path("other.json").read_bytes() == b'{"findings": [], "tool": "ruff"}\n'
    # a baseline (and a new file) is written, and written again
    for _ in range(2):
        code, _, err = run(capsys, "check", "--isolated", "--write-baseline", "baseline.json", "ds_config.json")
        assert code == 0 and "Wrote 2 findings to the baseline baseline.json." in err, err


# ---------------------------------------------------------------------------------- --diff

CRLF = CONFIG.replace(b"\n", b"\r\n")
BOM = b"\xef\xbb\xbf" + CONFIG
NO_FINAL_NEWLINE = CONFIG.rstrip(b"\n")
ALL_THREE = b"\xef\xbb\xbf" + CRLF.rstrip(b"\r\n")


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("patch") is None, reason="needs git and patch")
@pytest.mark.parametrize("data", [CRLF, BOM, NO_FINAL_NEWLINE, ALL_THREE], ids=["crlf", "bom", "no-eol", "all"])
@pytest.mark.parametrize("folder", ["", "configs"])  # `check .` names a top-level file ./ds_config.json
def test_diff_applies_with_git_apply_and_patch(tmp_path, capsys, monkeypatch, data, folder):
    repo = tmp_path / "repo"
    (repo / folder).mkdir(parents=True, exist_ok=True)
    git = ["git", "-c", "core.autocrlf=false", "-c", "core.safecrlf=false"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    config = repo / folder / "ds_config.json"
    config.write_bytes(data)
    monkeypatch.chdir(repo)
    code, diff, _ = run(capsys, "check", "--isolated", "--diff", ".")
    assert code == 1 and config.read_bytes() == data
    patch_file = tmp_path / "fix.diff"
    patch_file.write_text(diff, encoding="utf-8", newline="")
    checked = subprocess.run([*git, "apply", "--check", str(patch_file)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr + diff
    dry = subprocess.run(["patch", "-p1", "--dry-run", "-i", str(patch_file)], capture_output=True, text=True)
    assert dry.returncode == 0 and "FAILED" not in dry.stdout and "malformed" not in dry.stdout, dry.stdout + diff
    # applied, it gives exactly what --fix writes
    with tempfile.TemporaryDirectory(dir=tmp_path) as other:
        fixed = Path(other) / "ds_config.json"
        fixed.write_bytes(data)
        run(capsys, *FIX, str(fixed))
        expected = fixed.read_bytes()
    assert expected != data
    subprocess.run([*git, "apply", str(patch_file)], check=True)
    assert config.read_bytes() == expected
