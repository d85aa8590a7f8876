"""Findings judged against the fork a config runs with, from facts of its own source (issue 17):
start-up refusals read from the fork's checks, arguments its entry points add, evaluation
placeholders, values known only at launch, conversion tools. Each fork here is a few lines written
for the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron.adapter import MegatronAdapter
from trainlint.frameworks import locate
from trainlint.frameworks.argscan import scan_megatron
from trainlint.sources import SourceText

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
    line = f"torchrun pretrain_gpt.py {BASE_FLAGS} "
    result = load(tmp_path / "train.sh", line + "--checkpoint-activations\n")
    assert found(result, "TL008") == [("TL008", "error", 1, len(line) + 1)]
