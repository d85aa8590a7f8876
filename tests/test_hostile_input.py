"""Hostile and nonsensical input: a clear diagnostic at the right place or a skip, never a
traceback, never a hang, and nothing in a config is ever executed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainlint.cli import main

import sys
sys.path.insert(0, str(Path(__file__).resolve().parent))


def check_json(capsys, *argv: str) -> tuple[int, dict[str, list[dict]]]:
    code = main(["check", "--isolated", "--format", "json", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    files = json.loads(out)["files"]
    return code, {Path(f["path"]).name: f["diagnostics"] for f in files}


def positions(diags: list[dict], code: str) -> list[tuple[int, int]]:
    return [(d["line"], d["column"]) for d in diags if d["code"] == code]


MEGATRON_ZERO_SIZES = (
    "python pretrain_gpt.py --tensor-model-parallel-size 0 --num-layers -2 --hidden-size 0 \\\n"
    "  --num-attention-heads 4 --micro-batch-size 0 --seq-length 128 --max-position-embeddings 128 \\\n"
    "  --global-batch-size 99999999999999999999999999999\n"
)
NEOX_ZERO_SIZES = (
    "num_layers: 0\nhidden_size: -5\nnum_attention_heads: 0\nseq_length: 0\n"
    "train_micro_batch_size_per_gpu: 0\nmodel_parallel_size: 0\npipe_parallel_size: -1\n"
)
DEEPSPEED_ZERO_SIZES = '{"train_micro_batch_size_per_gpu": 0,\n "gradient_accumulation_steps": -3,\n "train_batch_size": 0}\n'


def test_zero_and_negative_sizes_are_invalid_values_where_written(tmp_path, capsys):
    (tmp_path / "pretrain.sh").write_text(MEGATRON_ZERO_SIZES)
    (tmp_path / "neox.yml").write_text(NEOX_ZERO_SIZES)
    (tmp_path / "ds_config.json").write_text(DEEPSPEED_ZERO_SIZES)
    # with a model and a world size the estimator is reached too, and must not divide by zero
    code, found = check_json(capsys, "--nodes", "1", "--model", "llama2-7b", str(tmp_path))
    assert code == 1
    assert positions(found["pretrain.sh"], "TL006") == [(1, 53), (1, 68), (1, 85), (2, 46)]
    assert positions(found["neox.yml"], "TL006") == [(1, 13), (2, 14), (3, 22), (4, 13), (5, 33), (6, 22), (7, 21)]
    assert positions(found["ds_config.json"], "TL006") == [(1, 36), (2, 33), (3, 22)]
    for name, diags in found.items():
        assert not [d for d in diags if d["code"] in ("TL998", "TL999")], name
        tl900 = [d for d in diags if d["code"] == "TL900"]
        assert tl900 and "unusable value" in tl900[0]["message"], name


def test_estimate_reports_unusable_values_instead_of_crashing(tmp_path, capsys):
    script = tmp_path / "pretrain.sh"
    script.write_text(MEGATRON_ZERO_SIZES)
    code = main(["estimate", "--isolated", "--nodes", "1", "--model", "llama2-7b", str(script)])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    # TP 0 is already a TL006 where written (the adapter keeps no value); the batch is left to the estimator
    assert "batch.global_batch has an unusable value 99999999999999999999999999999" in out


def test_huge_numbers_nan_and_infinity(tmp_path, capsys):
    (tmp_path / "ds_config.json").write_text(
        '{"train_batch_size": 1e400, "train_micro_batch_size_per_gpu": NaN,\n'
        ' "gradient_accumulation_steps": -Infinity, "zero_optimization": {"stage": 99999999999999999999999999}}\n')
    code, found = check_json(capsys, "--nodes", "1", "--model", "llama2-7b", str(tmp_path))
    diags = found["ds_config.json"]
    assert code == 1
    assert positions(diags, "TL005") == [(1, 22), (1, 63), (2, 33)]
    assert positions(diags, "TL010") == [(1, 63), (2, 33)]
    assert positions(diags, "TL006") == [(2, 75)]


def test_command_substitutions_are_reported_and_never_run(tmp_path, capsys):
    marker = tmp_path / "PWNED"
    (tmp_path / "launch.sh").write_text(
        f"TP=$(touch {marker}; echo 4)\nX=`touch {marker}`\n"
        "python pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 2 --hidden-size 64 \\\n"
        "  --num-attention-heads 4 --micro-batch-size 1 --seq-length 128 --max-position-embeddings 128\n")
    _code, found = check_json(capsys, str(tmp_path))
    assert positions(found["launch.sh"], "TL007") == [(1, 4)]
    assert not marker.exists()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_symlink_loops_in_directories_terminate(tmp_path, capsys):
    root = tmp_path / "configs"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "up").symlink_to("..")
    (root / "self").symlink_to(".")
    (root / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 1}\n')
    code, found = check_json(capsys, str(root))
    assert code == 0 and list(found) == ["ds_config.json"]


def test_large_binary_and_badly_encoded_files(tmp_path, capsys):
    (tmp_path / "big.json").write_bytes(b'{"x": "' + b"a" * (9 * 1024 * 1024) + b'"}')
    (tmp_path / "bad_utf8.yml").write_bytes(b"train_micro_batch_size_per_gpu: 4\nname: \xff\xfe\xfa\n")
    (tmp_path / "utf16.json").write_bytes('{"train_micro_batch_size_per_gpu": 2}'.encode("utf-16"))
    (tmp_path / "blob.json").write_bytes(bytes(range(256)) * 64)
    code, found = check_json(capsys, str(tmp_path))
    # too large, and its start is nothing an adapter claims: skipped in a walk (TL001 when named)
    assert positions(found.get("big.json", []), "TL001") == []
    assert positions(found["bad_utf8.yml"], "TL001") == [(2, 7)]
    assert [d["code"] for d in found["utf16.json"]] == ["TL900"]  # read as a DeepSpeed config; no model given
    assert found["blob.json"] == []  # NUL bytes: not a config, skipped
    assert code == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_named_pipe_is_refused_not_read(tmp_path, capsys):
    pipe = tmp_path / "ds_config.json"
    os.mkfifo(pipe)
    code, found = check_json(capsys, str(pipe))  # would block forever if it were opened
    assert [(d["code"], d["line"]) for d in found["ds_config.json"]] == [("TL001", 1)]
    assert "named pipe" in found["ds_config.json"][0]["message"] and code == 1
    code, found = check_json(capsys, str(tmp_path))  # a directory walk passes it by
    assert code == 0


def test_generated_giant_command_is_cut_with_a_notice(tmp_path, capsys):
    script = tmp_path / "pretrain.sh"
    script.write_text("python pretrain_gpt.py " + " ".join(f"--num-layers {i} \\\n" for i in range(6000)) + "\n")
    _code, found = check_json(capsys, "--select", "TL012", str(script))
    assert positions(found["pretrain.sh"], "TL012") == [(2500, 2)]  # word 5001: line 1 holds four words, every later line two


def test_many_values_and_alias_bombs_stop_with_tl001(tmp_path, capsys):
    neox = "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\npipe_parallel_size: 1\nmodel_parallel_size: 1\n"
    (tmp_path / "huge.yml").write_text(neox + "".join(f"k{i}: [{i}, {{a: {i}}}]\n" for i in range(70000)))
    bomb = 'lr_x: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i in range(1, 9):
        bomb += f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]\n"
    (tmp_path / "bomb.yml").write_text(neox + bomb)
    _code, found = check_json(capsys, str(tmp_path))
    assert [(d["code"], d["line"]) for d in found["huge.yml"]] == [("TL001", 50005)]
    assert "more than 200000 values" in found["huge.yml"][0]["message"]
    assert [(d["code"], d["line"], d["column"]) for d in found["bomb.yml"]] == [("TL001", 12, 11)]
    assert "alias expansion" in found["bomb.yml"][0]["message"]


def test_json_with_too_many_values_stops_with_tl001(tmp_path, capsys):
    """A generated array of 250,000 numbers: refused where the 200,001st value starts (a DeepSpeed
    JSON has a few thousand values at most), instead of seconds of reading and hundreds of MB."""
    head = '{\n  "train_batch_size": 8,\n  "curriculum": [\n'
    (tmp_path / "ds_config.json").write_text(head + ",\n".join(str(i) for i in range(250_000)) + "\n  ]\n}\n")
    code, found = check_json(capsys, str(tmp_path / "ds_config.json"))
    diags = found["ds_config.json"]
    assert [(d["code"], d["line"], d["column"]) for d in diags] == [("TL001", 3 + 200_000 - 2, 1)]
    assert "more than 200,000 values" in diags[0]["message"]
    assert code == 1


# ============================================================== issue 20: bounded shell work

from hostile_cases import (LAUNCH, deep_expansion, deep_nesting, deep_subshells, function_bomb,  # noqa: E402
                           many_assignments, source_fan_out)


def codes_at(diags: list[dict], code: str) -> list[tuple[int, int, str]]:
    return [(d["line"], d["column"], d["severity"]) for d in diags if d["code"] == code]


def test_function_bomb_stops_following_calls_and_still_reads_the_launch_line(tmp_path, capsys):
    script = tmp_path / "bomb.sh"
    script.write_text(function_bomb())
    assert len(function_bomb()) - len(LAUNCH) < 500
    code, found = check_json(capsys, "--select", "TL012,TL101", str(script))
    diags = found["bomb.sh"]
    (tl012,) = [d for d in diags if d["code"] == "TL012"]
    assert "no longer followed" in tl012["message"] and tl012["severity"] == "error"
    # the launch line after the bomb was read: TP 2 on one GPU is TL101 at line 12
    assert [d["line"] for d in diags if d["code"] == "TL101"] == [12]
    assert code == 1


def test_source_fan_out_is_bounded(tmp_path, capsys):
    script = tmp_path / "fan.sh"
    script.write_text(source_fan_out(tmp_path))
    code, found = check_json(capsys, "--select", "TL012,TL101", str(script))
    # reported in the sourced file where following stopped
    assert [(name, d["line"]) for name, diags in found.items() for d in diags if d["code"] == "TL012"] == [("s3.sh", 25)]
    assert [d["line"] for d in found["fan.sh"] if d["code"] == "TL101"] == [2]
    assert code == 1


def test_eight_megabytes_of_assignments_are_refused_quickly(tmp_path, capsys):
    script = tmp_path / "assign.sh"
    script.write_text(many_assignments())
    code, found = check_json(capsys, str(script))
    assert codes_at(found["assign.sh"], "TL012") == [(1, 1, "error")]
    assert "not evaluate shell scripts over 1 MB" in found["assign.sh"][0]["message"] and code == 1


def test_step_budget_stops_with_tl012_where_it_stopped(tmp_path, capsys):
    from trainlint.adapters.megatron.shell import MAX_STEPS

    script = tmp_path / "steps.sh"
    script.write_text("X=1\n" * (MAX_STEPS + 10) + LAUNCH)
    code, found = check_json(capsys, str(script))
    assert codes_at(found["steps.sh"], "TL012") == [(MAX_STEPS + 1, 1, "error")]
    assert code == 1


@pytest.mark.parametrize("make, column", [(deep_nesting, 1), (deep_subshells, 1), (deep_expansion, 4)])
def test_a_thousand_levels_of_shell_nesting_is_tl002(tmp_path, capsys, make, column):
    script = tmp_path / "deep.sh"
    script.write_text(make(1000))
    code, found = check_json(capsys, str(script))
    diags = found["deep.sh"]
    assert [d for d in diags if d["code"] == "TL002" and d["severity"] == "error"], diags
    assert not [d for d in diags if d["code"] in ("TL998", "TL999")]
    assert code == 1


def test_shell_nesting_within_the_limit_is_read(tmp_path, capsys):
    script = tmp_path / "ok.sh"
    script.write_text(deep_nesting(20))
    _code, found = check_json(capsys, "--select", "TL002,TL101", str(script))
    assert [d["code"] for d in found["ok.sh"]] == ["TL101"]


def test_shell_arithmetic_wraps_at_64_bits_with_long_literals(tmp_path, capsys):
    script = tmp_path / "arith.sh"
    script.write_text("N=$((" + "9" * 4301 + " * 0 + 2 ** 65 + 4))\nM=$(( 4611686018427387904 * 8 + 2))\n"
                      + LAUNCH.replace("--num-layers 24", "--num-layers $N").replace("size 2 ", "size $M "))
    _code, found = check_json(capsys, "--select", "TL006,TL101,TL007", str(script))
    # bash: 2**65 wraps to 0, so N=4; 2^62 * 8 wraps to 0, so M=2
    assert found["arith.sh"] and [d["code"] for d in found["arith.sh"]] == ["TL101"]


def test_launch_line_after_256_kb_of_comments_is_still_read(tmp_path, capsys):
    script = tmp_path / "late.sh"
    script.write_text("# padding comment line .........................\n" * 5400 + LAUNCH)
    assert script.stat().st_size > 256 * 1024
    code, found = check_json(capsys, "--select", "TL101", str(script))
    assert [d["line"] for d in found["late.sh"]] == [5401] and code == 1


# ======================================================= issue 20: numbers, sizes, the sniffer

from hostile_cases import big_integer  # noqa: E402


def test_integers_of_any_length_are_values_not_unrecognised_files(tmp_path, capsys):
    (tmp_path / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 4,\n "train_batch_size": '
                                             + big_integer(4301) + "}\n")
    (tmp_path / "neox.yml").write_text("num_layers: " + big_integer(4301) + "\nhidden_size: 2048\n"
                                       "num_attention_heads: 16\nseq_length: 2048\nmax_position_embeddings: 2048\n"
                                       "model_parallel_size: 1\npipe_parallel_size: 1\n")
    (tmp_path / "neox4000.yml").write_text("num_layers: " + big_integer(4000) + "\nhidden_size: 2048\n"
                                           "num_attention_heads: 16\nseq_length: 2048\n")
    code, found = check_json(capsys, str(tmp_path))
    assert set(found) == {"ds_config.json", "neox.yml", "neox4000.yml"}  # every file recognised
    assert positions(found["ds_config.json"], "TL100") == [(2, 22)]
    for name, diags in found.items():
        assert not [d for d in diags if d["code"] in ("TL998", "TL999")], name
    unusable = [d["message"] for d in found["neox.yml"] if "unusable value" in d["message"]]
    assert unusable and len(unusable[0]) < 400  # the value is shortened in the message
    assert code == 1


def _clamped_products(tmp_path: Path) -> Path:
    """Configs whose rules and estimates multiply clamped values: 4,400-digit micro batch and
    accumulation (their product has 8,600 digits, past Python's int-to-text limit)."""
    big = big_integer(4400)
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 7,\n "train_micro_batch_size_per_gpu": '
                                             f'{big},\n "gradient_accumulation_steps": {big}}}\n')
    (tmp_path / "neox.yml").write_text(f"num_layers: {big}\nhidden_size: {big}\nnum_attention_heads: {big}\n"
                                       "seq_length: 2048\nmax_position_embeddings: 2048\n"
                                       f"train_micro_batch_size_per_gpu: {big}\ngradient_accumulation_steps: {big}\n"
                                       "train_batch_size: 7\n")
    (tmp_path / "train.sh").write_text(f"torchrun pretrain_gpt.py --num-layers {big} --hidden-size {big} "
                                       f"--num-attention-heads 32 --seq-length 2048 --max-position-embeddings 2048 "
                                       f"--micro-batch-size {big} --global-batch-size 7 --tensor-model-parallel-size {big}\n")
    return tmp_path


