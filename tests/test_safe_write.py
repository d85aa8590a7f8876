"""``trainlint.files.safe_write``: a rewritten file is never lost.

The failures are simulated: a full disk (``os.write`` raising ENOSPC part-way), a kill between the
write and the replace (a child process that SIGKILLs itself inside ``os.replace``), a concurrent
edit (the file changed after it was read), a read-only directory. After each, the file has its old
bytes exactly and no temporary file is left (except after a kill, where the temporary file is
left next to the untouched original).
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.files import safe_write
from trainlint.cli import main
from trainlint.files.safe_write import (WriteBackError, WriteConflict, distinct_targets, render_like, snapshot,
                                  snapshot_target, text_hash, write_back)

SCRIPT = "#!/bin/bash\n" + "".join(f"# line {i} of padding to pass one write buffer\n" for i in range(400)) + \
    "torchrun pretrain_gpt.py --tensor-model-parallel-size 2 \\\n    --bf16 --use-flash-attn\n"


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".trainlint-"))


def test_round_trip_in_place_keeps_mode(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    path.chmod(0o751)
    snap = snapshot(path)
    result = write_back(path, snap.text.replace("size 2", "size 4"), snap.hash)
    assert result.written and result.target == str(path.resolve())
    assert path.read_text() == SCRIPT.replace("size 2", "size 4")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert leftovers(tmp_path) == []


def test_unchanged_text_writes_nothing(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    before = path.stat().st_mtime_ns, path.stat().st_ino
    result = write_back(path, snapshot(path).text, text_hash(SCRIPT))
    assert not result.written and (path.stat().st_mtime_ns, path.stat().st_ino) == before


def test_symlink_stays_a_symlink(tmp_path):
    real = tmp_path / "configs" / "real.json"
    real.parent.mkdir()
    real.write_text('{"a": 1}\n')
    link = tmp_path / "link.json"
    link.symlink_to(real)
    snap = snapshot(link)
    result = write_back(link, '{"a": 2}\n', snap.hash)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == '{"a": 2}\n' and result.target == str(real.resolve())


@pytest.mark.parametrize("raw, new_text, expected", [
    (b"\xef\xbb\xbfa\r\nb\r\n", "a\nB\n", b"\xef\xbb\xbfa\r\nB\r\n"),                     # UTF-8 BOM, CRLF
    (b"a\rb\r", "a\nB\nc\n", b"a\rB\rc\r"),                                                 # old Mac CR
    (b"a\r\nb\nc\r\nd", "a\nb\nC\nd\ne", b"a\r\nb\nC\r\nd\r\ne"),                          # mixed, kept per line
    ("\ufeffx: 1\r\ny: 2\r\n".encode("utf-16-le"), "x: 1\ny: 3\n",
     "\ufeffx: 1\r\ny: 3\r\n".encode("utf-16-le")),                                        # UTF-16 LE with BOM
    ("\ufeffx: 1\n".encode("utf-16-be"), "x: é\n", "\ufeffx: é\n".encode("utf-16-be")),    # UTF-16 BE
    ("\ufeffx: 1\n".encode("utf-32-le"), "x: 2\n", "\ufeffx: 2\n".encode("utf-32-le")),    # UTF-32
])
def test_encoding_bom_and_line_ends_are_kept(tmp_path, raw, new_text, expected):
    path = tmp_path / "f.yml"
    path.write_bytes(raw)
    snap = snapshot(path)
    assert "\r" not in snap.text
    assert render_like(path, new_text, snap.hash) == expected
    write_back(path, new_text, snap.hash)
    assert path.read_bytes() == expected


def test_full_disk_leaves_the_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    snap = snapshot(path)
    real_write = os.write
    calls = []

    def full(fd, data):
        calls.append(len(data))
        if len(calls) == 1:  # the first 8 KiB go, then the disk is full
            return real_write(fd, bytes(data[:8192]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(safe_write.os, "write", full)
    with pytest.raises(WriteBackError, match=r"No space left on device.*unchanged"):
        write_back(path, snap.text.replace("--bf16", "--fp16"), snap.hash)
    assert len(calls) == 2
    assert path.read_text() == SCRIPT and leftovers(tmp_path) == []


def test_failing_fsync_or_replace_leaves_the_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    snap = snapshot(path)
    for name in ("fsync", "replace"):
        with monkeypatch.context() as m:
            m.setattr(safe_write.os, name, lambda *a: (_ for _ in ()).throw(OSError(errno.EIO, "Input/output error")))
            with pytest.raises(WriteBackError, match="Input/output error"):
                write_back(path, snap.text + "# more\n", snap.hash)
        assert path.read_text() == SCRIPT and leftovers(tmp_path) == [], name


def test_kill_between_write_and_replace(tmp_path):
    """A process killed (SIGKILL, no clean-up runs) after the new bytes are written and before
    the rename: the original is intact; the only trace is the complete temporary file."""
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    child = (
        "import os, signal, sys\n"
        "from trainlint import safe_write\n"
        "os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        "snap = safe_write.snapshot(sys.argv[1])\n"
        "safe_write.write_back(sys.argv[1], snap.text.replace('--bf16', '--fp16'), snap.hash)\n"
    )
    proc = subprocess.run([sys.executable, "-c", child, str(path)], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert path.read_text() == SCRIPT
    (temp,) = leftovers(tmp_path)
    assert (tmp_path / temp).read_text() == SCRIPT.replace("--bf16", "--fp16")


def test_concurrent_edit_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    snap = snapshot(path)
    path.write_text(SCRIPT + "# the user's edit\n")  # saved by an editor after trainlint read it
    with pytest.raises(WriteConflict, match="changed since trainlint read it"):
        write_back(path, snap.text.replace("--bf16", "--fp16"), snap.hash)
    assert path.read_text() == SCRIPT + "# the user's edit\n" and leftovers(tmp_path) == []

    # an edit that lands while the temporary file is being written is caught by the last check
    path.write_text(SCRIPT)
    snap = snapshot(path)
    real_fsync = os.fsync

    def edit_during_write(fd):
        real_fsync(fd)
        path.write_text(SCRIPT + "# late edit\n")

    monkeypatch.setattr(safe_write.os, "fsync", edit_during_write)
    with pytest.raises(WriteConflict):
        write_back(path, snap.text.replace("--bf16", "--fp16"), snap.hash)
    assert path.read_text() == SCRIPT + "# late edit\n" and leftovers(tmp_path) == []


def test_write_to_another_file_checks_that_file_too(tmp_path, monkeypatch):
    """``to=`` a file other than the source: what it held when the write was decided is checked
    just before replacing it; an edit to it meanwhile is refused and the edit is kept."""
    src, out = tmp_path / "run.sh", tmp_path / "out.sh"
    src.write_text(SCRIPT)
    out.write_text("# the user's own out.sh\n")
    snap, before = snapshot(src), snapshot_target(out)
    out.write_text("# edited after trainlint looked\n")
    with pytest.raises(WriteConflict, match=r"out.sh changed since trainlint looked at it"):
        write_back(src, snap.text.replace("--bf16", "--fp16"), snap.hash, to=out, target=before)
    assert out.read_text() == "# edited after trainlint looked\n" and leftovers(tmp_path) == []

    # unchanged: written
    before = snapshot_target(out)
    result = write_back(src, snap.text.replace("--bf16", "--fp16"), snap.hash, to=out, target=before)
    assert result.written and out.read_text() == SCRIPT.replace("--bf16", "--fp16") and src.read_text() == SCRIPT

    # an edit that lands while the temporary file is being written is caught by the last check
    before = snapshot_target(out)
    real_fsync = os.fsync

    def edit_during_write(fd):
        real_fsync(fd)
        out.write_text("# late edit\n")

    with monkeypatch.context() as m:
        m.setattr(safe_write.os, "fsync", edit_during_write)
        with pytest.raises(WriteConflict, match="changed since"):
            write_back(src, snap.text, snap.hash, to=out, target=before)
    assert out.read_text() == "# late edit\n" and leftovers(tmp_path) == []


def test_write_to_a_target_that_appears_vanishes_or_is_repointed(tmp_path):
    src = tmp_path / "run.sh"
    src.write_text(SCRIPT)
    snap = snapshot(src)
    new = tmp_path / "new.sh"
    before = snapshot_target(new)
    assert before.digest is None
    new.write_text("# created by someone else meanwhile\n")
    with pytest.raises(WriteConflict, match=r"new.sh was created since"):
        write_back(src, snap.text, snap.hash, to=new, target=before)
    assert new.read_text() == "# created by someone else meanwhile\n"

    before = snapshot_target(new)
    new.unlink()
    with pytest.raises(WriteConflict, match="was removed since"):
        write_back(src, snap.text, snap.hash, to=new, target=before)
    assert not new.exists()

    a, b, link = tmp_path / "a.sh", tmp_path / "b.sh", tmp_path / "link.sh"
    a.write_text("a\n")
    b.write_text("a\n")  # the same bytes: only the symlink's target tells them apart
    link.symlink_to(a)
    before = snapshot_target(link)
    link.unlink()
    link.symlink_to(b)
    with pytest.raises(WriteConflict, match="now points to"):
        write_back(src, snap.text, snap.hash, to=link, target=before)
    assert a.read_text() == b.read_text() == "a\n"


def test_write_to_needs_the_targets_snapshot(tmp_path):
    src, out = tmp_path / "run.sh", tmp_path / "out.sh"
    src.write_text(SCRIPT)
    snap = snapshot(src)
    with pytest.raises(TypeError, match="snapshot_target"):
        write_back(src, snap.text, snap.hash, to=out)
    with pytest.raises(TypeError, match="snapshot_target"):
        write_back(src, snap.text, snap.hash, to=out, target=snapshot_target(tmp_path / "other.sh"))
    assert not out.exists()
    with pytest.raises(WriteBackError, match="is a directory"):
        snapshot_target(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only directory")
def test_read_only_directory_is_a_message(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    path = directory / "run.sh"
    path.write_text(SCRIPT)
    directory.chmod(0o555)
    try:
        with pytest.raises(WriteBackError, match=r"cannot write in .*Permission denied"):
            write_back(path, "x\n", text_hash(SCRIPT))
        assert path.read_text() == SCRIPT
    finally:
        directory.chmod(0o755)


def test_unreadable_and_odd_sources_are_messages(tmp_path):
    with pytest.raises(WriteBackError, match=r"cannot read .*No such file"):
        write_back(tmp_path / "missing.sh", "x\n", text_hash(""))
    with pytest.raises(WriteBackError, match="not a regular file"):
        write_back(tmp_path, "x\n", text_hash(""))
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(WriteBackError, match="not valid"):
        write_back(bad, "x\n", text_hash(""))
    good = tmp_path / "good.json"
    good.write_text("{}\n")
    with pytest.raises(WriteBackError, match="cannot encode"):
        write_back(good, "{\"\udc80\": 1}\n", text_hash("{}\n"))
    assert good.read_text() == "{}\n"


def test_distinct_targets_for_same_named_files(tmp_path):
    a, b = str(tmp_path / "run" / "a" / "model.yml"), str(tmp_path / "run" / "b" / "model.yml")
    out = distinct_targets([a, b], tmp_path / "out")
    assert out == {a: tmp_path / "out" / "a" / "model.yml", b: tmp_path / "out" / "b" / "model.yml"}
    assert distinct_targets([a, str(tmp_path / "x.yml")], "o") == {a: Path("o/model.yml"), str(tmp_path / "x.yml"): Path("o/x.yml")}


# ========================================================================== through the CLI

MEGATRON = """\
#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 1 \\
    --num-layers 40 --hidden-size 5120 --num-attention-heads 40 --seq-length 2048 \\
    --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 \\
    --bf16 --use-flash-attn
