"""Output that a config cannot forge (issue 20): every control, bidi and surrogate character that
a key or a file name can hold goes through every output format; text, github and markdown show it
escaped (one finding stays one line; no forged workflow command; no terminal escape), JSON and
SARIF keep it exactly (their encoders escape it), and nothing raises."""

from __future__ import annotations

import json
import os
import sys

import pytest

from trainlint.cli import main
from trainlint.core.escape import printable

# every C0 control (NUL as a JSON escape), DEL, every C1 control, the bidi controls, the line and
# paragraph separators and a lone surrogate
HOSTILE = ([chr(c) for c in range(0x20)] + [chr(c) for c in range(0x7F, 0xA0)]
           + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029"] + [chr(c) for c in range(0x202A, 0x202F)]
           + [chr(c) for c in range(0x2066, 0x206A)] + ["\udc80", "\ud800"])
FORGED = "\n::error file=README.md,line=1::forged\r\nREADME.md:1:1: TL000 fake\x1b[2J\x1b]0;title\x07"
FORMATS = ("text", "github", "markdown", "json", "sarif")


@pytest.fixture()
def hostile_config(tmp_path):
    keys = {f"k{i}_{ch}_end": i for i, ch in enumerate(HOSTILE)}
    keys[FORGED] = 1
    keys["train_micro_batch_size_per_gpu"] = 4
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(keys), encoding="utf-8")  # ensure_ascii: \u escapes in the file
    return path, keys


def run(capfd, *argv: str) -> tuple[int, str, str]:
    code = main(["check", "--isolated", "--select", "TL004", *argv])
    out, err = capfd.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", FORMATS)
def test_control_characters_through_every_format(capfd, hostile_config, fmt):
    path, keys = hostile_config
    code, out, err = run(capfd, "--format", fmt, str(path))
    assert "Traceback" not in err and code == 0  # TL004 at the top level is a warning
    unknown = len(keys) - 1
    if fmt in ("json", "sarif"):
        data = json.loads(out)
        messages = ([d["message"] for f in data["files"] for d in f["diagnostics"]] if fmt == "json"
                    else [r["message"]["text"] for r in data["runs"][0]["results"]])
        assert len(messages) == unknown
        # the exact key, every character kept (JSON escapes it)
        assert any(FORGED in m for m in messages)
        return
    # no raw control/bidi/surrogate character is printed, except the line breaks of the format
    raw = {ch for ch in HOSTILE if ch not in "\n\t"} & set(out)
    assert not raw, sorted(map(hex, map(ord, raw)))
    lines = out.splitlines()
    if fmt == "text":
        # the file's findings, after one line saying what it was judged against, then the summary
        assert len(lines) == unknown + 2 and all(line.startswith(str(path)) for line in lines[:-1])
        assert "judged against" in lines[0]
    elif fmt == "github":
        # line breaks are %0A inside the one command, as @actions/core encodes them
        assert len(lines) == unknown + 1 and all(line.startswith("::warning file=") for line in lines[:-1])
        assert "%0A::error file=README.md" in out
        assert not any(line.startswith("::error") for line in lines)
    else:
        rows = [line for line in lines if line.startswith("| ") and "unknown key" in line]
        assert len(rows) == unknown
    assert "\\e[2J" in out and "\\u202e" in out and "\\udc80" in out and "\\x9b" in out


def test_printable_escapes_and_keeps_the_rest():
    assert printable("plain `key` ünïcødé 日本 \t tab") == "plain `key` ünïcødé 日本 \t tab"
    assert printable("a\nb\rc\x1bd\x07\x9b\u202e\udc80") == "a\\nb\\rc\\ed\\x07\\x9b\\u202e\\udc80"


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that takes any bytes in names")
def test_non_utf8_file_name_in_every_format(tmp_path, capfd):
    name = os.fsdecode(b"ds_\xff\x1b[31m.json")
    path = tmp_path / name
    path.write_text('{"train_micro_batch_size_per_gpu": 4, "unknown_key": 1}\n')
    for fmt in FORMATS:
        code, out, err = run(capfd, "--format", fmt, str(path))
        assert "Traceback" not in err and code == 0, (fmt, err)
        assert "\x1b" not in out, fmt
        if fmt == "sarif":
            uris = [loc["physicalLocation"]["artifactLocation"]["uri"]
                    for r in json.loads(out)["runs"][0]["results"] for loc in r["locations"]]
            assert uris and all("ds_%FF%1B%5B31m.json" in u for u in uris), uris


def test_lone_surrogate_to_a_strict_stream(tmp_path):
    """Written to a real pipe whose encoding is strict UTF-8: escaped, not a UnicodeEncodeError."""
    import subprocess

    path = tmp_path / "ds_config.json"
    path.write_text('{"train_micro_batch_size_per_gpu": 4, "\\udc80": 1}\n')
    for fmt in ("text", "github", "markdown", "json", "sarif"):
        proc = subprocess.run([sys.executable, "-m", "trainlint", "check", "--isolated", "--format", fmt, str(path)],
                              capture_output=True, env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
        assert proc.returncode == 0 and b"Traceback" not in proc.stderr, (fmt, proc.stderr[-300:])


def test_a_value_holding_backticks_stays_inside_its_code_span() -> None:
    """Issue 29 O2: a key that holds backticks is quoted with a longer fence, and the Markdown face
    reads that fence as CommonMark does, so nothing of the key is rendered as Markdown."""
    from trainlint.core.diagnostics import code
    from trainlint.output.markdown import cell

    assert code("zero_optimization") == "`zero_optimization`"
    key = "x` [a](http://e) ``y"
    quoted = code(key)
    assert quoted == "```x` [a](http://e) ``y```"
    assert code("`a") == "`` `a ``"  # CommonMark strips one space inside each end
    rendered = cell(f"unknown key {quoted} in the top level")
    assert rendered == f"unknown key {quoted} in the top level"
    # a stray backtick outside any span is still escaped, and what follows it is inert
    assert cell("a ` [b](http://e)") == "a \\` \\[b\\](http\\://e)"
