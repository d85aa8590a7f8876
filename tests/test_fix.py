"""``trainlint check --fix`` / ``--unsafe-fixes`` / ``--diff``: each format's file byte for byte
after the fix, nothing written on ``--diff``, and a fix that does not remove its finding reverted."""

from __future__ import annotations

import json
import os


from trainlint.cli import main
from trainlint.core.diagnostics import Applicability, Edit


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


DS_BEFORE = (b'{\r\n  "train_batch_size": 8,\r\n  "train_micro_batch_size_per_gpu": 1,\r\n'
             b'  "zero_optimisation": {"stage": 1},  \r\n  "gradient_clipping": 1.0\r\n}\r\n')
DS_AFTER = DS_BEFORE.replace(b'"zero_optimisation"', b'"zero_optimization"')


def test_deepspeed_misspelled_key_is_renamed_in_place_with_crlf_and_mode_kept(tmp_path, capsys):
    config = tmp_path / "ds_config.json"
    config.write_bytes(DS_BEFORE)
    os.chmod(config, 0o640)
    code, out, err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--fix", str(config))
    assert config.read_bytes() == DS_AFTER
    assert oct(os.stat(config).st_mode & 0o777) == "0o640"
    assert "Fixed 1 finding in 1 file." in err
    assert "TL004" not in out and code == 0, out
    # run again: nothing left to fix, the file is not touched
    mtime = os.stat(config).st_mtime_ns
    code, _, err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--fix", str(config))
    assert "Fixed 0 findings in 0 files." in err and os.stat(config).st_mtime_ns == mtime and code == 0


def test_deepspeed_finding_carries_its_fix_as_a_safe_edit(tmp_path, capsys):
    config = tmp_path / "ds_config.json"
    config.write_bytes(DS_BEFORE)
    _, out, _ = run(capsys, "check", "--isolated", "--format", "json", str(config))
    (diag,) = [d for f in json.loads(out)["files"] for d in f["diagnostics"] if d["code"] == "TL004"]
    assert diag["applicability"] == "safe" and "zero_optimization" in diag["fix"]


NEOX_MODEL = b"# model\nnum_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\nmax_position_embeddings: 128\n"
NEOX_SETUP = (b"train_micro_batch_size_per_gpu: 2   # per GPU\n"
              b"'gradient_acumulation_steps': 1   # a typo NeoX refuses\n"
              b"zero_optimization: {stage: 1}\n")


def test_neox_misspelled_key_in_the_second_file_of_a_run(tmp_path, capsys):
    model, setup = tmp_path / "model.yml", tmp_path / "setup.yml"
    model.write_bytes(NEOX_MODEL)
    setup.write_bytes(NEOX_SETUP)
    run_arg = f"{model},{setup}"
    code, out, _err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--run", run_arg)
    assert "setup.yml:2:1: error TL004" in out and code == 1
    code, out, _err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--fix", "--run", run_arg)
    assert setup.read_bytes() == NEOX_SETUP.replace(b"'gradient_acumulation_steps'", b"'gradient_accumulation_steps'")
    assert model.read_bytes() == NEOX_MODEL
    assert code == 0 and "TL004" not in out, out


MEGATRON_BEFORE = b"""#!/bin/bash
GPT_ARGS=(
    --num-layers 2
    "--batch-size 4"
    --hidden-size 64
)
torchrun --nproc_per_node 1 pretrain_gpt.py \\
    "${GPT_ARGS[@]}" \\
    --num-attention-heads 4 --checkpoint-num-layers 1 \\
    --seq-length 128 --max-position-embeddings 128 \\
    --global-batch-size 8
"""
MEGATRON_AFTER = (MEGATRON_BEFORE.replace(b'"--batch-size 4"', b'"--micro-batch-size 4"')
                  .replace(b"--checkpoint-num-layers 1", b"--recompute-num-layers 1"))


