"""TL120: a DeepSpeed config with gradient_accumulation_steps but no batch is an error; one with no
batch setting at all is most likely a template its loader fills (the 2021 Hugging Face Trainer set
the batch from --per_device_train_batch_size and refused batch keys in the file; the autotuner
writes them), so a warning that says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.cli import main


@pytest.mark.parametrize("config, expected", [
    ({"gradient_accumulation_steps": 4, "fp16": {"enabled": True}}, ("TL120", "error", 2, 34)),
    ({"steps_per_print": 10, "fp16": {"enabled": True}}, ("TL120", "warning", 1, 1)),
])
def test_tl120_severity(tmp_path: Path, capsys, config, expected):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(config, indent=2) + "\n")
    main(["check", "--isolated", "--format", "json", "--select", "TL120", str(path)])
    out = json.loads(capsys.readouterr().out)
    assert [(d["code"], d["severity"], d["line"], d["column"]) for f in out["files"] for d in f["diagnostics"]] == [expected]
