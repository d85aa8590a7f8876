"""Findings judged against the fork a config runs with, from facts of its own source (issue 17):
start-up refusals read from the fork's checks, arguments its entry points add, evaluation
placeholders, values known only at launch, conversion tools. Each fork here is a few lines written
for the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron.detect import MegatronAdapter
from trainlint.frameworks import locate
from trainlint.frameworks.argscan import scan_megatron
from trainlint.files.sources import SourceText

MEGATRON = MegatronAdapter()
BASE_FLAGS = ("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
              "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8")


@pytest.fixture(autouse=True)
def _fresh_locator():
    locate.configure({})
    yield
    locate.configure({})


ARGUMENTS = '''
def parse_args(extra_args_provider=None):
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser = _add_args(parser)
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    return parser.parse_args()


def validate_args(args, defaults={{}}):
    {checks}
    return args


def _add_args(parser):
    group = parser.add_argument_group(title='network size')
    group.add_argument('--num-layers', type=int, default=None)
    group.add_argument('--hidden-size', type=int, default=None)
    group.add_argument('--num-attention-heads', type=int, default=None)
    group.add_argument('--seq-length', type=int, default=None)
    group.add_argument('--max-position-embeddings', type=int, default=None)
    group.add_argument('--micro-batch-size', type=int, default=None)
    group.add_argument('--global-batch-size', type=int, default=None)
    group.add_argument('--batch-size', type=int, default=None)
    group.add_argument('--checkpoint-activations', action='store_true')
    group.add_argument('--recompute-activations', action='store_true')
    return parser
'''

KEEPS_STUB = """assert args.batch_size is None, '--batch-size argument is no longer ' \\
        'valid, use --micro-batch-size instead'
    del args.batch_size
    if args.checkpoint_activations:
        print('--checkpoint-activations is no longer valid, use --recompute-activations')
        exit()"""
# A Megatron-DeepSpeed style fork: the refusal of --checkpoint-activations is commented out, and a
# refusal under a condition of its own is not a refusal of every use.
DROPS_STUB = """assert args.batch_size is None, '--batch-size argument is no longer valid'
    # if args.checkpoint_activations:
    #     exit()
    if args.seq_length is not None:
        assert args.checkpoint_activations is None"""


def write_fork(root: Path, checks: str, layout: str = "megatron/arguments.py") -> Path:
    module = root / layout
    module.parent.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)  # the fork's own checkout: the project its configs are judged in
    # a comment with the folder: content of its own, so another test's cached catalog does not answer
    module.write_text(ARGUMENTS.format(checks=checks) + f"# {root}\n")
    (root / "examples").mkdir(exist_ok=True)
    return root


def load(path: Path, text: str):
    path.write_text(text)
    return MEGATRON.load(SourceText(str(path), text), LoadContext())


def found(result, *codes) -> list[tuple[str, str, int, int]]:
    return [(d.code, d.severity.value, d.line, d.column) for d in result.diagnostics if d.code in codes]


# ------------------------------------------------------------------------------ start-up refusals


def test_the_reader_records_what_the_checks_refuse_unconditionally():
    keeps = scan_megatron({"megatron/arguments.py": ARGUMENTS.format(checks=KEEPS_STUB)})
    assert keeps.refused == {"batch_size": "--batch-size argument is no longer valid, use --micro-batch-size instead",
                             "checkpoint_activations": "--checkpoint-activations is no longer valid, use --recompute-activations"}
    drops = scan_megatron({"megatron/arguments.py": ARGUMENTS.format(checks=DROPS_STUB)})
    assert drops.refused == {"batch_size": "--batch-size argument is no longer valid"}


def test_a_flag_the_fork_defines_and_does_not_refuse_is_clean(tmp_path):
    root = write_fork(tmp_path / "ds-fork", DROPS_STUB)
    line = f"deepspeed pretrain_gpt.py {BASE_FLAGS} "
    result = load(root / "examples" / "train.sh", line + "--checkpoint-activations --batch-size 4\n")
    # --checkpoint-activations: the fork defines it and its check is commented out: no finding;
    # --batch-size: the fork's own validate_args refuses it
    assert found(result, "TL004", "TL008") == [("TL008", "error", 1, len(line) + len("--checkpoint-activations ") + 1)]
    d = next(d for d in result.diagnostics if d.code == "TL008")
    assert "ds-fork" in d.message and "no longer valid" in d.message


def test_a_fork_that_keeps_upstreams_refusal_is_an_error(tmp_path):
    root = write_fork(tmp_path / "lm-fork", KEEPS_STUB)
    line = f"torchrun pretrain_gpt.py {BASE_FLAGS} "
    result = load(root / "examples" / "train.sh", line + "--checkpoint-activations\n")
    assert found(result, "TL004", "TL008") == [("TL008", "error", 1, len(line) + 1)]
    d = next(d for d in result.diagnostics if d.code == "TL008")
    assert d.fix == "--recompute-activations"  # the fork defines the replacement


def test_against_assumed_upstream_the_refusal_is_still_reported(tmp_path):
    # as a warning naming the assumption and the release that made the refusal (issue 28)
    line = f"torchrun pretrain_gpt.py {BASE_FLAGS} "
    result = load(tmp_path / "train.sh", line + "--checkpoint-activations\n")
    assert found(result, "TL008") == [("TL008", "warning", 1, len(line) + 1)]
    assert "assumed" in result.diagnostics[0].message and "2022" in result.diagnostics[0].message


# ------------------------------------------------------------------------------ entry points' own arguments


TASKS_MAIN = '''
from megatron.initialize import initialize_megatron


def get_tasks_args(parser):
    group = parser.add_argument_group(title='tasks')
    group.add_argument('--task', type=str, required=True)
    group.add_argument('--qa_data_test', type=str, default=None)
    group.add_argument('--faiss_use_gpu', action='store_true')
    return parser


if __name__ == '__main__':
    initialize_megatron(extra_args_provider=get_tasks_args)
'''


def test_flags_the_entry_point_adds_are_read_from_its_file(tmp_path):
    root = write_fork(tmp_path / "llm-fork", DROPS_STUB)
    (root / "tasks").mkdir()
    (root / "tasks" / "main.py").write_text(TASKS_MAIN)
    line = f"python tasks/main.py {BASE_FLAGS} --task RETRIEVER-EVAL --qa_data_test q.csv --faiss_use_gpu "
    result = load(root / "examples" / "evaluate.sh", line + "--no_such_flag\n")
    # its own flags are known; a flag neither the fork nor the entry point defines makes argparse exit
    assert found(result, "TL004") == [("TL004", "error", 1, len(line) + 1)]
    d = next(d for d in result.diagnostics if d.code == "TL004")
    assert "tasks/main.py" in d.message and "read from it" in d.message


def test_an_entry_point_that_imports_its_provider_leaves_unknown_names_warnings(tmp_path):
    root = write_fork(tmp_path / "llm-fork", DROPS_STUB)
    (root / "tasks").mkdir()
    (root / "tasks" / "main.py").write_text(TASKS_MAIN.replace("extra_args_provider=get_tasks_args",
                                                               "extra_args_provider=imported_args"))
    line = f"python tasks/main.py {BASE_FLAGS} --qa_data_test q.csv "
    result = load(root / "examples" / "evaluate.sh", line + "--train_hard_neg\n")
    assert found(result, "TL004") == [("TL004", "warning", 1, len(line) + 1)]
    assert "may add it" in next(d for d in result.diagnostics if d.code == "TL004").message


def test_an_entry_point_that_is_not_in_the_tree_is_not_read(tmp_path):
    root = write_fork(tmp_path / "llm-fork", DROPS_STUB)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "main.py").write_text(TASKS_MAIN)
    line = f"python ../../elsewhere/main.py {BASE_FLAGS} "
    result = load(root / "examples" / "evaluate.sh", line + "--qa_data_test q.csv\n")
    assert found(result, "TL004") == [("TL004", "warning", 1, len(line) + 1)]


# ------------------------------------------------------------------------------ shapes not built from the flags


def test_evaluation_placeholders_are_not_size_errors(tmp_path):
    """Megatron-DeepSpeed's eval harness takes the model's arguments from the checkpoint: its
    scripts pass -1 for the sizes argparse requires."""
    placeholders = "--num-layers -1 --hidden-size -1 --num-attention-heads -1 --seq-length -1 --max-position-embeddings -1"
    evaluate = load(tmp_path / "eval.sh", f"deepspeed tasks/eval_harness/evaluate.py --micro-batch-size 4 {placeholders}\n")
    assert found(evaluate, "TL005", "TL006") == []
    from_checkpoint = load(tmp_path / "gen.sh", f"torchrun pretrain_gpt.py --use-checkpoint-args {placeholders}\n")
    assert found(from_checkpoint, "TL006") == []
    line = "torchrun pretrain_gpt.py --micro-batch-size 4 "
    train = load(tmp_path / "train.sh", line + "--num-layers -1\n")
    assert found(train, "TL006") == [("TL006", "error", 1, len(line) + len("--num-layers ") + 1)]



# ------------------------------------------------------------------------------ values known only at launch


def test_a_here_document_config_with_launch_time_values_is_not_a_type_error(tmp_path):
    script = (
        "ZERO_STAGE=$2\n"
        "cat <<EOT > ds.json\n"
        "{\n"
        '  "train_batch_size": $((MICRO_BATCH_SIZE * GAS * WORLD_SIZE)),\n'
        '  "train_micro_batch_size_per_gpu": 1,\n'
        '  "zero_optimization": {"stage": $ZERO_STAGE}\n'
        "}\n"
        "EOT\n"
        f"deepspeed pretrain_gpt.py {BASE_FLAGS} --deepspeed --deepspeed_config ds.json\n")
    result = load(tmp_path / "run.sh", script)
    assert found(result, "TL005", "TL006") == []
    assert [(line, col) for code, _s, line, col in found(result, "TL007") if line in (4, 6)] == [(4, 23), (6, 34)]


# ------------------------------------------------------------------------------ performance verdicts on assumed hardware


NETWORK_BOUND = ("#!/bin/bash\ntorchrun --nnodes 16 --nproc_per_node 8 pretrain_gpt.py \\\n"
                 "    --num-layers 2 --hidden-size 8192 --num-attention-heads 64 \\\n"
                 "    --seq-length 1024 --max-position-embeddings 1024 \\\n"
                 "    --micro-batch-size 1 --global-batch-size 128 --bf16 --use-flash-attn\n")


def _tl401(path: Path, capsys, *args: str) -> list[tuple[str, int, int, str]]:
    import json

    from trainlint.cli import main

    main(["check", "--isolated", "--exit-zero", "--format", "json", "--select", "TL401", *args, str(path)])
    files = json.loads(capsys.readouterr().out)["files"]
    return [(d["severity"], d["line"], d["column"], d["message"]) for f in files for d in f["diagnostics"]]


def test_network_bound_is_an_error_only_on_a_named_gpu(tmp_path, capsys):
    """DP traffic alone longer than compute: an error on the GPU the user names; against the
    assumed GPU (and its reference network) a warning that says so, as TL201 does."""
    script = tmp_path / "train.sh"
    script.write_text(NETWORK_BOUND)
    [(severity, line, column, message)] = _tl401(script, capsys)
    assert (severity, line, column) == ("warning", 5, 46) and "assumed, not given" in message
    [(severity, line, column, message)] = _tl401(script, capsys, "--gpu", "h100-sxm")
    assert (severity, line, column) == ("error", 5, 46) and "assumed" not in message


# ------------------------------------------------------------------------------ the script's own option parsing


OPTION_LOOP = """USE_DEEPSPEED=1
ZERO_STAGE=0
while [[ $# -gt 0 ]]
do
key="$1"
case $key in
    --no-deepspeed)
    USE_DEEPSPEED=0;
    shift
    ;;
    -z|--zero-stage)
    ZERO_STAGE=$2;
    shift
    ;;
