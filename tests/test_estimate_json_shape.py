"""``trainlint estimate --format json`` is one shape whatever it estimates (issue 31): an object
``{"runs": [...]}`` for one run, several runs, several files, a GPU comparison and no run at all,
each run an object with its label, path and assumptions: a complete estimate, or one whose inputs are
missing (``"estimate": null`` with ``missing``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from trainlint.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _estimate(capsys, *args: str) -> tuple[int, object]:
    code = main(["estimate", "--format", "json", "--gpu", "h100-80gb", *args])
    return code, json.loads(capsys.readouterr().out)


def test_one_run_several_runs_a_comparison_and_none_have_one_shape(tmp_path, capsys):
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(EXAMPLES / "deepspeed_zero3_offload.json", one / "ds.json")
    several = tmp_path / "several"
    several.mkdir()
    for name in ("deepspeed_zero3_offload.json", "neox_1-3B.yml", "megatron_gpt_8b.sh"):
        shutil.copy(EXAMPLES / name, several / name)
    (tmp_path / "empty.json").write_text("{}\n")  # no adapter claims it: no run
    outputs = [
        _estimate(capsys, str(one / "ds.json")),
        _estimate(capsys, str(several)),
        _estimate(capsys, str(one / "ds.json"), "--compare-gpus", "h100-80gb,a100-80gb"),
        _estimate(capsys, str(tmp_path / "empty.json")),
    ]
    counts = []
    complete = incomplete = 0
    for code, data in outputs:
        assert code in (0, 1, 2)
        assert isinstance(data, dict) and list(data) == ["runs"] and isinstance(data["runs"], list)
        counts.append(len(data["runs"]))
        for run in data["runs"]:
            assert isinstance(run, dict) and {"label", "path", "assumptions"} <= set(run), run
            if run.get("estimate", ...) is None:
                assert isinstance(run["missing"], list) and run["missing"]
                incomplete += 1
            else:
                assert isinstance(run["fits"], bool) and run["tokens_per_s"] > 0
                complete += 1
    assert counts[0] == 1 and counts[1] >= 3 and counts[2] == 1 and counts[3] == 0
    assert complete and incomplete  # both kinds of run met, each in its one shape