LONG_DIGITS = __import__("re").compile(r"\d{31,}")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown"])
def test_products_of_clamped_values_are_findings_in_every_format(tmp_path, capsys, fmt):
    """TL100 quotes micro x accumulation: a product of two clamped values is a finding whose
    numbers are named by their length, not a TL998 (ValueError from int-to-text)."""
    root = _clamped_products(tmp_path)
    code = main(["check", "--isolated", "--format", fmt, str(root)])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    assert "TL998" not in out and "TL999" not in out and "Exceeds the limit" not in out + err
    assert not LONG_DIGITS.search(out)  # no number of thousands of digits in any output
    assert "TL100" in out
    if fmt != "markdown":  # markdown is a summary table by code
        assert "8,600-digit number" in out
        for name in ("ds_config.json", "neox.yml", "train.sh"):
            assert name in out


def test_products_of_clamped_values_in_estimate(tmp_path, capsys):
    root = _clamped_products(tmp_path)
    for fmt in ("text", "json"):
        for name in ("ds_config.json", "neox.yml", "train.sh"):
            code = main(["estimate", "--isolated", "--gpu", "h100-80gb", "--format", fmt, str(root / name)])
            out, err = capsys.readouterr()
            assert code == 1 and "Traceback" not in err and "Exceeds the limit" not in out + err, (fmt, name, err)
            assert "unusable value" in out + err and not LONG_DIGITS.search(out + err), (fmt, name)


