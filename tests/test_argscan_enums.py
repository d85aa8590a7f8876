"""Choices a flag takes from an enum, read statically from the framework source (issue 34: an
invalid value of an enum-typed option passed unnoticed when the framework source was present)."""

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
    class AttnBackend(enum.Enum):
        flash = 1
        fused = 2
        auto = 5
    class InferenceCudaGraphScope(enum.Enum):
        none = "none"
        layer = "layer"
        block = "block"
    class Fp8Recipe(str, enum.Enum):
        delayed = "delayed"
        mxfp8 = "mxfp8"
''')

ARGUMENTS = textwrap.dedent('''
    from megatron.core.transformer.enums import AttnBackend, Fp8Recipe
    from megatron.core.transformer.transformer_config import TransformerConfig
    def _add_args(parser):
        group = parser.add_argument_group(title='x')
        group.add_argument('--num-layers', type=int, default=None)
        group.add_argument('--hidden-size', type=int, default=None)
        group.add_argument('--num-attention-heads', type=int, default=None)
        group.add_argument('--seq-length', type=int, default=None)
        group.add_argument('--max-position-embeddings', type=int, default=None)
        group.add_argument('--micro-batch-size', type=int, default=None)
        group.add_argument('--attention-backend', type=lambda x: AttnBackend[x], choices=list(AttnBackend),
                           default=AttnBackend.auto)
        group.add_argument('--fp8-recipe', default='delayed', choices=[r.value for r in Fp8Recipe])
        ArgumentGroupFactory(TransformerConfig).build_group(parser, "transformer")
        return parser
''')

CONFIG = textwrap.dedent('''
    from dataclasses import dataclass, field
    from typing import Optional
    from megatron.core.transformer.enums import InferenceCudaGraphScope, AttnBackend
    @dataclass
    class TransformerConfig:
        inference_cuda_graph_scope: Optional[InferenceCudaGraphScope] = field(
            default=None,
            metadata={"argparse_meta": {"type": str, "choices": [s.name for s in InferenceCudaGraphScope]}},
        )
        decode_backend: AttnBackend = AttnBackend.auto
''')


def test_enum_choices_are_read_from_comprehensions_list_calls_and_annotations():
    scan = scan_megatron({"megatron/training/arguments.py": ARGUMENTS},
                         {"megatron/core/transformer/enums.py": ENUMS,
                          "megatron/core/transformer/transformer_config.py": CONFIG})
    assert scan.args["--attention-backend"].choices == ("flash", "fused", "auto")
    assert scan.args["--fp8-recipe"].choices == ("delayed", "mxfp8")
    assert scan.args["--inference-cuda-graph-scope"].choices == ("none", "layer", "block")
    assert scan.args["--decode-backend"].choices == ("flash", "fused", "auto")
    assert scan.args["--num-layers"].choices is None


def test_an_enum_the_source_does_not_define_gives_no_choices():
    scan = scan_megatron({"megatron/training/arguments.py": ARGUMENTS})  # enums.py not read
    assert scan.args["--attention-backend"].choices is None
    assert scan.args["--fp8-recipe"].choices is None


def _checkout(root: Path) -> Path:
    for rel, text in (("megatron/training/arguments.py", ARGUMENTS),
                      ("megatron/core/transformer/enums.py", ENUMS),
                      ("megatron/core/transformer/transformer_config.py", CONFIG)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "examples").mkdir()
    return root


def test_an_enum_only_add_argument_uses_is_read_from_its_module(tmp_path):
    root = _checkout(tmp_path / "Megatron-LM")
    (root / "megatron/core/transformer/transformer_config.py").write_text(
        "from dataclasses import dataclass\n@dataclass\nclass TransformerConfig:\n    num_layers: int = 1\n")
    from trainlint.frameworks.catalog import read_checkout

    catalog = read_checkout(root, "megatron", use_cache=False)
    assert catalog is not None
    assert catalog.args["--attention-backend"].choices == ("flash", "fused", "auto")


def test_an_invalid_enum_value_is_refused_against_the_source_beside_the_config(tmp_path):
    root = _checkout(tmp_path / "Megatron-LM")
    locate._memo.clear()
    base = ("torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
            "--max-position-embeddings 128 --micro-batch-size 1 ")
    script = root / "examples" / "train.sh"

    def invalid(extra: str) -> list[str]:
        text = base + extra + "\n"
        script.write_text(text)
        diags = MegatronAdapter().load(SourceText(str(script), text), LoadContext()).diagnostics
        return [d.message for d in diags if d.code == "TL006"]

    assert invalid("--attention-backend flash --inference-cuda-graph-scope layer --fp8-recipe mxfp8") == []
    bad = invalid("--attention-backend flashattn")
    assert len(bad) == 1 and "flash" in bad[0] and "fused" in bad[0]
    assert len(invalid("--inference-cuda-graph-scope everything")) == 1
    assert len(invalid("--fp8-recipe hybrid")) == 1