"""
ARGS = ["--isolated", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--nodes", "1"]


def test_write_to_dash_prints_only_the_file(tmp_path, capfdbinary):
    src = tmp_path / "run.sh"
    src.write_bytes(MEGATRON.replace("\n", "\r\n").encode())
    code = main(["suggest", str(src), *ARGS, "--write-to", "-"])
    out, err = capfdbinary.readouterr()
    assert code == 0, err
    assert out.startswith(b"#!/bin/bash\r\ntorchrun") and out.count(b"\r\n") == MEGATRON.count("\n")
    assert b"suggest" not in out.lower() and b"tokens/s" in err  # the report went to stderr
    assert src.read_bytes() == MEGATRON.replace("\n", "\r\n").encode()


def test_write_to_refuses_a_concurrent_edit_with_exit_2(tmp_path, capsys, monkeypatch):
    from trainlint.layout import writeback

    src = tmp_path / "run.sh"
    src.write_text(MEGATRON)
    real = writeback.rewrite_files

    def and_edit(*a, **kw):
        files = real(*a, **kw)
        src.write_text(MEGATRON + "# edited meanwhile\n")
        return files

    monkeypatch.setattr(writeback, "rewrite_files", and_edit)
    code = main(["suggest", str(src), *ARGS, "--write-to", str(src)])
    err = capsys.readouterr().err
    assert code == 2 and "changed since trainlint read it" in err and "Traceback" not in err
    assert src.read_text() == MEGATRON + "# edited meanwhile\n"


def test_write_to_io_error_is_exit_2(tmp_path, capsys, monkeypatch):
    src = tmp_path / "run.sh"
    src.write_text(MEGATRON)
    monkeypatch.setattr(safe_write.os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")))
    code = main(["suggest", str(src), *ARGS, "--write-to", str(src)])
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and "Traceback" not in err
    assert src.read_text() == MEGATRON and leftovers(tmp_path) == []


def test_write_to_directory_with_same_named_files(tmp_path, capsys):
    """A NeoX run of two files named config.yml in different directories: both land, apart."""
    a, b = tmp_path / "model" / "config.yml", tmp_path / "train" / "config.yml"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text("num_layers: 24\nhidden_size: 2048\nnum_attention_heads: 16\nseq_length: 2048\n"
                 "max_position_embeddings: 2048\nmodel_parallel_size: 2\n")
    b.write_text("train_micro_batch_size_per_gpu: 8\ngradient_accumulation_steps: 2\npipe_parallel_size: 2\n"
                 "zero_optimization:\n  stage: 1\n")
    out = tmp_path / "out"
    out.mkdir()
    code = main(["suggest", str(a), "--run", f"{a},{b}", "--isolated", "--model", "gpt3-1.3b", "--gpu", "a100-80gb",
                 "--nodes", "1", "--write-to", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    # suggestion 1 changes both files (model_parallel_size in one, the micro batch in the other)
    assert written == ["model/config.yml", "train/config.yml"]
    assert "model_parallel_size: 1" in (out / "model" / "config.yml").read_text()
    assert a.read_text().endswith("model_parallel_size: 2\n")  # the sources are not touched


def test_write_to_file_refuses_when_that_file_changed_during_the_search(tmp_path, capsys, monkeypatch):
    """``suggest --write-to out.sh``: out.sh is looked at when the command starts; when someone
    writes it while the layout is searched and rewritten, it is not overwritten (exit 2)."""
    from trainlint.layout import writeback

    src, out = tmp_path / "run.sh", tmp_path / "out.sh"
    src.write_text(MEGATRON)
    out.write_text("# out.sh as it was\n")
    real = writeback.rewrite_files

    def and_edit_target(*a, **kw):
        files = real(*a, **kw)
        out.write_text("# out.sh written by someone else meanwhile\n")
        return files

    monkeypatch.setattr(writeback, "rewrite_files", and_edit_target)
    code = main(["suggest", str(src), *ARGS, "--write-to", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "out.sh changed since trainlint looked at it" in err and "Traceback" not in err
    assert out.read_text() == "# out.sh written by someone else meanwhile\n" and src.read_text() == MEGATRON
    assert leftovers(tmp_path) == []

    # the same run with out.sh left alone writes it
    monkeypatch.setattr(writeback, "rewrite_files", real)
    code = main(["suggest", str(src), *ARGS, "--write-to", str(out)])
    assert code == 0, capsys.readouterr().err
    assert out.read_text().startswith("#!/bin/bash\ntorchrun")


def test_write_to_directory_refuses_a_file_changed_before_it_is_written(tmp_path, capsys, monkeypatch):
    """``--write-to DIR`` with two files: the second target, edited while the first is being
    written, is refused (exit 2) and keeps the edit."""
    a, b = tmp_path / "model" / "config.yml", tmp_path / "train" / "config.yml"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text("num_layers: 24\nhidden_size: 2048\nnum_attention_heads: 16\nseq_length: 2048\n"
                 "max_position_embeddings: 2048\nmodel_parallel_size: 2\n")
    b.write_text("train_micro_batch_size_per_gpu: 8\ngradient_accumulation_steps: 2\npipe_parallel_size: 2\n"
                 "zero_optimization:\n  stage: 1\n")
    out = tmp_path / "out"
    (out / "model").mkdir(parents=True)
    (out / "train").mkdir()
    (out / "model" / "config.yml").write_text("# old model\n")
    (out / "train" / "config.yml").write_text("# old train\n")
    real_replace = os.replace

    def replace_then_edit_the_other(src_path, dst):
        real_replace(src_path, dst)
        other = out / "train" / "config.yml"
        if str(dst) != str(other.resolve()):
            other.write_text("# train, edited meanwhile\n")

    monkeypatch.setattr(safe_write.os, "replace", replace_then_edit_the_other)
    code = main(["suggest", str(a), "--run", f"{a},{b}", "--isolated", "--model", "gpt3-1.3b", "--gpu", "a100-80gb",
                 "--nodes", "1", "--write-to", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "changed since trainlint looked at it" in err and "Traceback" not in err
    assert (out / "train" / "config.yml").read_text() == "# train, edited meanwhile\n"
    assert "model_parallel_size: 1" in (out / "model" / "config.yml").read_text()
