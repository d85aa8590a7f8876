""""Fixable" means what ``check --fix`` applies, on every face: the text ``[*]`` after a code, the
``--statistics`` ``[*]`` column and its JSON ``fixable``, the footer after the summary (as ruff's:
how many ``--fix`` fixes, how many more ``--unsafe-fixes`` would), and JSON's ``applicability`` (a
fix without edits is ``display``). TL009's ``2e-5`` is fixed by ``--fix``; DeepSpeed ``_comment``
keys are comments; a "did you mean" needs a real closeness and never renames onto a key the section
already has, nor a key the schema defines elsewhere."""

from __future__ import annotations

import json
import re

from trainlint.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


NEOX = (b"num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\nmax_position_embeddings: 128\n"
        b"train_micro_batch_size_per_gpu: 2\n"
        b"optimizer:\n  type: Adam\n  params:\n    lr: 2e-5   # refused by the optimizer as a string\n"
        b"weight_decay: 1e-2\n"
        b"zero_optimization: {stage: 1, reduce_bucket_size: 5e8}\n")
DS = (b'{\n  "train_batch_size": 8,\n  "train_micro_batch_size_per_gpu": 1,\n'
      b'  "zero_optimisation": {"stage": 1},\n  "gradient_clip": 1.0\n}\n')
ONLY = ("--isolated", "--select", "TL004,TL009")


def _marked(out: str) -> list[tuple[str, int]]:
    return [(m[1], int(m[2])) for m in re.finditer(r"^(\S+?):(\d+):\d+: (?:error|warning|info) TL\d+ \[\*\] ", out, re.M)]


def test_tl009_is_fixed_by_fix_where_the_string_is_refused(tmp_path, capsys):
    config = tmp_path / "neox.yml"
    config.write_bytes(NEOX)
    _, out, _ = run(capsys, "check", *ONLY, "--format", "json", str(config))
    found = {d["line"]: d for f in json.loads(out)["files"] for d in f["diagnostics"]}
    assert {n: d["applicability"] for n, d in found.items()} == {10: "safe", 11: "safe", 12: "unsafe"}
    code, _, err = run(capsys, "check", *ONLY, "--fix", str(config))
    # the optimizer's lr and the top-level key, which NeoX refuses as strings; not what DeepSpeed reads
    assert config.read_bytes() == NEOX.replace(b"2e-5", b"2.0e-5").replace(b"1e-2", b"1.0e-2"), err
    assert "Fixed 2 findings in 1 file." in err
    run(capsys, "check", *ONLY, "--fix", "--unsafe-fixes", str(config))
    assert b"reduce_bucket_size: 5.0e+8}" in config.read_bytes()
    code, out, _ = run(capsys, "check", *ONLY, "--format", "json", str(config))
    assert code == 0 and not [d for f in json.loads(out)["files"] for d in f["diagnostics"]]


def test_an_aliased_value_keeps_a_hint_only(tmp_path, capsys):
    config = tmp_path / "neox.yml"
    config.write_bytes(b"base_lr: &lr 3e-4\nmin_lr: *lr\nlr: 3e-4\n")
    _, out, _ = run(capsys, "check", "--isolated", "--select", "TL009", "--format", "json", str(config))
    found = {d["line"]: d["applicability"] for f in json.loads(out)["files"] for d in f["diagnostics"]}
    assert found[2] == "display" and found[3] == "safe"


def test_text_marks_and_footer_say_what_fix_applies(tmp_path, capsys):
    neox, ds = tmp_path / "neox.yml", tmp_path / "ds_config.json"
    neox.write_bytes(NEOX)
    ds.write_bytes(DS)
    _, out, _ = run(capsys, "check", *ONLY, str(neox), str(ds))
    _, js, _ = run(capsys, "check", *ONLY, "--format", "json", str(neox), str(ds))
    diags = [(f["path"], d) for f in json.loads(js)["files"] for d in f["diagnostics"]]
    safe = sorted((p, d["line"]) for p, d in diags if d.get("applicability") == "safe")
    unsafe = [d for _, d in diags if d.get("applicability") == "unsafe"]
    # TL009 x2 and zero_optimisation: safe; 5e8 (DeepSpeed reads it) and gradient_clip (a guess): unsafe
    assert len(safe) == 3 and len(unsafe) == 2
    assert sorted(_marked(out)) == safe
    lines = out.splitlines()
    assert lines[-2].startswith("Found 5 problems")
    assert lines[-1] == "[*] 3 fixable with `--fix` (2 more with `--unsafe-fixes`)."
    # --unsafe-fixes: every fix counts, nothing hidden
    _, out, _ = run(capsys, "check", *ONLY, "--unsafe-fixes", str(neox), str(ds))
    assert len(_marked(out)) == 5 and out.splitlines()[-1] == "[*] 5 fixable with `--fix --unsafe-fixes`."
    # what the footer promised is what --fix does
    _, _, err = run(capsys, "check", *ONLY, "--fix", str(neox), str(ds))
    assert "Fixed 3 findings in 2 files." in err
    _, out, _ = run(capsys, "check", *ONLY, str(neox), str(ds))
    assert _marked(out) == [] and out.splitlines()[-1] == "0 fixable with `--fix` (2 with `--fix --unsafe-fixes`)."


