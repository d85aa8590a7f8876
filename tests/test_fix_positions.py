"""Issue 27: every word has its place, and a fix edits only its word.

Golden fix cases: each fixable flag finding (TL004's did-you-mean, TL008's one-to-one rename) in
every shell style a launch script writes its flags in, the finding at its word's line and column
and ``check --fix --unsafe-fixes`` changing exactly that word; DeepSpeed JSON (also written by a
here-document) and NeoX YAML (block and flow) key renames. Then the check that refuses a fix
changing what it does not name, and the language server's quick fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.cli import main

CONTINUED = '''GPT_ARGS=" \\
    --num-layers 24 \\
    --hiden-size 1024 \\
    --num-attention-heads 16 \\
    --checkpoint-activations \\
    --fp16"
torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS
'''
SINGLE = '''GPT_ARGS="--num-layers 24 --hiden-size 1024 --num-attention-heads 16 --checkpoint-activations --fp16"
torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS
'''
ARRAY = '''GPT_ARGS=(
    --num-layers 24
    --hiden-size 1024 --num-attention-heads 16
    --checkpoint-activations --fp16
)
torchrun --nproc_per_node 8 pretrain_gpt.py "${GPT_ARGS[@]}"
'''
DEFAULTS = '''RECOMPUTE=${RECOMPUTE:-"--checkpoint-activations"}
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 ${SIZE:---hiden-size 1024} $RECOMPUTE --fp16
'''
ESCAPED = '''CMD="torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 \\"--hiden-size\\" 1024 \\
  --checkpoint-activations --fp16"
eval $CMD
'''
UNQUOTED = '''torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 \\
    --hiden-size 1024 --checkpoint-activations \\
    --fp16
'''
INLINE = '''GPT_ARGS="--num-layers=24 --hiden-size=1024 --num-attention-heads=16 \\
  --checkpoint-activations --fp16"
torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS
'''

STYLES = {"--flag=value": INLINE, "continued string": CONTINUED, "single-line string": SINGLE, "array": ARRAY,
          "${VAR:-default}": DEFAULTS, "eval'd string with escapes": ESCAPED, "command line": UNQUOTED}
WORDS = {"TL004": ("--hiden-size", "--hidden-size"), "TL008": ("--checkpoint-activations", "--recompute-activations")}


def _findings(capsys, *argv: str) -> list[dict]:
    main(["check", "--isolated", "--format", "json", *argv])
    out = json.loads(capsys.readouterr().out)
    return [dict(d, path=f["path"]) for f in out["files"] for d in f["diagnostics"]]


def _place(text: str, word: str) -> tuple[int, int]:
    """Line and column (1-based) of the one occurrence of ``word`` in ``text``."""
    assert text.count(word) == 1, word
    offset = text.index(word)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("code", sorted(WORDS))
def test_flag_finding_is_at_its_word_and_its_fix_changes_only_that_word(tmp_path, capsys, style, code):
    text = STYLES[style]
    old, new = WORDS[code]
    script = tmp_path / "run.sh"
    script.write_text(text)
    (finding,) = [d for d in _findings(capsys, str(script)) if d["code"] == code]
    assert (finding["line"], finding["column"]) == _place(text, old)
    if old + "=" not in text:  # `--flag=value` is one word: the finding spans it, the fix its flag
        assert (finding["end_line"], finding["end_column"]) == (finding["line"], finding["column"] + len(old))
    main(["check", "--isolated", "--fix", "--unsafe-fixes", "--select", code, str(script)])
    capsys.readouterr()
    assert script.read_text() == text.replace(old, new)


def test_a_word_used_through_a_variable_names_the_use_site(tmp_path, capsys):
    script = tmp_path / "run.sh"
    script.write_text(CONTINUED)
    (finding,) = [d for d in _findings(capsys, str(script)) if d["code"] == "TL004"]
    (use,) = finding["related"]
    assert (use["line"], use["column"]) == _place(CONTINUED, "$GPT_ARGS")


def test_sourced_file_word_is_found_and_fixed_where_it_is_written(tmp_path, capsys):
    args = tmp_path / "args.sh"
    args.write_text(CONTINUED.split("torchrun")[0])
    script = tmp_path / "run.sh"
    script.write_text("source ./args.sh\ntorchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS\n")
    (finding,) = [d for d in _findings(capsys, str(script)) if d["code"] == "TL004"]
    assert Path(finding["path"]).name == "args.sh"
    assert (finding["line"], finding["column"]) == _place(args.read_text(), "--hiden-size")
    before = args.read_text()
    main(["check", "--isolated", "--fix", "--select", "TL004", str(script)])
    capsys.readouterr()
    assert args.read_text() == before.replace("--hiden-size", "--hidden-size")


def test_arg_value_finding_is_at_the_positional_parameter_and_has_no_edit(tmp_path, capsys):
    text = "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 $1 1024 --fp16\n"
    script = tmp_path / "run.sh"
    script.write_text(text)
    (finding,) = [d for d in _findings(capsys, "--arg=--hiden-size", str(script)) if d["code"] == "TL004"]
    assert (finding["line"], finding["column"]) == _place(text, "$1")
    main(["check", "--isolated", "--fix", "--arg=--hiden-size", str(script)])
    capsys.readouterr()
    assert script.read_text() == text  # the word is on trainlint's command line, not in the file


HEREDOC = '''cat <<EOT > ds_config.json
{
  "train_micro_batch_size_per_gpu": 1,
  "zero_optimisation": {"stage": 1}
}
EOT
deepspeed pretrain_gpt.py --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --deepspeed --deepspeed_config ds_config.json
'''
DS_JSON = '{\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimisation": {"stage": 1},\n  "bfloat16": {"enabled": true}\n}\n'
NEOX_BLOCK = ("num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\nmax_position_embeddings: 128\n"
              "train_micro_batch_size_per_gpu: 2\ngradient_acumulation_steps: 1\n")
NEOX_FLOW = ("{num_layers: 2, hidden_size: 64, num_attention_heads: 4, seq_length: 128,\n"
             " max_position_embeddings: 128, train_micro_batch_size_per_gpu: 2, gradient_acumulation_steps: 1}\n")
NEOX_DASHES = ("num-layers: 2\nhidden-size: 64\nnum-attention-heads: 4\nseq-length: 128\nmax-position-embeddings: 128\n"
               "train-micro-batch-size-per-gpu: 2\ngradient-acumulation-steps: 1\n")
KEYS = {
    "neox yaml dashes": ("neox.yml", NEOX_DASHES, "gradient-acumulation-steps", "gradient-accumulation-steps"),
    "here-document": ("run.sh", HEREDOC, "zero_optimisation", "zero_optimization"),
    "deepspeed json": ("ds_config.json", DS_JSON, "zero_optimisation", "zero_optimization"),
    "neox yaml block": ("neox.yml", NEOX_BLOCK, "gradient_acumulation_steps", "gradient_accumulation_steps"),
    "neox yaml flow": ("neox.yml", NEOX_FLOW, "gradient_acumulation_steps", "gradient_accumulation_steps"),
}


@pytest.mark.parametrize("case", sorted(KEYS))
def test_key_finding_is_at_its_key_and_its_fix_renames_only_that_key(tmp_path, capsys, case):
    name, text, old, new = KEYS[case]
    config = tmp_path / name
    config.write_text(text)
    (finding,) = [d for d in _findings(capsys, str(config)) if d["code"] == "TL004"]
    line, column = _place(text, old)
    quoted = text[text.index(old) - 1] == '"'
    assert (finding["line"], finding["column"]) == (line, column - 1 if quoted else column)
    main(["check", "--isolated", "--fix", "--unsafe-fixes", "--select", "TL004", str(config)])
    capsys.readouterr()
    assert config.read_text() == text.replace(old, new)


def test_a_fix_that_would_drop_other_flags_is_refused_with_the_reason(tmp_path, capsys):
    """The edit ``check --fix`` used to make (the whole continued string replaced by the new flag):
    the check reads the fixed script again and finds the other flags gone."""
    from trainlint.project import fix_check
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_file
    from trainlint.core.diagnostics import Edit
    from trainlint.core.positions import Span

    script = tmp_path / "run.sh"
    script.write_text(CONTINUED)
    result = check_file(str(script), builtin_adapters())
    whole = Edit(Span(1, 10, 6, 12), '"--hidden-size"')
    after = CONTINUED.replace(CONTINUED[CONTINUED.index('" \\'):CONTINUED.index('--fp16"') + 7], '"--hidden-size"')
    refusal = fix_check.check_edits([result], str(script), CONTINUED, after, [whole], builtin_adapters(), {})
    assert refusal is not None
    said = str(refusal)
    assert "`--fp16` would no longer be set" in said and "`--num-layers` would no longer be set" in said
    # the word-only edit passes the same check
    word = Edit(Span(3, 5, 3, 17), "--hidden-size")
    fixed = CONTINUED.replace("--hiden-size", "--hidden-size")
    assert fix_check.check_edits([result], str(script), CONTINUED, fixed, [word], builtin_adapters(), {}) is None


def test_check_fix_refuses_a_fix_that_changes_another_setting_and_says_why(tmp_path, capsys, monkeypatch):
    """A finding whose edit covers more than its word (as the old reader made them) is refused by
    ``check --fix``: nothing is written and stderr names the fix and what it would change."""
    from dataclasses import replace

    from trainlint.adapters.megatron import flags
    from trainlint.core.diagnostics import Edit
    from trainlint.core.positions import Span

    script = tmp_path / "run.sh"
    script.write_text(CONTINUED)
    real = flags.ArgReader._diag

    def too_wide(self, code, message, loc, *args, **kwargs):
        real(self, code, message, loc, *args, **kwargs)
        d = self.out.diagnostics[-1]
        if d.edits:
            self.out.diagnostics[-1] = replace(d, edits=(Edit(Span(1, 10, 6, 12), f'"{d.edits[0].content}"', d.path),))

    monkeypatch.setattr(flags.ArgReader, "_diag", too_wide)
    main(["check", "--isolated", "--fix", "--unsafe-fixes", "--select", "TL004", str(script)])
    err = capsys.readouterr().err
    assert script.read_text() == CONTINUED
    assert "refused the fix of TL004 at" in err and "`--fp16` would no longer be set" in err, err


def test_sarif_carries_only_fixes_that_check_fix_would_apply(tmp_path, capsys, monkeypatch):
    """SARIF ``fixes`` are edits another tool may apply without trainlint: a fix ``--fix`` would
    refuse is not among them (its text stays, with the reason), and the word-only fix is."""
    import json
    from dataclasses import replace

    from trainlint.adapters.megatron import flags
    from trainlint.core.diagnostics import Edit
    from trainlint.core.positions import Span

    script = tmp_path / "run.sh"
    script.write_text(CONTINUED)

    def sarif_results() -> list[dict]:
        main(["check", "--isolated", "--format", "sarif", "--select", "TL004", str(script)])
        return [r for r in json.loads(capsys.readouterr().out)["runs"][0]["results"] if r["ruleId"] == "TL004"]

    (good,) = sarif_results()
    (replacement,) = good["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["insertedContent"]["text"] == "--hidden-size"
    real = flags.ArgReader._diag

    def too_wide(self, code, message, loc, *args, **kwargs):
        real(self, code, message, loc, *args, **kwargs)
        d = self.out.diagnostics[-1]
        if d.edits:
            self.out.diagnostics[-1] = replace(d, edits=(Edit(Span(1, 10, 6, 12), f'"{d.edits[0].content}"', d.path),))

    monkeypatch.setattr(flags.ArgReader, "_diag", too_wide)
    (bad,) = sarif_results()
    assert "fixes" not in bad
    assert "not applied by --fix" in bad["message"]["text"] and "`--fp16` would no longer be set" in bad["message"]["text"]
    assert script.read_text() == CONTINUED


def test_the_language_server_offers_the_word_edit_and_refuses_a_wider_one(tmp_path):
    from dataclasses import replace

    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_file
    from trainlint.core.diagnostics import Edit
    from trainlint.lsp.actions import _refused
    from trainlint.lsp.workspace import Linted
    from trainlint.core.positions import Span

    script = tmp_path / "run.sh"
    script.write_text(CONTINUED)
    result = check_file(str(script), builtin_adapters())

    class Session:
        adapters = builtin_adapters()
        environment: dict = {}

    linted = Linted(str(script), 1, CONTINUED, result, Session())
    (diag,) = [d for d in result.diagnostics if d.code == "TL004"]
    assert [(e.span, e.content) for e in diag.edits] == [(Span(3, 5, 3, 17), "--hidden-size")]
    assert not _refused(diag, linted)
    wide = replace(diag, edits=(Edit(Span(1, 10, 6, 12), '"--hidden-size"'),))
    assert _refused(wide, linted)