def test_megatron_deprecated_flags_in_a_bash_array_and_on_a_continuation_line(tmp_path, capsys):
    script = tmp_path / "train.sh"
    script.write_bytes(MEGATRON_BEFORE)
    os.chmod(script, 0o755)
    _code, out, _ = run(capsys, "check", "--isolated", "--ignore", "TL900", str(script))
    assert "train.sh:4:6: warning TL008" in out and "train.sh:9:29: warning TL008" in out
    # `--checkpoint-num-layers` is valid in older Megatron-LM releases and Megatron-DeepSpeed, and
    # `--batch-size` in the releases before its rename to `--micro-batch-size`: with no framework source in the project (the
    # release assumed) both renames are unsafe (applied with --unsafe-fixes only; issue 28).
    _code, out, err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--fix", str(script))
    assert script.read_bytes() == MEGATRON_BEFORE
    assert "train.sh:4:6: warning TL008" in out and "train.sh:9:29: warning TL008" in out
    _code, out, err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--fix", "--unsafe-fixes", str(script))
    assert script.read_bytes() == MEGATRON_AFTER
    assert os.access(script, os.X_OK)
    assert "Fixed 2 findings in 1 file." in err and "TL008" not in out, out


def test_an_inline_value_keeps_its_value_and_a_negated_replacement_is_not_rewritten(tmp_path, capsys):
    """`--batch-size=4`: the edit renames the flag part of the word only, so the value stays
    (issue 27); `--add-bias-linear` (its replacement `--disable-bias-linear` means the opposite)
    keeps its hint only."""
    script = tmp_path / "train.sh"
    text = (b"torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
            b"--seq-length 128 --max-position-embeddings 128 --batch-size=4 --add-bias-linear\n")
    script.write_bytes(text)
    code, out, err = run(capsys, "check", "--isolated", "--ignore", "TL900", "--diff", "--unsafe-fixes", str(script))
    assert code == 1 and "Would fix 1 finding in 1 file." in err
    assert "+torchrun" in out and "--micro-batch-size=4 --add-bias-linear" in out
    assert script.read_bytes() == text


def test_diff_writes_nothing_and_exits_1_when_something_would_change(tmp_path, capsys):
    config = tmp_path / "ds_config.json"
    config.write_bytes(DS_BEFORE)
    before = os.stat(config).st_mtime_ns
    code, out, _err = run(capsys, "check", "--isolated", "--diff", str(config))
    assert code == 1
    assert out.splitlines()[:2] == [f"--- a/{config}", f"+++ b/{config}"]
    assert '-  "zero_optimisation": {"stage": 1},  ' in out.splitlines()
    assert '+  "zero_optimization": {"stage": 1},  ' in out.splitlines()
    assert config.read_bytes() == DS_BEFORE and os.stat(config).st_mtime_ns == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds_config.json"]  # no temporary file left
    # nothing to change: exit 0, no diff
    config.write_bytes(DS_AFTER)
    code, out, _ = run(capsys, "check", "--isolated", "--diff", str(config))
    assert code == 0 and out == ""


def test_unsafe_fix_needs_unsafe_fixes(tmp_path, capsys):
    """`gradient_clip` is four letters from `gradient_clipping`: a guess, not a typo."""
    config = tmp_path / "ds_config.json"
    text = b'{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_clip": 1.0}\n'
    config.write_bytes(text)
    _code, out, _ = run(capsys, "check", "--isolated", "--format", "json", str(config))
    (diag,) = [d for f in json.loads(out)["files"] for d in f["diagnostics"] if d["code"] == "TL004"]
    assert diag["applicability"] == "unsafe"
    run(capsys, "check", "--isolated", "--fix", str(config))
    assert config.read_bytes() == text
    run(capsys, "check", "--isolated", "--fix", "--unsafe-fixes", str(config))
    assert config.read_bytes() == text.replace(b"gradient_clip", b"gradient_clipping")