esac
done
options="{flags}"
if [[ ${{USE_DEEPSPEED}} -eq 1 ]]; then
    options="${{options}} --deepspeed --zero-stage=${{ZERO_STAGE}}"
fi
deepspeed pretrain_gpt.py ${{options}}
"""


def test_options_the_script_parses_from_its_arguments_keep_its_defaults(tmp_path):
    result = load(tmp_path / "run.sh", OPTION_LOOP.format(flags=BASE_FLAGS))
    assert found(result, "TL012", "TL007") == []
    [spec] = result.specs
    assert spec.settings["deepspeed"].value is True and spec.settings["zero_stage"].value == 0


# ------------------------------------------------------------------------------ list-typed flags


def test_a_config_class_list_field_is_a_flag_taking_several_values():
    """ArgumentGroupFactory turns ``list[int]`` (Optional or not) into ``nargs="+", type=int``."""
    source = '''
from dataclasses import dataclass
from typing import Optional


@dataclass
class ParallelConfig:
    hierarchical_context_parallel_sizes: Optional[list[int]] = None
    names: list[str] | None = None
    context_parallel_size: int = 1


def _add_parallel_args(parser):
    ArgumentGroupFactory(ParallelConfig).build_group(parser)
'''
    scan = scan_megatron({"megatron/training/arguments.py": source})
    sizes = scan.args["--hierarchical-context-parallel-sizes"]
    assert (sizes.type, sizes.nargs) == ("int", "+")
    assert (scan.args["--names"].type, scan.args["--names"].nargs) == ("str", "+")
    assert scan.args["--context-parallel-size"].nargs is None


def test_a_single_value_where_a_rule_expects_a_list_is_not_an_internal_error(tmp_path, capsys):
    """A fork that takes the sizes as one int: TL153 judges the one size instead of failing."""
    import json

    from trainlint.cli import main

    root = write_fork(tmp_path / "cp-fork", DROPS_STUB)
    module = root / "megatron" / "arguments.py"
    module.write_text(module.read_text() + "\n\ndef _more(parser):\n"
                      "    parser.add_argument('--context-parallel-size', type=int, default=1)\n"
                      "    parser.add_argument('--cp-comm-type', type=str, default='p2p')\n"
                      "    parser.add_argument('--hierarchical-context-parallel-sizes', type=int, default=None)\n")
    line = f"torchrun pretrain_gpt.py {BASE_FLAGS} --context-parallel-size 4 --cp-comm-type a2a+p2p "
    script = root / "examples" / "train.sh"
    script.write_text(line + "--hierarchical-context-parallel-sizes 2\n")
    main(["check", "--isolated", "--exit-zero", "--format", "json", str(script)])
    diags = [(d["code"], d["line"], d["column"]) for f in json.loads(capsys.readouterr().out)["files"]
             for d in f["diagnostics"] if d["code"] in ("TL153", "TL998")]
    assert diags == [("TL153", 1, len(line) + len("--hierarchical-context-parallel-sizes ") + 1)]


UNDERSCORE_FORK = '''
def parse_args(extra_args_provider=None):
    parser = argparse.ArgumentParser(allow_abbrev=False)
    group = parser.add_argument_group(title='training')
    group.add_argument('--num_layers', type=int, default=None)
    group.add_argument('--hidden_size', type=int, default=None)
    group.add_argument('--num_attention_heads', type=int, default=None)
    group.add_argument('--micro_batch_size', type=int, default=None)
    group.add_argument('--mem_batch_size', type=int, default=None)
    return parser.parse_args()
'''


def test_a_name_upstream_renamed_is_suggested_as_the_fork_spells_the_new_name(tmp_path):
    # epfLLM-style fork (underscore flags): `--batch_size` is upstream's old `--batch-size`, now
    # `--micro-batch-size`; the closer string `--mem_batch_size` is not what the author meant
    module = tmp_path / "us-fork" / "megatron" / "arguments.py"
    module.parent.mkdir(parents=True)
    module.write_text(UNDERSCORE_FORK + f"# {tmp_path}\n")
    (tmp_path / "us-fork" / ".git").mkdir()
    (tmp_path / "us-fork" / "examples").mkdir()
    result = load(tmp_path / "us-fork" / "examples" / "train.sh",
                  "torchrun pretrain_gpt.py --num_layers 2 --hidden_size 64 --num_attention_heads 4 --batch_size 8\n")
    (d,) = [d for d in result.diagnostics if d.code == "TL004"]
    assert d.fix == "--micro_batch_size" and "did you mean `--micro_batch_size`" in d.message