def test_long_numbers_raises_the_limit_only_inside_and_read_int_never_relies_on_it():
    import sys as system
    import threading

    from trainlint.core.numbers import HUGE, LONG_TEXT_DIGITS, long_numbers, read_int, shorten_numbers

    before = system.get_int_max_str_digits()
    product = HUGE * HUGE
    with pytest.raises(ValueError):
        str(product)
    with long_numbers():
        with long_numbers():  # nested (the estimator inside a rule)
            assert shorten_numbers(f"{product}") == "a 8,600-digit number"
        assert len(str(product)) == 8600  # still raised: the outer one is not done
        # another thread that ends its own use does not put the limit back under this one
        done = threading.Event()

        def use():
            with long_numbers():
                pass
            done.set()

        threading.Thread(target=use).start()
        assert done.wait(10)
        assert len(str(product)) == 8600
        assert system.get_int_max_str_digits() == LONG_TEXT_DIGITS
    assert system.get_int_max_str_digits() == before
    # read_int is linear whatever the limit: 8 MB of digits clamps without int()
    assert read_int("9" * 8_000_000) == HUGE and read_int("-" + "1" * 5000) == -HUGE
    with pytest.raises(ValueError):
        read_int("9" * 5000 + "x")
    assert read_int(" 42 ") == 42


