"""The text output as a person sees it (issue 32): severity on every line, three layouts, colour
on a terminal only, --min-severity, --quiet, normalised relative paths, progress.

The renders of tests/fixtures/output are compared with golden files in tests/golden/text/, once
through a pipe (no colour) and once through a pseudo-terminal (``os.openpty``; colour), and under
``NO_COLOR``, ``FORCE_COLOR`` and ``--color``. To rewrite the golden files after a deliberate change
of the output: ``TRAINLINT_UPDATE_GOLDEN=1 python -m pytest tests/test_text_output.py`` (then read
the diff before committing it).
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainlint.output import display_path
from trainlint.output.progress import Progress, wanted
from trainlint.output.style import use_color

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "output"
GOLDEN = REPO / "tests" / "golden" / "text"
LAYOUTS = ("full", "concise", "grouped")
SGR = re.compile(r"\x1b\[[0-9;]*m")
PROGRESS = re.compile(r"\r\x1b\[K(checked \d+/\d+ files, \d+\.\d s)?")
"""A progress line (trainlint.output.progress) drawn in place, and the erase that ends it."""

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals on this system")


def _env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    env.update(more)
    return env


def through_pipe(*argv: str, **env: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "trainlint", *argv], cwd=FIXTURE, env=_env(**env),
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def through_pty(*argv: str, keep_progress: bool = False, **env: str) -> tuple[int, str]:
    """Run with stdout (and stderr) a pseudo-terminal; what the terminal received, ``\\r\\n`` as ``\\n``
    (without a progress line drawn and erased, unless ``keep_progress``)."""
    leader, follower = os.openpty()
    try:
        process = subprocess.Popen([sys.executable, "-m", "trainlint", *argv], cwd=FIXTURE, env=_env(**env),
                                   stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    finally:
        os.close(follower)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 120)
            if not ready:
                break
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
    code = process.wait(timeout=120)
    text = b"".join(chunks).decode().replace("\r\n", "\n")
    # On a loaded machine the check can outlast the progress line's delay (1 s): the line is drawn
    # and erased before the report, so the terminal shows what it shows without it
    return code, text if keep_progress else PROGRESS.sub("", text)


def golden(name: str, text: str) -> str:
    path = GOLDEN / name
    if os.environ.get("TRAINLINT_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path.read_text()


CHECK = ("check", "--isolated", ".")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pipe_is_plain_and_matches_the_golden_file(layout):
    code, out, err = through_pipe(*CHECK, "--output-format", layout)
    assert code == 1 and err == ""
    assert "\x1b" not in out
    assert out == golden(f"{layout}.txt", out)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_terminal_is_coloured_and_matches_the_golden_file(layout):
    code, out = through_pty(*CHECK, "--output-format", layout)
    assert code == 1
    assert SGR.search(out)
    assert out == golden(f"{layout}.color.txt", out)
    # the colour is all there is between the two: without it, the terminal shows the pipe's text
    assert SGR.sub("", out) == (GOLDEN / f"{layout}.txt").read_text()


def test_every_line_carries_its_severity():
    _, out, _ = through_pipe(*CHECK, "--no-summary")
    # the file's `note: judged against ...` line says which release; it is no finding (issue 28)
    findings = [line for line in out.splitlines() if not line.startswith("    ") and ": note: " not in line]
    assert findings and all(re.match(r"^\S+:\d+:\d+: (error|warning|info) TL\d{3}( \[\*\])? ", f) for f in findings)
    severities = {f.split(": ", 1)[1].split()[0] for f in findings}
    assert severities == {"error", "warning", "info"}  # the fixture has each: a plain line would not tell them apart


def test_colour_marks_severity_words_and_paths():
    _, out = through_pty(*CHECK, "--output-format", "concise", "--no-summary")
    for line in out.splitlines():
        assert line.startswith("\x1b[1m")  # the path, bold
    assert "\x1b[1;31merror\x1b[0m" in out and "\x1b[1;33mwarning\x1b[0m" in out and "\x1b[1;36minfo\x1b[0m" in out


def test_no_color_on_a_terminal_is_plain():
    _, out = through_pty(*CHECK, NO_COLOR="1")
    assert out == (GOLDEN / "full.txt").read_text()


def test_color_never_on_a_terminal_is_plain():
    _, out = through_pty(*CHECK, "--color", "never")
    assert out == (GOLDEN / "full.txt").read_text()


def test_force_color_colours_a_pipe():
    _, out, _ = through_pipe(*CHECK, FORCE_COLOR="1")
    assert out == (GOLDEN / "full.color.txt").read_text()


def test_no_color_wins_over_force_color_but_not_over_color_always():
    _, plain, _ = through_pipe(*CHECK, FORCE_COLOR="1", NO_COLOR="1")
    assert plain == (GOLDEN / "full.txt").read_text()
    _, forced, _ = through_pipe(*CHECK, "--color", "always", NO_COLOR="1")
    assert forced == (GOLDEN / "full.color.txt").read_text()


def test_use_color_rules():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert use_color("auto", Tty(), {}) and not use_color("auto", io.StringIO(), {})
    assert not use_color("auto", Tty(), {"NO_COLOR": "1"})
    assert use_color("auto", Tty(), {"NO_COLOR": ""})  # an empty NO_COLOR is unset (no-color.org)
    assert use_color("auto", io.StringIO(), {"FORCE_COLOR": "1"})
    assert not use_color("auto", io.StringIO(), {"FORCE_COLOR": "0"})
    assert use_color("always", io.StringIO(), {"NO_COLOR": "1"}) and not use_color("never", Tty(), {})


def test_only_trainlint_colours_reach_the_terminal():
    """A key holding ESC [31m is still shown escaped (\\e[31m) when the output is coloured; every
    escape byte left is one of trainlint's own SGR sequences."""
    _, out = through_pty(*CHECK, "--output-format", "concise")
    assert "bad\\e[31mkey" in out
    assert SGR.sub("", out).count("\x1b") == 0


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "markdown"])
def test_machine_formats_are_never_coloured(fmt):
    _, out = through_pty(*CHECK, "--format", fmt, FORCE_COLOR="1")
    assert "\x1b" not in out


