"""TL020 unused-suppression (as ruff's RUF100): inline disables that suppress nothing are reported
by default; per-file-ignores entries only with ``report-unused-per-file-ignores = true``."""

from __future__ import annotations

import json


from trainlint.cli import main
from trainlint.project.suppressions import parse_suppressions

NEOX = """num_layers: 2
hidden_size: 64
num_attention_heads: 4
seq_length: 128
max_position_embeddings: 128
train_micro_batch_size_per_gpu: 1
lr: 6e-4  # trainlint: disable=TL009
warmup: 0.01  # trainlint: disable=TL009
# trainlint: disable-next-line=TL004
zero_optimisation: {stage: 1}
# trainlint: disable-next-line=TL004,TL201
tokenizer_type: GPT2BPETokenizer
"""


def findings(capsys, *argv: str) -> tuple[int, list[tuple[str, int, int]]]:
    code = main(["check", "--format", "json", *argv])
    out, _ = capsys.readouterr()
    return code, [(d["code"], d["line"], d["column"]) for f in json.loads(out)["files"] for d in f["diagnostics"]
                  if d["code"] != "TL900"]


def test_inline_disables_that_suppress_nothing_are_reported_at_the_comment(tmp_path, capsys):
    (tmp_path / "neox.yml").write_text(NEOX)
    code, found = findings(capsys, "--isolated", str(tmp_path / "neox.yml"))
    # line 7 suppresses the YAML 1.1 float-as-string TL009; line 8's value is a float already;
    # line 9 suppresses the misspelled key; line 11 names TL004 and TL201 for a line with neither
    assert ("TL009", 7, 1) not in found
    assert ("TL020", 8, 15) in found
    assert ("TL020", 11, 1) in found
    assert not any(c == "TL020" and line in (7, 9) for c, line, _ in found)
    assert not any(c in ("TL004", "TL009") for c, _, _ in found)
    assert code == 0  # a warning


def test_the_message_names_the_unused_codes_only(tmp_path, capsys):
    (tmp_path / "neox.yml").write_text("num_layers: 2  # trainlint: disable=TL009,TL004\nhidden_size: 64\n"
                                       "num_attention_heads: 4\nseq_length: 128\nmax_position_embeddings: 128\n"
                                       "# trainlint: disable-next-line=TL004,TL201\nnum_layrs: 3\n")
    main(["check", "--isolated", "--format", "json", str(tmp_path / "neox.yml")])
    out, _ = capsys.readouterr()
    tl020 = {d["line"]: d for f in json.loads(out)["files"] for d in f["diagnostics"] if d["code"] == "TL020"}
    assert "`TL009`, `TL004`" in tl020[1]["message"] and tl020[1]["fix"] == "remove the comment"
    assert "`TL201`" in tl020[6]["message"] and "TL004`" not in tl020[6]["message"]
    assert tl020[6]["fix"] == "keep only TL004"


def test_a_range_used_inside_is_not_reported_and_an_unused_one_is(tmp_path, capsys):
    text = ("# trainlint: disable=TL004\nnum_layrs: 2\n# trainlint: enable=TL004\n"
            "# trainlint: disable=TL009\nnum_layers: 2\n# trainlint: enable=TL009\n")
    (tmp_path / "neox.yml").write_text(text)
    _, found = findings(capsys, "--isolated", str(tmp_path / "neox.yml"))
    assert [f for f in found if f[0] == "TL020"] == [("TL020", 4, 1)]


def test_a_code_that_is_not_selected_is_not_called_unused(tmp_path, capsys):
    (tmp_path / "neox.yml").write_text("num_layers: 2\nwarmup: 0.01  # trainlint: disable=TL009\n")
    _, found = findings(capsys, "--isolated", "--ignore", "TL009", str(tmp_path / "neox.yml"))
    assert not any(c == "TL020" for c, _, _ in found)
    _, found = findings(capsys, "--isolated", "--ignore", "TL020", str(tmp_path / "neox.yml"))
    assert not any(c == "TL020" for c, _, _ in found)


def test_unused_per_file_ignores_only_when_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "neox.yml").write_text("num_layers: 2\nnum_layrs: 3\n")
    config = ('[tool.trainlint]\n[tool.trainlint.per-file-ignores]\n'
              '"configs/*.yml" = ["TL004", "TL009"]\n"legacy/*.json" = ["TL100"]\n')
    (tmp_path / "pyproject.toml").write_text(config)
    _, found = findings(capsys, ".")
    assert not any(c == "TL020" for c, _, _ in found) and not any(c == "TL004" for c, _, _ in found)
    (tmp_path / "pyproject.toml").write_text(config.replace("[tool.trainlint]\n", "[tool.trainlint]\nreport-unused-per-file-ignores = true\n"))
    _code = main(["check", "--format", "json", "."])
    out, _ = capsys.readouterr()
    tl020 = [(f["path"], d["line"], d["message"]) for f in json.loads(out)["files"] for d in f["diagnostics"]
             if d["code"] == "TL020"]
    assert [(p.rsplit("/", 1)[-1], line) for p, line, _ in tl020] == [("pyproject.toml", 4), ("pyproject.toml", 5)]
    assert "`TL009` for \"configs/*.yml\"" in tl020[0][2] and "TL004" not in tl020[0][2]
    assert "`TL100` for \"legacy/*.json\"" in tl020[1][2]


def test_parallel_chunks_share_what_was_used(tmp_path, capsys):
    """Usage travels with the results, so the report is the same with any number of jobs."""
    for index in range(40):
        (tmp_path / f"neox_{index}.yml").write_text(NEOX)
    outs = []
    for jobs in ("1", "2"):
        main(["check", "--isolated", "--format", "json", "--jobs", jobs, str(tmp_path)])
        out, _ = capsys.readouterr()
        outs.append(out)
    assert outs[0] == outs[1] and outs[0].count('"TL020"') == 80


def test_directives_keep_their_positions():
    parsed = parse_suppressions("a: 1\nb: 2   # trainlint: disable=TL009\n# trainlint: disable-file\n")
    assert [(d.line, d.column, d.end_column, d.kind, d.codes) for d in parsed.directives] == [
        (2, 8, 34, "disable", ("TL009",)), (3, 1, 26, "disable-file", ())]
    assert parsed.suppressing("TL009", "yaml-float-as-string", 2) == [(2, "TL009"), (3, "*")]
    assert parsed.suppressing("TL004", "unknown-key", 1) == [(3, "*")]