def test_sparse_two_gigabyte_file_is_not_read_whole(tmp_path, capsys):
    import resource

    path = tmp_path / "train.sh"
    with open(path, "wb") as handle:
        handle.write(b"# trainlint: noqa\n")
        handle.truncate(2 * 1024 ** 3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, found = check_json(capsys, str(path))
    assert [d["code"] for d in found["train.sh"]] == ["TL001"] and code == 1
    # ru_maxrss is in KiB on Linux: the run must not have grown by anything like 2 GB
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024


def test_side_reads_go_through_the_size_limit(tmp_path):
    from trainlint.files.sources import MAX_FILE_BYTES, read_text_lenient

    path = tmp_path / "big.sh"
    with open(path, "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    assert read_text_lenient(path) is None and read_text_lenient(tmp_path) is None
    assert read_text_lenient(tmp_path / "missing") is None


def test_large_files_no_adapter_claims_are_skipped_in_a_walk(tmp_path, capsys):
    vocab = '{"version": "1.0", "model": {"vocab": {' + ",".join(f'"t{i}": {i}' for i in range(900_000)) + "}}}\n"
    (tmp_path / "tokenizer.json").write_text(vocab)
    (tmp_path / "embeddings.json").write_text('{"rows": [' + ",".join("0.5" for _ in range(2_300_000)) + "]}\n")
    (tmp_path / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 4}\n')
    assert (tmp_path / "tokenizer.json").stat().st_size > 8 * 1024 * 1024
    assert (tmp_path / "embeddings.json").stat().st_size > 8 * 1024 * 1024
    code, found = check_json(capsys, "--select", "TL001", str(tmp_path))
    assert not any(found.values()) and code == 0
    # named explicitly, a too-large file is still TL001
    code, found = check_json(capsys, str(tmp_path / "embeddings.json"))
    assert [d["code"] for d in found["embeddings.json"]] == ["TL001"] and code == 1


# ================================================ issue 20: source and included files stay inside

def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "scripts").mkdir()
    return repo


def test_source_outside_the_repository_is_not_read_nor_quoted(tmp_path, capsys):
    repo = _repo(tmp_path)
    secrets = tmp_path / "home" / "secrets.sh"
    secrets.parent.mkdir()
    secrets.write_text("TP=SECRET_TOKEN_123\n")
    (repo / "common.sh").write_text("PP=1\n")
    script = repo / "scripts" / "train.sh"
    script.write_text(f"source {secrets}\nsource ../common.sh\n"
                      + LAUNCH.replace("size 2 ", "size $TP ").replace("--num-layers", "--pipeline-model-parallel-size $PP --num-layers"))
    _code = main(["check", "--isolated", "--format", "json", str(script)])
    out, err = capsys.readouterr()
    assert "SECRET_TOKEN_123" not in out and "SECRET_TOKEN_123" not in err
    diags = [d for f in json.loads(out)["files"] for d in f["diagnostics"]]
    outside = [d for d in diags if d["code"] == "TL012" and "outside the project" in d["message"]]
    assert [(d["line"], d["column"]) for d in outside] == [(1, 8)]
    assert str(repo) in outside[0]["message"] and "source-roots" in outside[0]["message"]
    # the file inside the repository was read: PP=1 is known (no TL007 for it)
    assert not [d for d in diags if d["code"] == "TL007" and "$PP" in d["message"]]


def test_source_roots_in_the_project_config_allow_more(tmp_path, capsys, monkeypatch):
    """A repository's own source-roots reach outside its checkout only when the user trusts the
    project (issue 29, S3: else `source-roots = ["/"]` reopens every file); here --allow-plugins."""
    repo = _repo(tmp_path)
    shared = tmp_path / "cluster"
    shared.mkdir()
    (shared / "env.sh").write_text("TP=4\n")
    (repo / ".trainlint.toml").write_text('source-roots = ["../cluster"]\n')
    script = repo / "scripts" / "train.sh"
    script.write_text(f"source {shared / 'env.sh'}\n" + LAUNCH.replace("size 2 ", "size $TP "))
    monkeypatch.chdir(repo)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("TRAINLINT_ALLOW_PLUGINS", raising=False)
    assert _outside_tl012(capsys, str(script)) == [(1, 8)]
    _code = main(["check", "--format", "json", "--select", "TL012,TL007", "--allow-plugins", str(script)])
    out = capsys.readouterr().out
    assert [d for f in json.loads(out)["files"] for d in f["diagnostics"]] == []


def _outside_tl012(capsys, *argv: str) -> list[tuple[int, int]]:
    main(["check", "--format", "json", "--select", "TL012,TL007", *argv])
    out = capsys.readouterr().out
    diags = [d for f in json.loads(out)["files"] for d in f["diagnostics"]]
    return [(d["line"], d["column"]) for d in diags if d["code"] == "TL012" and "outside the project" in d["message"]]


def test_source_roots_follow_isolated(tmp_path, capsys, monkeypatch):
    """--isolated: no project config, so its source-roots do not widen what is read."""
    repo = _repo(tmp_path)
    shared = tmp_path / "cluster"
    shared.mkdir()
    (shared / "env.sh").write_text("TP=4\n")
    (repo / ".trainlint.toml").write_text('source-roots = ["../cluster"]\n')
    script = repo / "scripts" / "train.sh"
    script.write_text(f"source {shared / 'env.sh'}\n" + LAUNCH.replace("size 2 ", "size $TP "))
    monkeypatch.chdir(repo)  # trusted (--allow-plugins, the config at or below the current directory)
    assert _outside_tl012(capsys, "--allow-plugins", str(script)) == []
    assert _outside_tl012(capsys, "--allow-plugins", "--isolated", str(script)) == [(1, 8)]
    assert _outside_tl012(capsys, "--isolated", "-j", "2", str(script), str(script.parent)) == [(1, 8)]


def test_source_roots_follow_an_explicit_config(tmp_path, capsys, monkeypatch):
    """--config FILE: its source-roots apply (relative to FILE), not those of the config found
    above the script."""
    repo = _repo(tmp_path)
    shared = tmp_path / "cluster"
    shared.mkdir()
    (shared / "env.sh").write_text("TP=4\n")
    script = repo / "scripts" / "train.sh"
    script.write_text(f"source {shared / 'env.sh'}\n" + LAUNCH.replace("size 2 ", "size $TP "))
    ci = tmp_path / "ci"
    ci.mkdir()
    (ci / "allow.toml").write_text('source-roots = ["../cluster"]\n')
    (ci / "plain.toml").write_text('select = ["TL"]\n')
    assert _outside_tl012(capsys, str(script)) == [(1, 8)]  # the repository has no config
    assert _outside_tl012(capsys, "--config", str(ci / "allow.toml"), str(script)) == []
    # the repository's own config allows it, only when trusted (--allow-plugins, in the checkout);
    # an explicit config that does not, wins
    (repo / ".trainlint.toml").write_text('source-roots = ["../cluster"]\n')
    assert _outside_tl012(capsys, str(script)) == [(1, 8)]
    monkeypatch.chdir(repo)
    assert _outside_tl012(capsys, "--allow-plugins", str(script)) == []
    assert _outside_tl012(capsys, "--allow-plugins", "--config", str(ci / "plain.toml"), str(script)) == [(1, 8)]


def test_deepspeed_config_outside_the_repository_is_not_read(tmp_path, capsys):
    repo = _repo(tmp_path)
    outside = tmp_path / "etc" / "ds.json"
    outside.parent.mkdir()
    outside.write_text('{"SECRET_KEY_NAME_XYZ": 1, "train_micro_batch_size_per_gpu": 4}\n')
    script = repo / "scripts" / "train.sh"
    script.write_text(LAUNCH.strip() + f" --deepspeed --deepspeed_config {outside}\n")
    main(["check", "--isolated", "--format", "json", str(script)])
    out = capsys.readouterr().out
    assert "SECRET_KEY_NAME_XYZ" not in out
    diags = [d for f in json.loads(out)["files"] for d in f["diagnostics"]]
    assert [d["code"] for d in diags if "outside the project" in d["message"]] == ["TL012"]