def test_format_is_another_name_of_output_format_and_text_of_full():
    outs = {through_pipe(*CHECK, *flags)[1] for flags in (
        (), ("--format", "text"), ("--format", "full"), ("--output-format", "text"), ("--output-format", "full"))}
    assert len(outs) == 1


def test_grouped_puts_findings_under_their_file():
    _, out, _ = through_pipe(*CHECK, "--output-format", "grouped", "--no-summary")
    blocks = out.strip("\n").split("\n\n")
    assert [b.splitlines()[0] for b in blocks] == ["ds_batch.json:", "sub/ds_keys.json:"]
    for block in blocks:
        for line in block.splitlines()[1:]:
            assert re.match(r"^  \d+:\d+ (error|warning|info) TL\d{3} |^      fix: |^  note: judged against ", line)


def test_concise_has_one_line_per_finding():
    _, full, _ = through_pipe(*CHECK, "--no-summary", "--format", "json")
    count = sum(len(f["diagnostics"]) for f in json.loads(full)["files"])
    _, out, _ = through_pipe(*CHECK, "--output-format", "concise", "--no-summary")
    assert len(out.splitlines()) == count and "fix:" not in out


def test_quiet_prints_the_findings_only():
    code, out, err = through_pipe(*CHECK, "--quiet")
    assert code == 1 and err == ""
    assert "Found" not in out and "fixable" not in out
    assert out == "".join(line + "\n" for line in (GOLDEN / "full.txt").read_text().splitlines()[:-2])


def test_min_severity_filters_the_findings_not_the_exit_code():
    code, out, _ = through_pipe(*CHECK, "--min-severity", "warning", "--no-summary", "--output-format", "concise")
    assert code == 1 and " info " not in out and " warning " in out
    code, out, _ = through_pipe(*CHECK, "--min-severity", "error", "--output-format", "concise")
    lines = out.splitlines()
    assert code == 1 and all(": error " in line for line in lines[:-2]) and lines[-2].startswith("Found 3 problems")
    # a warning-only file: nothing shown at --min-severity error, and exit 0 as without the option
    code, out, _ = through_pipe("check", "--isolated", "sub", "--min-severity", "error", "--quiet")
    assert code == 0 and out == ""


