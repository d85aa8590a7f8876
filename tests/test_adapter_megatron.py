"""Golden tests for the Megatron-LM adapter: exact (code, line, column), spec values and provenance."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.adapters.base import BY_CONTENT, NOT_MINE, LoadContext
from trainlint.adapters.megatron import MegatronAdapter, load_argv
from trainlint.core.provenance import Origin
from trainlint.schemas import load_schema
from trainlint.files.sources import SourceText, read_source

FIX = Path(__file__).resolve().parent / "fixtures" / "megatron"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "megatron_gpt_8b.sh"
ADAPTER = MegatronAdapter()


def load(name: str, **env: str):
    return ADAPTER.load(read_source(FIX / name), LoadContext(environment=env))


def load_text(text: str, name: str = "inline.sh"):
    return ADAPTER.load(SourceText(str(FIX / name), text), LoadContext())


def codes(result) -> list[tuple[str, int, int]]:
    return [(d.code, d.line, d.column) for d in result.diagnostics]


def where(value) -> tuple[str, int, int]:
    prov = value.provenance
    return Path(prov.path).name, prov.span.line, prov.span.column


# ------------------------------------------------------------------------------ schema


def test_schema_has_megatron_arguments_with_real_defaults():
    props = load_schema("megatron")["properties"]
    assert props["num_layers"]["x-flags"] == ["--num-layers"]
    assert props["tensor_model_parallel_size"]["default"] == 1
    assert props["recompute_granularity"]["enum"] == ["full", "selective", None]
    assert props["attention_backend"]["default"] == "auto"
    assert props["swiglu"]["x-action"] == "store_true"
    assert props["rampup_batch_size"]["x-nargs"] == 3
    assert props["checkpoint_activations"]["x-deprecated"]["status"] == "exits"
    assert props["zero_stage"]["x-dialect"] == ["megatron-deepspeed", "legacy"]
    assert props["deepspeed_config"]["x-flags"] == ["--deepspeed_config"]
    assert props["checkpoint_num_layers"]["x-deprecated"]["replacement"] == "--recompute-num-layers"
    assert len(props) > 1000


# ------------------------------------------------------------------------------- sniff


@pytest.mark.parametrize("text,expected", [
    ("torchrun pretrain_gpt.py --num-layers 2\n", BY_CONTENT + 20),
    ("ARGS='--tensor-model-parallel-size 2 --num-layers 4 --micro-batch-size 1'\n", BY_CONTENT + 10),
    ("deepspeed main.py --per_device_train_batch_size 4 --model_name_or_path x\n", NOT_MINE),
    ("echo hello\n", NOT_MINE),
])
def test_sniff_shell(text, expected):
    assert ADAPTER.sniff("run.sh", text) == expected


def test_sniff_yaml():
    assert ADAPTER.sniff("model_config.yaml", (FIX / "model_config.yaml").read_text()) == BY_CONTENT + 10
    assert ADAPTER.sniff("neox.yml", '{"num-layers": 2, "hidden-size": 64}\n') == NOT_MINE


# -------------------------------------------------------------------- basic constructs


def test_basic_script_spec_and_provenance():
    result = load("basic.sh")
    assert codes(result) == []
    (spec,) = result.specs
    assert spec.label == "pretrain_gpt.py at line 22"
    # a value that came through a variable points at the literal where the variable got it
    assert spec.value("model.num_layers") == 24 and where(spec.model.num_layers) == ("basic.sh", 7, 8)
    assert "line 11, column 5" in spec.model.num_layers.provenance.note
    assert spec.value("model.hidden_size") == 2048 and where(spec.model.hidden_size) == ("basic.sh", 12, 19)
    assert spec.value("model.seq_length") == 4096
    # $(( (WORLD / 8) )) with WORLD=$((GPUS_PER_NODE * NNODES)) and GPUS_PER_NODE=${GPUS_PER_NODE:-8}
    assert spec.value("parallel.pipeline") == 2 and where(spec.parallel.pipeline) == ("basic.sh", 6, 4)
    assert spec.value("parallel.tensor") == 4
    assert spec.value("cluster.gpus_per_node") == 8 and spec.value("cluster.nodes") == 2
    assert spec.value("cluster.world_size") == 16
    assert spec.value("parallel.data") == 2 and spec.parallel.data.provenance.origin is Origin.DERIVED
    # word splitting of an unquoted string variable
    assert spec.value("batch.micro_batch") == 2 and where(spec.batch.micro_batch) == ("basic.sh", 19, 27)
    assert spec.value("batch.global_batch") == 256 and spec.value("batch.grad_accum") == 64
    # "--fp8-format hybrid" in one array element, split by the unquoted expansion
    assert spec.value("precision.fp8") == "hybrid" and where(spec.precision.fp8) == ("basic.sh", 20, 31)
    assert spec.value("precision.dtype") == "bf16"
    # the commented-out "--num-layers 48" is ignored, the appended --swiglu is read
    assert spec.value("model.gated_mlp") is True
    assert spec.value("model.ffn_hidden_size") == 5440  # int(4 * 2048 * 2/3 / 64) * 64
    assert spec.value("parallel.context") == 1
    assert spec.parallel.context.provenance.note == "Megatron-LM default (megatron/training/arguments.py)"
    assert spec.settings["train_iters"].value == 1000
    assert result.documents[0].data["num_layers"] == 24


def test_environment_from_project_config_overrides_default():
    spec = load("basic.sh", GPUS_PER_NODE="4").specs[0]
    assert spec.value("cluster.gpus_per_node") == 4
    assert spec.value("parallel.pipeline") == 1
    assert spec.cluster.gpus_per_node.provenance.origin is Origin.PROJECT_CONFIG


# ---------------------------------------------------------------------------- problems


def test_problem_flags_golden():
    result = load("problems.sh")
    assert codes(result) == [
        ("TL007", 2, 6),    # CKPT=$1, used by --train-iters
        ("TL004", 4, 5),    # --num-layer -> --num-layers
        ("TL004", 5, 5),    # --num_attention_heads: argparse matches exactly
        ("TL005", 6, 19),   # --hidden-size abc
        ("TL006", 8, 25),   # --attention-backend flashy
        ("TL011", 10, 5),   # --micro-batch-size twice
        ("TL008", 11, 5),   # --checkpoint-activations: Megatron exits
        ("TL008", 12, 5),   # --batch-size: assert
        ("TL008", 13, 5),   # --use-mcore-models: deprecated (warning)
        ("TL007", 15, 26),  # $(nproc)
    ]
    by_code = {(d.code, d.line): d for d in result.diagnostics}
    assert "did you mean `--num-layers`" in by_code[("TL004", 4)].message
    assert "`--num-attention-heads`" in by_code[("TL004", 5)].message
    # refused by the upstream release assumed (no source in the project), read by releases before 2022
    assert by_code[("TL008", 11)].severity.value == "warning"
    assert "--recompute-activations" in by_code[("TL008", 11)].message and "assumed" in by_code[("TL008", 11)].message
    assert by_code[("TL008", 13)].severity.value == "warning"
    assert by_code[("TL011", 10)].related[0].span.line == 9
    assert "did you mean `flash`" in by_code[("TL006", 8)].message
    spec = result.specs[0]
    assert spec.value("batch.micro_batch") == 2            # last one wins
    assert spec.value("model.seq_length") == 2048           # --seq-length=2048
    assert spec.value("model.num_attention_heads") == 16    # underscore spelling still read
    assert spec.model.hidden_size is None                   # invalid value: left unset
    assert "train_iters" not in spec.settings and spec.run.train_iters is None  # $1: never guessed
    assert result.documents[0].unresolved["/train_iters"].startswith("$1")


def test_unknown_flag_on_custom_entry_point_is_information():
    # my_train.py adds arguments of its own, which trainlint could not read: nothing to act on (issue 28)
    result = load_text("python my_train.py --num-layers 2 --hidden-size 8 --my-own-flag 3\n")
    (diag,) = result.diagnostics
    assert (diag.code, diag.line, diag.column, diag.severity.value) == ("TL004", 1, 51, "info")
    assert "my_train.py may add them" in diag.message and "not judged" in diag.message


def test_unquoted_array_splits_a_quoted_value():
    text = 'A=(--micro-batch-size 1 --step-batch-size-schedule "0:16 1B:32")\ntorchrun pretrain_gpt.py ${A[@]}\n'
    result = load_text(text)
    assert codes(result) == [("TL004", 1, 58)]
    assert "unquoted expansion" in result.diagnostics[0].message
    ok = load_text(text.replace("${A[@]}", '"${A[@]}"'))
    assert codes(ok) == []
    assert ok.specs[0].settings["step_batch_size_schedule"].value == "0:16 1B:32"


# ---------------------------------------------------- several invocations and branches


def test_several_invocations_branches_source_eval_and_loops():
    result = load("multi.sh")
    assert [s.label for s in result.specs] == [
        "pretrain_gpt.py at line 15", "pretrain_bert.py at line 17", "pretrain_t5.py at line 19"]
    # The loop variable feeds only --seed, which no estimate or check uses: no TL007 for it.
    assert codes(result) == [("TL012", 18, 1)]
    gpt, bert, t5 = result.specs
    # sourced file: positions point into conf/model.sh
    assert where(gpt.model.num_layers) == ("model.sh", 1, 26)
    # `if` decided statically (MODE defaults to small); `case $2` read as the script run without
    # arguments: $2 is empty, so the `*)` branch
    assert gpt.value("parallel.tensor") == 1 and where(gpt.parallel.tensor) == ("multi.sh", 5, 8)
    assert gpt.value("batch.micro_batch") == 4
    # eval of a known string: the deepspeed launcher and the redirections after it
    assert gpt.value("cluster.gpus_per_node") == 4 and gpt.value("cluster.world_size") == 4
    # "${cmd[@]}" with python -m torch.distributed.launch
    assert bert.value("cluster.gpus_per_node") == 2 and bert.value("model.architecture") == "bert"
    assert t5.value("cluster.world_size") == 8
    assert "seed" not in t5.settings


def test_if_condition_unknown_follows_first_branch():
    text = 'if [ "$1" == "big" ]; then\n  L=48\nelse\n  L=24\nfi\npython pretrain_gpt.py --num-layers $L --hidden-size 8\n'
    result = load_text(text)
    assert codes(result) == [("TL012", 1, 1)]
    assert result.specs[0].value("model.num_layers") == 48
    assert "could not decide" in result.specs[0].model.num_layers.provenance.note
    assert result.specs[0].model.num_layers.provenance.uncertain
    assert not result.specs[0].model.hidden_size.provenance.uncertain


def test_eval_of_unknown_string():
    result = load_text('eval "$RUN" --num-layers 2\npython pretrain_gpt.py --num-layers 2 --hidden-size 8\n')
    assert codes(result) == [("TL012", 1, 1)]


# -------------------------------------------------------------------- DeepSpeed configs


def test_deepspeed_config_merged_with_its_positions():
    pytest.importorskip("trainlint.adapters.deepspeed.adapter")
    result = load("deepspeed.sh")
    assert [d for d in result.diagnostics if d.severity.value == "error"] == []
    assert codes(result) == []  # legacy dialect: --model-parallel-size, --batch-size, --checkpoint-activations valid
    (spec,) = result.specs
    assert spec.sources[1].endswith("ds_config.json")
    assert spec.value("parallel.tensor") == 2 and spec.parallel.tensor.provenance.key == "--model-parallel-size"
    assert spec.value("batch.micro_batch") == 4 and spec.batch.micro_batch.provenance.key == "--batch-size"
    assert spec.value("parallel.zero_stage") == 2 and where(spec.parallel.zero_stage) == ("ds_config.json", 5, 14)
    assert spec.settings["zero_stage"].value == 1  # --zero-stage on the command line, kept as a setting
    assert spec.value("parallel.offload_optimizer") == "cpu"
    assert spec.value("precision.dtype") == "bf16"
    assert spec.value("memory.recompute") == "full"
    assert spec.value("parallel.data") == 4


def test_missing_deepspeed_config():
    result = load("missing_ds.sh")
    assert codes(result) == [("TL013", 3, 36)]


def test_heredoc_deepspeed_config():
    pytest.importorskip("trainlint.adapters.deepspeed.adapter")
    result = load("heredoc.sh")
    spec = result.specs[0]
    assert spec.value("parallel.zero_stage") == 3 and where(spec.parallel.zero_stage) == ("heredoc.sh", 7, 34)
    assert spec.value("cluster.gpus_per_node") == 4  # --include localhost:0,1,2,3


# ------------------------------------------------------------------- argv, YAML, example


def test_argv_list():
    argv = ["torchrun", "--nproc-per-node", "8", "--nnodes", "2", "pretrain_gpt.py", "--num-layers", "4",
            "--hidden-size", "64", "--num-attention-heads", "4", "--tensor-model-parallel-size", "2",
            "--micro-batch-size", "1", "--global-batch-size", "32", "--num-layer", "3"]
    result = load_argv(argv)
    assert codes(result) == [("TL004", 1, 187)]
    spec = result.specs[0]
    assert spec.value("cluster.world_size") == 16 and spec.value("parallel.data") == 8
    assert spec.value("batch.grad_accum") == 4
    assert spec.model.num_layers.provenance.span.column == 69


def test_argv_flags_only():
    result = load_argv(["--num-layers", "x"])
    assert codes(result) == [("TL005", 1, 14)]


def test_yaml_model_args():
    result = load("model_config.yaml")
    assert codes(result) == [("TL007", 5, 33), ("TL006", 16, 20)]
    spec = result.specs[0]
    assert spec.label == "MODEL_ARGS"
    assert spec.parallel.tensor is None  # ${TP}
    assert spec.value("parallel.pipeline") == 2 and where(spec.parallel.pipeline) == ("model_config.yaml", 6, 35)
    assert spec.value("precision.bf16_enabled") is True
    assert spec.value("precision.fp16_enabled") is False  # `--fp16: false` leaves the flag out
    assert spec.precision.fp16_enabled.provenance.origin is Origin.DEFAULT
    assert spec.settings["lr"].value == 1e-4


def test_variables_only_script():
    result = load_text('MODEL_ARGS="--num-layers 36 --hidden-size 4096 --num-attention-heads 32 --swiglu"\n',
                       "conf.sh")
    (spec,) = result.specs
    assert spec.label == "MODEL_ARGS"
    assert spec.value("model.num_layers") == 36 and where(spec.model.num_layers) == ("conf.sh", 1, 26)


def test_example_has_no_errors():
    result = ADAPTER.load(read_source(EXAMPLE), LoadContext())
    assert [d for d in result.diagnostics if d.severity.value != "info"] == []
    (spec,) = result.specs
    assert spec.value("cluster.world_size") == 16
    assert (spec.value("parallel.tensor"), spec.value("parallel.pipeline"), spec.value("parallel.data")) == (2, 2, 4)
    assert spec.value("model.num_kv_heads") == 8 and spec.value("batch.grad_accum") == 32


# ------------------------------------------------------------------------- robustness


@pytest.mark.parametrize("text", [
    "", "((((", "python pretrain_gpt.py --num-layers $((1/0))", "A=(\n", "x=${y:?}", "eval", "source",
    "f() { f; }; f\npython pretrain_gpt.py --num-layers 2", "echo $'\\x'", "cat <<EOF\n$(( \nEOF\n",
    "python pretrain_gpt.py --num-layers ${#A[@]} ${A[-1]} ${B:2:1} ${C/x/y} ${D^^} --seq-length=",
])
def test_garbage_never_raises(text):
    result = load_text(text)
    assert isinstance(result.diagnostics, list)


def test_example_placeholders_are_unknown_not_syntax_errors():
    text = "TP=<Specify TP>\nMBS=<Specify micro batch>\npython pretrain_gpt.py --num-layers 2 --tensor-model-parallel-size $TP --micro-batch-size $MBS --save <Specify path>\n"
    result = load_text(text)
    # Unknown paths (--save) are not reported: nothing trainlint checks depends on them.
    assert codes(result) == [("TL007", 1, 4), ("TL007", 2, 5)]


def test_array_expanded_inside_a_string_assignment_is_joined_with_spaces():
    # TRAINING_CMD="python pretrain_gpt.py ${ARGS[@]} ..." (swiss-ai's submit scripts): one word, the
    # elements joined by spaces, not glued into `--num-layers2--hidden-size64`.
    result = load_text('A=(\n  --num-layers 2\n  --hidden-size 64\n)\nCMD="python pretrain_gpt.py ${A[@]} '
                       '--num-attention-heads 4"\n$CMD\n')
    assert [d for d in result.diagnostics if d.code == "TL004"] == []
    spec = result.specs[0]
    assert (spec.value("model.num_layers"), spec.value("model.hidden_size")) == (2, 64)


def test_typed_fields_for_settings_rules_read() -> None:
    """--deepspeed, a batch ramp-up and --use-checkpoint-args are typed spec fields (what the rules read),
    each pointing at the flag that sets it; a run without them leaves the fields empty."""
    text = ("torchrun pretrain_gpt.py --num-layers 2 --hidden-size 8 --deepspeed "
            "--rampup-batch-size 16 16 1000 --use-checkpoint-args\n")
    spec = load_text(text).specs[0]
    assert spec.engine.deepspeed_flag is not None and spec.engine.deepspeed_flag.value is True
    assert spec.batch.schedule is not None and spec.batch.schedule.provenance.key == "--rampup-batch-size"
    assert spec.batch.schedule.provenance.span.column == text.index("16 16") + 1
    assert spec.run.shape_from_checkpoint is not None and spec.run.shape_from_checkpoint.value is True
    plain = load_text("torchrun pretrain_gpt.py --num-layers 2 --hidden-size 8\n").specs[0]
    assert (plain.engine.deepspeed_flag, plain.batch.schedule, plain.run.shape_from_checkpoint) == (None, None, None)
    assert plain.model.latent_attention is None
    mla = load_text("torchrun pretrain_gpt.py --num-layers 2 --hidden-size 8 --multi-latent-attention\n").specs[0]
    assert mla.model.latent_attention is not None and mla.model.latent_attention.value is True


EVAL_CHAIN = """\
#!/bin/bash
REPO_DIR="/opt/megatron"
ARGS="--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --bogus-flag"
CMD="cd ${REPO_DIR} && pwd && \\
    python -m torch.distributed.run --nproc_per_node 8 --nnodes 1 ENTRY ${ARGS}"
