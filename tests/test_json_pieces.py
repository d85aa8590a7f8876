"""``--format json`` is written one file's entry at a time (issue 33: flat memory); the bytes are
those of ``json.dumps(document, indent=2)`` of the whole document."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from trainlint.core.results import FileResult
from trainlint.core.input_codes import input_diagnostic
from trainlint.output import file_entries
from trainlint.output import json_format


def _whole(results, baseline=None) -> str:
    files = [{"path": e.path, "format": e.format, "diagnostics": [d.to_dict() for d in e.diagnostics],
              **({"target": e.target} if e.target is not None else {})} for e in file_entries(results)]
    data: dict = {"files": files}
    if baseline is not None:
        path, outcome = baseline
        data["baseline"] = {"path": path, "suppressed": outcome.suppressed, "stale": outcome.stale}
    return json.dumps(data, indent=2) + "\n"


CASES = {
    "none": [],
    "one file, no finding": [FileResult("a.json", None)],
    "findings, a nested target, a line break in a message": [
        FileResult("a.json", "deepspeed", [input_diagnostic("TL001", "bad\nline \"quoted\"", path="a.json")],
                   target={"framework": "deepspeed", "nested": [1, {"deep": "x\ny"}], "empty": {}}),
        FileResult("dir/b.yml", None, [input_diagnostic("TL016", "not a config", path="dir/b.yml")]),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("baseline", [None, ("base.json", SimpleNamespace(suppressed=3, stale=1))])
def test_pieces_make_the_whole_document(name, baseline):
    results = CASES[name]
    pieces = list(json_format.render_pieces(results, baseline=baseline))
    assert "".join(pieces) == _whole(results, baseline)
    assert json_format.render(results, baseline=baseline) == _whole(results, baseline)
    assert len(pieces) >= len(file_entries(results))  # a piece per file at least: never one big string
