"""A number of thousands of digits in a config (clamped to 4,300 nines when read) is named by its
length in rule messages, not printed in full (issue 20)."""

from __future__ import annotations

import json
import re

from trainlint.cli import main
from trainlint.core.numbers import shorten_numbers


def test_shorten_numbers_names_long_runs_only():
    assert shorten_numbers("batch 64 of " + "1" * 30) == "batch 64 of " + "1" * 30
    assert shorten_numbers("batch " + "9" * 4301 + " x 4") == "batch a 4,301-digit number x 4"
    assert shorten_numbers("-" + "5" * 31 + ".") == "-a 31-digit number."


def test_tl100_message_with_a_4301_digit_batch(tmp_path, capsys):
    (tmp_path / "ds_config.json").write_text(
        '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "train_batch_size": '
        + "7" * 4301 + "}\n")
    code = main(["check", "--isolated", "--model", "llama2-7b", "--nodes", "1", "--format", "json", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    diags = [d for f in out["files"] for d in f["diagnostics"]]
    tl100 = [d for d in diags if d["code"] == "TL100"]
    assert code == 1 and len(tl100) == 1
    assert "a 4,300-digit number" in tl100[0]["message"]  # the value as read: clamped to 4,300 nines
    for d in diags:
        text = json.dumps(d)
        assert not re.search(r"\d{31,}", text), d["code"]
        assert len(text) < 2000, d["code"]