def test_no_footer_or_marks_without_fixes_or_without_summary(tmp_path, capsys):
    ds = tmp_path / "ds_config.json"
    ds.write_bytes(b'{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "bogus_key_xyz": 1}\n')
    _, out, _ = run(capsys, "check", *ONLY, str(ds))
    assert "[*]" not in out and "fixable" not in out and out.splitlines()[-1].startswith("Found 1 problem")
    ds.write_bytes(DS)
    _, out, _ = run(capsys, "check", *ONLY, "--no-summary", str(ds))
    assert "fixable" not in out and len(_marked(out)) == 1


def test_statistics_mark_only_codes_fix_applies(tmp_path, capsys):
    neox, ds = tmp_path / "neox.yml", tmp_path / "ds_config.json"
    neox.write_bytes(NEOX.replace(b"lr: 2e-5", b"lr: 0.0002").replace(b"weight_decay: 1e-2\n", b""))
    ds.write_bytes(DS.replace(b'"zero_optimisation"', b'"zero_optimization"'))
    # left: TL009 on 5e8 (unsafe) and TL004 gradient_clip (unsafe): no code is fixable by --fix alone
    _, out, _ = run(capsys, "check", *ONLY, "--statistics", str(neox), str(ds))
    assert not re.search(r"TL\d+  \[\*\]", out) and re.search(r"TL009      yaml-float-as-string", out)
    assert out.splitlines()[-1] == "0 fixable with `--fix` (2 with `--fix --unsafe-fixes`)."
    _, out, _ = run(capsys, "check", *ONLY, "--statistics", "--format", "json", str(neox), str(ds))
    assert {r["code"]: r["fixable"] for r in json.loads(out)} == {"TL004": False, "TL009": False}
    _, out, _ = run(capsys, "check", *ONLY, "--statistics", "--unsafe-fixes", "--format", "json", str(neox), str(ds))
    assert {r["code"]: r["fixable"] for r in json.loads(out)} == {"TL004": True, "TL009": True}


def test_a_fix_hint_without_edits_is_display_in_json(tmp_path, capsys):
    """TL301 suggests a layout in words; with no edits, nothing applies it: JSON says display."""
    from trainlint.core.diagnostics import Applicability, Diagnostic, Severity

    hint = Diagnostic("TL301", "low-expected-mfu", Severity.WARNING, "m", fix="use TP 2",
                      applicability=Applicability.UNSAFE)
    assert hint.to_dict()["applicability"] == "display" and not hint.applies(True)


# ------------------------------------------------------------------------- DeepSpeed comments


def test_underscore_keys_are_comments_where_deepspeed_ignores_unknown_keys(tmp_path, capsys):
    config = tmp_path / "ds_config.json"
    config.write_bytes(b'{\n  "_comment": "tuned for 8 GPUs",\n  "train_batch_size": 8,\n'
                       b'  "train_micro_batch_size_per_gpu": 1,\n'
                       b'  "optimizer": {"type": "AdamW", "_why": "paper", "params": {"lr": 1e-4}},\n'
                       b'  "zero_optimization": {"stage": 1, "_note": "x"}\n}\n')
    _, out, _ = run(capsys, "check", "--isolated", "--select", "TL004", "--format", "json", str(config))
    (diag,) = [d for f in json.loads(out)["files"] for d in f["diagnostics"]]
    # zero_optimization is a pydantic model with extra="forbid": DeepSpeed refuses any key it lacks
    assert diag["line"] == 6 and diag["severity"] == "error" and "_note" in diag["message"]
    assert "did you mean" not in diag["message"] and "fix" not in diag and "applicability" not in diag


def test_did_you_mean_never_renames_onto_a_present_or_misplaced_key(tmp_path, capsys):
    config = tmp_path / "ds_config.json"
    config.write_bytes(b'{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1,\n'
                       b' "zero_optimization": {"stage": 1, "stgae": 2},\n'
                       b' "stage": 3, "comet_": {}}\n')
    _, out, _ = run(capsys, "check", "--isolated", "--select", "TL004", "--format", "json", str(config))
    found = {d["message"].split("`")[1]: d for f in json.loads(out)["files"] for d in f["diagnostics"]}
    # `stage` is already in the section: renaming `stgae` onto it would make a duplicate; it is a second value
    assert "`stage`? It is set already" in found["stgae"]["message"] and "fix" not in found["stgae"]
    assert "applicability" not in found["stgae"]
    # `stage` is a real key of another section: it is misplaced, not a misspelling of a neighbour
    assert "belongs in `zero_optimization`" in found["stage"]["message"] and "fix" not in found["stage"]
    assert "did you mean `comet`?" in found["comet_"]["message"]  # a typo of a real section still is one
