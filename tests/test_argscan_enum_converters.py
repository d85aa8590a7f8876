"""Choices of flags whose ``type=`` converts to an enum through a function or a conditional lambda,
as Megatron-LM's ``--cuda-graph-scope`` (core_v0.16.0-0.17.0: ``lambda scope: CudaGraphScope[scope] if
scope != "full" else scope``) and ``--cuda-graph-modules`` (core_v0.18.0 on: ``_parse_cuda_graph_modules_arg``)
do: the enum's member names plus the literals the converter passes through (issue 34)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron.detect import MegatronAdapter
from trainlint.frameworks import locate
from trainlint.frameworks.argscan import scan_megatron
from trainlint.files.sources import SourceText

ENUMS = textwrap.dedent('''
    import enum
    class CudaGraphModule(enum.Enum):
        attn = 1
        mlp = 2
        moe = 3
''')

ARGUMENTS = textwrap.dedent('''
    from megatron.core.transformer.enums import CudaGraphModule
    def _parse_modules(scope):
        """Deprecated spellings pass through."""
        if scope in {"full", "full_iteration"}:
            return scope
        return CudaGraphModule[scope]
    def _lenient(scope):
        if scope not in {"full"}:
            return scope
        return CudaGraphModule[scope]
    def _add_args(parser):
        group = parser.add_argument_group(title='x')
        group.add_argument('--num-layers', type=int, default=None)
        group.add_argument('--hidden-size', type=int, default=None)
        group.add_argument('--num-attention-heads', type=int, default=None)
        group.add_argument('--seq-length', type=int, default=None)
        group.add_argument('--max-position-embeddings', type=int, default=None)
        group.add_argument('--micro-batch-size', type=int, default=None)
        group.add_argument('--cuda-graph-scope', nargs='+',
                           type=lambda scope: CudaGraphModule[scope] if scope != "full" else scope, default=[])
        group.add_argument('--cuda-graph-modules', nargs='+', type=_parse_modules, default=[])
        group.add_argument('--inverted', type=lambda scope: scope if scope != "full" else CudaGraphModule[scope])
        group.add_argument('--lenient', type=_lenient)
        return parser
''')


def _scan():
    return scan_megatron({"megatron/training/arguments.py": ARGUMENTS}, {"megatron/core/transformer/enums.py": ENUMS})


def test_a_conditional_lambda_gives_the_enum_names_and_the_value_it_passes_through():
    assert _scan().args["--cuda-graph-scope"].choices == ("attn", "mlp", "moe", "full")


def test_a_converter_function_gives_the_enum_names_and_its_pass_through_literals():
    assert _scan().args["--cuda-graph-modules"].choices == ("attn", "mlp", "moe", "full", "full_iteration")


def test_a_converter_that_passes_any_other_value_through_gives_no_choices():
    scan = _scan()
    assert scan.args["--inverted"].choices is None  # every value but "full" is kept as typed
    assert scan.args["--lenient"].choices is None


def test_an_invalid_module_is_refused_against_the_source_beside_the_config(tmp_path: Path):
    root = tmp_path / "Megatron-LM"
    for rel, text in (("megatron/training/arguments.py", ARGUMENTS), ("megatron/core/transformer/enums.py", ENUMS)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "examples").mkdir()
    (root / ".git").mkdir()  # the checkout is the project root, so the script's walk up finds its source
    locate._memo.clear()
    script = root / "examples" / "train.sh"
    base = ("torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
            "--max-position-embeddings 128 --micro-batch-size 1 ")

    def invalid(extra: str) -> list[str]:
        text = base + extra + "\n"
        script.write_text(text)
        result = MegatronAdapter().load(SourceText(str(script), text), LoadContext())
        assert result.specs[0].target.path == str(root)  # judged against this checkout, not upstream's table
        return [d.message for d in result.diagnostics if d.code == "TL006"]

    assert invalid("--cuda-graph-modules attn mlp --cuda-graph-scope full") == []
    assert len(invalid("--cuda-graph-modules attention")) == 1
    assert len(invalid("--cuda-graph-scope attn everything")) == 1