@pytest.mark.slow
def test_min_severity_error_over_the_corpus_prints_only_errors(corpus_dir):
    done = subprocess.run([sys.executable, "-m", "trainlint", "check", "--isolated", "--no-summary",
                           "--output-format", "concise", "--min-severity", "error", str(corpus_dir)],
                          capture_output=True, text=True, timeout=900)
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and lines
    assert all(re.match(r"^\S.*:\d+:\d+: error TL\d{3}", line) for line in lines)
    everything = subprocess.run([sys.executable, "-m", "trainlint", "check", "--isolated", "--format", "json",
                                 str(corpus_dir)], capture_output=True, text=True, timeout=900)
    errors = sum(d["severity"] == "error" for f in json.loads(everything.stdout)["files"] for d in f["diagnostics"])
    assert len(lines) == errors


def test_statistics_count_by_code_and_severity():
    """TL004 is an error in zero_optimization (DeepSpeed refuses it) and a warning at the top level
    (ignored): two rows, each with its own count, instead of one row at the worst severity."""
    _, out, _ = through_pipe(*CHECK, "--statistics", "--format", "json")
    rows = {(r["code"], r["severity"]): r["count"] for r in json.loads(out)}
    assert rows[("TL004", "error")] == 1 and rows[("TL004", "warning")] == 2
    _, text, _ = through_pipe(*CHECK, "--statistics")
    tl004 = [line.split() for line in text.splitlines() if " TL004 " in line]
    assert sorted((words[0], words[-1]) for words in tl004) == [("1", "error"), ("2", "warning")]


def test_paths_are_normalised_and_relative():
    absolute = str(FIXTURE / "ds_batch.json")
    for spelled in ("./ds_batch.json", "sub/../ds_batch.json", absolute):
        _, out, _ = through_pipe("check", "--isolated", "--output-format", "concise", "--no-summary", spelled)
        assert out and all(line.startswith("ds_batch.json:") for line in out.splitlines()), spelled
    assert display_path("/etc/x.json", "/work/here/deep") == "/etc/x.json"  # not ../../../etc/x.json
    assert display_path("/work/shared/c/x.json", "/work/here") == "../shared/c/x.json"
    assert display_path("/work/here/a/./b.json", "/work/here") == "a/b.json"
    assert display_path("<command line>", "/work") == "<command line>"


# ------------------------------------------------------------------------------------ progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_waits_a_second_then_counts_and_is_erased():
    now = [0.0]
    stream = _Terminal()
    progress = Progress(10, stream, clock=lambda: now[0])
    for _ in range(4):
        now[0] += 0.2
        progress.advance()
    assert stream.getvalue() == ""  # under a second: nothing
    now[0] = 1.5
    progress.advance()
    assert stream.getvalue().endswith("checked 5/10 files, 1.5 s")
    now[0] = 1.55
    progress.advance()  # within the redraw interval: not redrawn
    assert "6/10" not in stream.getvalue()
    now[0] = 2.0
    progress.advance(4)
    assert stream.getvalue().endswith("checked 10/10 files, 2.0 s")
    progress.finish()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_progress_is_for_text_on_a_terminal_only():
    assert wanted(_Terminal(), "full", quiet=False) and wanted(_Terminal(), "grouped", quiet=False)
    assert not wanted(io.StringIO(), "full", quiet=False)
    assert not wanted(_Terminal(), "full", quiet=True)
    assert not any(wanted(_Terminal(), fmt, quiet=False) for fmt in ("json", "sarif", "github", "markdown"))


def test_a_short_run_on_a_terminal_prints_no_progress():
    from trainlint.output.progress import DELAY

    started = time.monotonic()
    _, out = through_pty(*CHECK, "--color", "never", keep_progress=True)
    if time.monotonic() - started > DELAY:  # a loaded machine: the run was not short, a progress line is right
        pytest.skip(f"the check of two files took over {DELAY} s on this machine")
    assert "checked " not in out and "\r" not in out


RUN = ("run", "--isolated", "--dry-run", "--", "torchrun", "pretrain_gpt.py", "--num-layers", "2", "--hidden-size", "96",
       "--num-attention-heads", "6", "--tensor-model-parallel-size", "4")


def test_run_colours_its_findings_when_stderr_is_a_terminal():
    """`trainlint run` writes the findings to stderr: colour follows stderr, as check's follows stdout."""
    code, out = through_pty(*RUN)
    assert code == 1 and "\x1b[1;31merror\x1b[0m \x1b[1mTL101\x1b[0m" in out
    code, out, err = through_pipe(*RUN)
    assert code == 1 and ": error TL101 " in err and "\x1b" not in err + out
    _, out = through_pty(*RUN, NO_COLOR="1")
    assert ": error TL101 " in out and "\x1b" not in out