eval $CMD
"""


@pytest.mark.parametrize("entry, expected", [
    # the eval'd chain is split at `&&`: `python -m torch.distributed.run ... pretrain_gpt.py` is a command of its own
    ("pretrain_gpt.py", {("TL004", 3, 67)}),
    # a script that is not an entry point (examples/retro/preprocess_data.sh): read from the variable,
    # the arguments after the script only
    ("tools/retro/preprocess_data.py", {("TL004", 3, 67)}),
])
def test_eval_of_a_command_chain_golden(entry, expected):
    """`eval $CMD` with CMD = `cd $REPO && pwd && python -m torch.distributed.run ... x.py $ARGS`: torchrun's
    options and the chained commands are not read as Megatron arguments; the one unknown flag is still found."""
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_source

    result = check_source(SourceText("eval_chain.sh", EVAL_CHAIN.replace("ENTRY", entry)), builtin_adapters())
    assert {(d.code, d.span.line, d.span.column) for d in result.diagnostics} == expected
    assert result.specs and result.specs[0].model.num_layers.value == 24


def test_a_word_tree_sitter_cuts_after_a_dollar_is_one_word():
    """tree-sitter-bash parses ``$D/$N/ckpt`` as ``$D/$`` + ``N/ckpt`` (no blank between); bash reads
    one word in which ``$N`` expands. Before, the flag got "/data/$" and ``N/ckpt`` was an extra
    argument (TL004 "unexpected argument" where the entry point is known)."""
    result = load_text("D=/data\nN=run1\n"
                       "python pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 \\\n"
                       "  --save $D/$N/ckpt --tensorboard-dir $D/$N-tb --data-path $D/$N.bin --seed 7\n")
    (spec,) = result.specs
    assert spec.settings["save"].value == "/data/run1/ckpt"
    assert spec.settings["tensorboard_dir"].value == "/data/run1-tb"
    assert spec.settings["data_path"].value == ["/data/run1.bin"]
    assert spec.settings["seed"].value == 7
    assert where(spec.settings["save"]) == ("inline.sh", 4, 10)
    assert not [c for c in codes(result) if c[0] == "TL004"]