def test_a_fix_that_does_not_remove_its_finding_is_reverted(tmp_path, capsys, monkeypatch):
    """A wrong edit (it indents the key instead of renaming it): written, re-checked, the
    finding is still there, so the file gets its original bytes back."""
    import trainlint.files.key_edits as key_edits

    def wrong(doc, ptr, new_name):
        span = doc.key_spans[ptr]
        return (Edit(type(span)(span.line, span.column, span.line, span.column), " "),)

    monkeypatch.setattr(key_edits, "rename_key", wrong)
    config = tmp_path / "ds_config.json"
    config.write_bytes(DS_BEFORE)
    code, out, err = run(capsys, "check", "--isolated", "--fix", str(config))
    assert config.read_bytes() == DS_BEFORE
    assert "1 fix reverted because it did not remove the finding: TL004" in err
    assert "TL004" in out and code == 0  # DeepSpeed ignores an unknown key: a warning


def test_a_file_changed_after_the_check_is_not_written(tmp_path, capsys, monkeypatch):
    """The text the fixes were computed from is compared with the file just before writing."""
    import trainlint.project.fixes as fixes

    config = tmp_path / "ds_config.json"
    config.write_bytes(DS_BEFORE)
    real = fixes.collect

    def collect_then_edit(results, unsafe):
        plans = real(results, unsafe)
        config.write_bytes(DS_BEFORE + b"\n")  # an editor saves the file meanwhile
        return plans

    monkeypatch.setattr(fixes, "collect", collect_then_edit)
    code, _, err = run(capsys, "check", "--isolated", "--fix", str(config))
    assert code == 2 and "changed since trainlint checked it" in err
    assert config.read_bytes() == DS_BEFORE + b"\n"


def test_apply_defers_overlapping_fixes_and_keeps_the_first():
    from trainlint.core.diagnostics import Diagnostic, Severity
    from trainlint.project.fixes import FilePlan, Fix, _drop_overlaps, apply
    from trainlint.core.positions import Span

    def fix(line, c0, c1, content):
        d = Diagnostic("TL004", "unknown-key", Severity.ERROR, content, Span(line, c0, line, c1),
                       applicability=Applicability.SAFE, edits=(Edit(Span(line, c0, line, c1), content),))
        return Fix("f", d, d.edits)

    plan = FilePlan("f", [fix(1, 3, 6, "XYZ"), fix(1, 1, 4, "ab"), fix(2, 1, 2, "Q")])
    _drop_overlaps(plan)
    assert [f.diagnostic.message for f in plan.fixes] == ["ab", "Q"]
    assert [f.diagnostic.message for f in plan.deferred] == ["XYZ"]
    assert apply("abcdefg\nxyz", plan.fixes) == "abdefg\nQyz"


def test_derivable_batch_key_is_an_unsafe_fix(tmp_path, capsys):
    """train_batch_size = micro x accumulation x DP: the value is derivable, but setting it changes
    the batch the run trains with (and which of the three to change is a choice): unsafe."""
    config = tmp_path / "ds_config.json"
    text = (b'{\n  "train_batch_size": 100,   \n  "train_micro_batch_size_per_gpu": 4,\n'
            b'  "gradient_accumulation_steps": 2\n}\n')
    config.write_bytes(text)
    cluster = ("--nodes", "1", "--gpus-per-node", "8", "--ignore", "TL900")
    code, out, _ = run(capsys, "check", "--isolated", *cluster, "--format", "json", str(config))
    (diag,) = [d for f in json.loads(out)["files"] for d in f["diagnostics"] if d["code"] == "TL100"]
    assert diag["applicability"] == "unsafe"
    code, _, err = run(capsys, "check", "--isolated", *cluster, "--fix", str(config))
    assert config.read_bytes() == text and code == 1 and "Fixed 0 findings" in err
    code, out, err = run(capsys, "check", "--isolated", *cluster, "--fix", "--unsafe-fixes", str(config))
    assert config.read_bytes() == text.replace(b"100", b"64")
    assert code == 0 and "TL100" not in out and "Fixed 1 finding in 1 file." in err
